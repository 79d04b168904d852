"""The batched scripts of a relaunch (one SSH session each) and the readers of their records.

evidence: sweep_core/programs/relaunch_evidence.sh: ONE ``squeue -O`` listing for the logs, per job
          ``scontrol show job -o`` (Requeue, Restarts, NodeList), the log's mtime and bounded tail.
requeue : sweep_core/programs/relaunch_requeue.sh: re-check in the same script (ONE squeue: RUNNING,
          same name), the checkpoint signal + grace, ``scontrol update Requeue=1`` where allowed,
          ``scontrol requeue <id>`` (array tasks by task id) or scancel + the ops.md command.
Every value is shlex-quoted into the script's header; ids and names are checked first, and an
ops.md relaunch command is filled only for a plain job name (sweep_core.safe.names).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweep_core.handoffs.batch_job.plan import last_job_id
from sweep_core.handoffs.cancel.fresh import Evidence, last_step, stat_pair
from sweep_core.handoffs.cancel.outcome import Act, ActOutcome, Did, left_alone, not_done
from sweep_core.handoffs.cancel.overrides import ELEMENT, parse_overrides, takes_overrides
from sweep_core.handoffs.cancel.plan import check_slurm_job
from sweep_core.handoffs.cancel.recheck import guard_values
from sweep_core.safe.names import check_plain_name
from sweep_core.slurm.gather import GatherOutput, paths_format
from sweep_core.slurm.parse import SlurmOutputError, parse_scontrol_job
from sweep_core.slurm.remote_scripts import compose

SIGNAL_RE = re.compile(r"^(|[A-Z][A-Z0-9+]{1,10}|\d{1,2})$")
HOSTLIST_RE = re.compile(r"^[A-Za-z0-9._,\[\]-]{0,1024}$")  # an ExcNodeList value (names, ranges)


def build_evidence_script(user: str, ids: list[str], marker: str, tail_bytes: int) -> str:
    """One session: now, the logs' listing, and per job ``job:<k>``, ``mtime:<k>`` ("<mtime> <size>"),
    ``path:<k>`` and ``tail:<k>``."""
    if not user:
        raise ValueError("user is required")
    for i in ids:
        check_slurm_job(i, "x")
    values = {"U": user, "IDS": ids, "TAIL_BYTES": int(tail_bytes), "PATHS_FORMAT": paths_format(marker)}
    return compose(marker, values, ("log_helpers.sh", "relaunch_evidence.sh"))


def read_evidence(out: GatherOutput | None, jobs: list[tuple[str, str]], step_patterns: Any) -> dict[str, Evidence]:
    """Job id -> its evidence (``problem`` says what is missing) from the evidence script's records."""
    now_rec = out.get("now") if out else None
    now = int(now_rec.stdout.strip()) if now_rec and now_rec.stdout.strip().isdigit() else None
    found: dict[str, Evidence] = {}
    for k, (job_id, name) in enumerate(jobs):
        if out is None:
            found[job_id] = Evidence(job_id, name, problem="not read: cluster not reached")
            continue
        rec, mt, tl = out.get(f"job:{k}"), out.get(f"mtime:{k}"), out.get(f"tail:{k}")
        info: dict[str, str] = {}
        problems = []
        if rec is None or rec.rc != 0:
            problems.append(f"scontrol: {(rec.stderr if rec else 'no record').strip()[:160]}")
        else:
            try:
                info = parse_scontrol_job(rec.stdout)
            except SlurmOutputError as exc:
                problems.append(str(exc)[:160])
        mtime, size = stat_pair(mt.stdout if mt and mt.rc == 0 else "")
        path = out.get(f"path:{k}")
        tail = tl.stdout if tl and tl.rc == 0 else ""
        if tl is None:
            problems.append("log not read (no StdOut listed, or not a regular file)")
        found[job_id] = Evidence(
            job_id,
            name,
            remote_now=now,
            state=info.get("JobState", ""),
            requeue=info.get("Requeue", ""),
            restarts=info.get("Restarts", ""),
            nodelist=info.get("NodeList", ""),
            exc_nodes=info.get("ExcNodeList", ""),
            last_output=mtime,
            size=size,
            log_path=path.stdout if path is not None and mtime is not None else "",
            step=last_step(tail, step_patterns),
            tail=tail,
            problem="; ".join(problems),
        )
    return found


def command_argv(argv: Sequence[str], values: Mapping[str, str], overrides: Sequence[str] = ()) -> tuple[str, ...]:
    """An ops.md ``relaunch_commands`` argv with its placeholders filled (checked at load time by
    the schema), its ``{overrides}`` element replaced by the overrides, each validated again
    (handoffs.cancel.overrides); ValueError, nothing filled, when the job's name is not a plain
    name (a name never reaches a command that a template might hand to a shell) or an override is
    not plain ``key=value``, or overrides are given to a command without ``{overrides}``."""
    check_plain_name(values.get("name", ""), "job name")
    if overrides:
        overrides = parse_overrides(" ".join(overrides))
        if not takes_overrides(argv):
            raise ValueError(
                "the ops.md relaunch command for it has no {overrides} element: the setting cannot be passed"
            )
    out: list[str] = []
    for a in argv:
        out += list(overrides) if a == ELEMENT else [a.format(**{**values, "overrides": ""})]
    return tuple(out)


