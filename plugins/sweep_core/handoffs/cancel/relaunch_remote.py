"""The batched scripts of a relaunch (one SSH session each) and the readers of their records.

evidence: include/remote/relaunch_evidence.sh: ONE ``squeue -O`` listing for the logs, per job
          ``scontrol show job -o`` (Requeue, Restarts, NodeList), the log's mtime and bounded tail.
requeue : include/remote/relaunch_requeue.sh: re-check in the same script (ONE squeue: RUNNING,
          same name), the checkpoint signal + grace, ``scontrol update Requeue=1`` where allowed,
          ``scontrol requeue <id>`` (array tasks by task id) or scancel + the ops.md command.
Every value is shlex-quoted into the script's header; ids and names are checked first.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import asdict, dataclass
from typing import Any

from sweep_core.handoffs.cancel.plan import check_slurm_job as _check
from sweep_core.slurm.gather import GatherOutput, paths_format
from sweep_core.slurm.parse import SlurmOutputError, parse_scontrol_job
from sweep_core.slurm.remote_scripts import compose

SIGNAL_RE = re.compile(r"^(|[A-Z][A-Z0-9+]{1,10}|\d{1,2})$")


@dataclass(frozen=True)
class Evidence:
    """A wedged job as read right before it is relaunched (the requeue truncates its log)."""

    job_id: str
    name: str
    remote_now: int | None = None
    state: str = ""
    requeue: str = ""  # scontrol Requeue: "1" may be requeued, "0" not
    restarts: str = ""
    nodelist: str = ""
    last_output: int | None = None  # log mtime, remote epoch seconds
    step: int | None = None
    tail: str = ""
    problem: str = ""  # what could not be read

    @property
    def silent_s(self) -> int | None:
        if self.remote_now is None or self.last_output is None:
            return None
        return max(0, self.remote_now - self.last_output)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        return cls(**data)


def build_evidence_script(user: str, ids: list[str], marker: str, tail_bytes: int) -> str:
    """One session: now, the logs' listing, and per job ``job:<k>``, ``mtime:<k>``, ``tail:<k>``."""
    if not user:
        raise ValueError("user is required")
    for i in ids:
        _check(i, "x")
    values = {"U": user, "IDS": ids, "TAIL_BYTES": int(tail_bytes), "PATHS_FORMAT": paths_format(marker)}
    return compose(marker, values, ("log_helpers.sh", "relaunch_evidence.sh"))


def last_step(tail: str, patterns: Any) -> int | None:
    """The last step any of ``patterns`` (regexes, text or compiled; group 1) reads in ``tail``."""
    best: tuple[int, int] | None = None
    for p in patterns:
        for m in (re.compile(p) if isinstance(p, str) else p).finditer(tail):
            try:
                value = int(m.group(1).replace(",", ""))
            except (IndexError, ValueError):
                continue
            if best is None or m.end() >= best[0]:
                best = (m.end(), value)
    return best[1] if best else None


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
        mtime = int(mt.stdout.strip()) if mt and mt.rc == 0 and mt.stdout.strip().isdigit() else None
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
            last_output=mtime,
            step=last_step(tail, step_patterns),
            tail=tail,
            problem="; ".join(problems),
        )
    return found


@dataclass(frozen=True)
class RelaunchJob:
    """An approved (or standing-permitted) relaunch, as the requeue script gets it."""

    job_id: str
    name: str
    signal: str = ""
    grace_s: int = 0
    set_requeue: bool = False
    command: tuple[str, ...] = ()  # ops.md relaunch argv, templates filled; () = scontrol requeue

    def __post_init__(self) -> None:
        _check(self.job_id, self.name)
        if not SIGNAL_RE.match(self.signal):
            raise ValueError(f"signal {self.signal!r} is not a signal name or number")

    def command_line(self) -> str:
        """The ops.md command with every value shell-quoted ('' = none)."""
        return " ".join(shlex.quote(a) for a in self.command)


def build_requeue_script(user: str, jobs: list[RelaunchJob], marker: str, confirm_timeout_s: int) -> str:
    """Re-check + relaunch each job (record ``relaunch:<k>``), then ``after:<k>`` per job."""
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
        "CONFIRM_TIMEOUT_S": int(confirm_timeout_s),
    }
    return compose(marker, values, ("recheck.sh", "relaunch_requeue.sh"))


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
    return "; ".join(lines)


def read_requeue(out: GatherOutput | None, jobs: list[RelaunchJob], problem: str) -> dict[str, str]:
    """Job id -> the outcome: ``requeued`` only when scontrol then shows it not RUNNING with more Restarts."""
    res: dict[str, str] = {}
    for k, j in enumerate(jobs):
        rec = out.get(f"relaunch:{k}") if out else None
        if rec is None:
            setreq = out.get(f"setreq:{k}") if out else None
            if setreq is not None and setreq.rc != 0:
                res[j.job_id] = f"Requeue=1 refused: {(setreq.stdout + setreq.stderr).strip()[:200]}"
            else:
                res[j.job_id] = f"not run: {problem}" if problem else "not run (script cut short)"
            continue
        text = (rec.stdout + rec.stderr).strip()
        if rec.rc == 2:
            res[j.job_id] = f"refused before relaunch: {text[:200]}"
            continue
        if rec.rc != 0:
            res[j.job_id] = f"relaunch failed (exit {rec.rc}): {text[:200]}"
            continue
        if j.command:
            res[j.job_id] = f"cancelled and relaunched by the ops.md command: {text[:120] or '(no output)'}"
            continue
        after = out.get(f"after:{k}") if out else None
        info = {}
        if after is not None and after.rc == 0:
            try:
                info = parse_scontrol_job(after.stdout)
            except SlurmOutputError:
                info = {}
        state, restarts, begin = info.get("JobState", "?"), info.get("Restarts", "?"), info.get("StartTime", "?")
        res[j.job_id] = f"requeued ({state}, Restarts={restarts}, starts again ~{begin})"
    return res