@dataclass(frozen=True)
class RelaunchJob:
    """An approved (or standing-permitted) relaunch, as the requeue script gets it."""

    job_id: str
    name: str
    signal: str = ""
    grace_s: int = 0
    set_requeue: bool = False
    command: tuple[str, ...] = ()  # ops.md relaunch argv, templates filled; () = scontrol requeue
    exclude: str = ""  # the whole ExcNodeList set once it is PENDING again ("" = unchanged)
    bad: tuple[str, ...] = ()  # the bad nodes alone (added to the series' PENDING jobs)
    pending: tuple[tuple[str, str], ...] = ()  # (id, name) of PENDING jobs of its series
    bad_note: str = ""  # what the log said of bad nodes (reported)

    def __post_init__(self) -> None:
        check_slurm_job(self.job_id, self.name)
        if self.command:
            check_plain_name(self.name, "job name")
        if not SIGNAL_RE.match(self.signal):
            raise ValueError(f"signal {self.signal!r} is not a signal name or number")
        for v in (self.exclude, *self.bad):
            if not HOSTLIST_RE.match(v):
                raise ValueError(f"node list {v[:60]!r} is not node names")
        for i, n in self.pending:
            check_slurm_job(i, n)

    def command_line(self) -> str:
        """The ops.md command with every value shell-quoted ('' = none)."""
        return " ".join(shlex.quote(a) for a in self.command)


def build_requeue_script(
    user: str,
    jobs: list[RelaunchJob],
    marker: str,
    confirm_timeout_s: int,
    judged: Sequence[Mapping[str, Any]] = (),
    tail_bytes: int = 4096,
) -> str:
    """Re-check + relaunch each job (record ``relaunch:<k>``), then ``after:<k>`` per job. ``judged``:
    per job the evidence saved before (an Evidence as a dict): a job whose log moved since is left
    alone (record rc 3; handoffs.cancel.fresh)."""

    if not user:
        raise ValueError("user is required")
    values = {
        "U": user,
        "IDS": [j.job_id for j in jobs],
        "NAMES": [j.name for j in jobs],
        "SIGNALS": [j.signal for j in jobs],
        "GRACES": [str(int(j.grace_s)) for j in jobs],
        "SETREQ": ["1" if j.set_requeue else "0" for j in jobs],
        "CMDS": [j.command_line() for j in jobs],
        "EXCL": [j.exclude if not j.command else "" for j in jobs],
        "BAD": [",".join(j.bad) for j in jobs],
        "PEND_IDS": [i for j in jobs for i, _ in j.pending],
        "PEND_NAMES": [n for j in jobs for _, n in j.pending],
        "PEND_OWNER": [str(k) for k, j in enumerate(jobs) for _ in j.pending],
        "CONFIRM_TIMEOUT_S": int(confirm_timeout_s),
        **guard_values([(j.job_id, ev) for j, ev in zip(jobs, judged or [{}] * len(jobs), strict=True)], tail_bytes),
    }
    return compose(marker, values, ("recheck.sh", "relaunch_requeue.sh"), act=True)


def requeue_line(user: str, j: RelaunchJob) -> str:
    """What a dry run prints (the script runs the same, after its re-check)."""
    q = shlex.quote
    lines = []
    if j.signal:
        lines.append(
            f"scancel --signal={j.signal} --batch -u {q(user)} -n {q(j.name)} -- {j.job_id}; sleep {j.grace_s}"
        )
    if j.command:
        lines += [f"scancel -u {q(user)} -n {q(j.name)} -- {j.job_id}", j.command_line()]
    else:
        if j.set_requeue:
            lines.append(f"scontrol update JobId={j.job_id} Requeue=1")
        lines.append(f"scontrol requeue {j.job_id}")
        if j.exclude:
            lines.append(f"scontrol update JobId={j.job_id} ExcNodeList={q(j.exclude)}")
        lines += [f"scontrol update JobId={i} ExcNodeList=<its own>,{q(','.join(j.bad))}" for i, _ in j.pending]
    return "; ".join(lines)


def _exclusion(out: GatherOutput | None, j: RelaunchJob, k: int, first: int) -> str:
    """What the requeue did about bad nodes: the job's ExcNodeList, each PENDING job of its series."""
    if not j.bad and not j.bad_note:
        return ""
    if not j.bad:
        return f"; {j.bad_note}"
    rec = out.get(f"exclude:{k}") if out else None
    if j.command:
        ok = (out.get(f"relaunch:{k}") if out else None) is not None
        told = f"; {j.bad_note}: " + ("given to the ops.md command as {exclude}" if ok else "not relaunched")
    elif rec is None:
        told = f"; {j.bad_note}: not excluded (not requeued)"
    elif rec.rc == 0:
        told = f"; {j.bad_note}: excluded (ExcNodeList={j.exclude})"
    else:
        told = f"; {j.bad_note}: exclusion FAILED: {(rec.stdout + rec.stderr).strip()[:160]}"
    done, other = [], []
    for n, (pid, _) in enumerate(j.pending):
        p = out.get(f"pexclude:{first + n}") if out else None
        if p is not None and p.rc == 0:
            done.append(pid)
        else:
            why = (p.stdout + p.stderr).strip()[:80] if p is not None else "not run"
            other.append(f"{pid} ({why})")
    if done:
        told += f"; PENDING {', '.join(done)} of its series exclude {','.join(j.bad)} too"
    if other:
        told += f"; not excluded: {'; '.join(other)}"
    return told


def read_requeue(out: GatherOutput | None, jobs: list[RelaunchJob], problem: str) -> dict[str, ActOutcome]:
    """Job id -> the outcome: REQUEUED only when scontrol then shows it not RUNNING with more Restarts."""
    res: dict[str, ActOutcome] = {}
    firsts = [sum(len(x.pending) for x in jobs[:k]) for k in range(len(jobs))]
    for k, j in enumerate(jobs):
        res[j.job_id] = _one(out, j, k, problem).with_text(_exclusion(out, j, k, firsts[k]))
    return res


def _one(out: GatherOutput | None, j: RelaunchJob, k: int, problem: str) -> ActOutcome:
    """One job's relaunch outcome (REQUEUED only when scontrol shows it so)."""
    rec = out.get(f"relaunch:{k}") if out else None
    if rec is None:
        setreq = out.get(f"setreq:{k}") if out else None
        if setreq is not None and setreq.rc != 0:
            return _did(Did.REFUSED, f"Requeue=1 refused: {(setreq.stdout + setreq.stderr).strip()[:200]}")
        return not_done(problem, Act.RELAUNCH)
    text = (rec.stdout + rec.stderr).strip()
    if rec.rc == 2:
        return _did(Did.REFUSED, f"refused before relaunch: {text[:200]}")
    if rec.rc == 3:
        return left_alone(text[:200], Act.RELAUNCH)
    cancelled = out.get(f"scancel:{k}") if out and j.command else None
    if rec.rc != 0 and cancelled is not None and cancelled.rc == 0:
        failed = "cancelled; the ops.md relaunch command failed after the cancel"
        return _did(Did.COMMAND_FAILED, f"{failed} (exit {rec.rc}): {text[:200]}")
    if rec.rc != 0:
        return _did(Did.FAILED, f"relaunch failed (exit {rec.rc}): {text[:200]}")
    if j.command:
        new_id = last_job_id(rec.stdout)  # the batch-job machine reads what sbatch printed
        said = "cancelled and relaunched by the ops.md command"
        if new_id:
            return ActOutcome(
                Did.RELAUNCHED, f"{said} as job {new_id}{_holding(out, j.job_id, True)}", Act.RELAUNCH, new_id
            )
        return _did(Did.RELAUNCHED, f"{said} (no new job id in its output): {text[:120]}")
    after = out.get(f"after:{k}") if out else None
    info = {}
    if after is not None and after.rc == 0:
        try:
            info = parse_scontrol_job(after.stdout)
        except SlurmOutputError:
            info = {}
    state, restarts, begin = info.get("JobState", "?"), info.get("Restarts", "?"), info.get("StartTime", "?")
    said = f"requeued ({state}, Restarts={restarts}, starts again ~{begin}){_holding(out, j.job_id, False)}"
    return _did(Did.REQUEUED, said)


def _did(did: Did, text: str) -> ActOutcome:
    return ActOutcome(did, text, Act.RELAUNCH)


def successors(out: GatherOutput | None, job_id: str) -> list[str]:
    """PENDING jobs whose dependency names ``job_id`` (record ``deps``: ``<id> M <%E> M`` lines)."""
    rec = out.get("deps") if out else None
    if rec is None or rec.rc != 0:
        return []
    names = re.compile(rf"(?:^|[:,?]){re.escape(job_id)}(?:[(,:?+]|$)")
    found = []
    for line in rec.stdout.splitlines():
        parts = line.split(out.marker) if out and out.marker else []
        if len(parts) >= 2 and names.search(parts[1]) and parts[0] != job_id:
            found.append(parts[0])
    return found


def _holding(out: GatherOutput | None, job_id: str, new_id: bool) -> str:
    succ = successors(out, job_id)
    if not succ:
        return ""
    if new_id:
        return (
            f"; successor(s) {', '.join(succ[:10])} depend on the OLD id {job_id}: their dependency is "
            "never met now, re-point them to the new job"
        )
    return f"; holds its chain: successor(s) {', '.join(succ[:10])} wait on it (dependency) until it ends again"
