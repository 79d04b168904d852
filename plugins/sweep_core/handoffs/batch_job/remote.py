"""The batch-job machine's cluster side: its scripts (ONE SSH session each, every value
shlex-quoted) and their readers, which return typed records, never text to re-parse.

submit: one ``run sub:<k> sbatch ...`` per job (an act: bounded on the node, never re-sent once sent).
track : sweep_core/programs/batch_track.sh: ONE ``sacct -j a,b,c`` for every job in flight and the
        bounded log tail of each one that ended (a failure's first real traceback).
find  : ONE ``sacct --name`` and ONE ``squeue -n`` for the job names of submissions whose answer
        was lost (UNKNOWN): which job each became.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sweep_core.fanin.tracebacks import first_real_traceback
from sweep_core.handoffs.batch_job.plan import (
    Outcome,
    Submission,
    base_state,
    check_job_ids,
    is_live,
    parse_job_id,
    valid_job_id,
)
from sweep_core.slurm.failover import OUTCOME_UNKNOWN, not_done, outcome_unknown
from sweep_core.slurm.gather import GatherOutput
from sweep_core.slurm.parse import SACCT_JOBS_FORMAT, read_sacct_jobs
from sweep_core.slurm.remote_scripts import compose

SACCT_LOOKBACK_DAYS = 120


def submit_line(argv: Sequence[str]) -> str:
    """The command as the cluster runs it (every value shell-quoted): what a dry run prints."""
    return " ".join(shlex.quote(a) for a in argv)


def build_submit_script(argvs: Sequence[Sequence[str]], marker: str) -> str:
    """One ``sub:<k>`` record per job submitted (``sbatch --parsable`` prints the id)."""
    for argv in argvs:
        if not argv or argv[0] != "sbatch":
            raise ValueError(f"{list(argv)!r}: a batch job is submitted with sbatch, never run on the login node")
    trailer = "".join(f"run sub:{k} {submit_line(a)}\n" for k, a in enumerate(argvs))
    return compose(marker, {}, (), trailer=trailer, act=True)


def read_submit(out: GatherOutput | None, n: int, problem: str) -> list[Submission]:
    """What became of each of the ``n`` submissions: SUBMITTED with its id; REFUSED (sbatch
    answered, no id: nothing runs); NOT_SENT (no login node took the script); UNKNOWN (sent, its
    answer lost: never sent again blind)."""
    res = []
    for k in range(n):
        rec = out.get(f"sub:{k}") if out else None
        jid = parse_job_id(rec.stdout) if rec is not None and rec.rc == 0 else ""
        if jid:
            res.append(Submission(Outcome.SUBMITTED, jid))
        elif rec is not None:
            why = f"sbatch exited {rec.rc}: {(rec.stderr or rec.stdout).strip()[:200]}"
            answer = (rec.stderr.strip() or rec.stdout.strip() or f"exit {rec.rc}")[:300]
            res.append(Submission(Outcome.REFUSED, why=why, answer=answer))
        elif out is None and not outcome_unknown(problem):
            res.append(Submission(Outcome.NOT_SENT, why=not_done(problem), session=problem))
        else:
            res.append(
                Submission(Outcome.UNKNOWN, why=not_done(problem or f"{OUTCOME_UNKNOWN}: no record"), session=problem)
            )
    return res


def log_path(pattern: str, job_id: str, name: str, user: str) -> str:
    """ops.md ``log_pattern`` for one (non-array) job: %j %A = id, %x = name, %u = user, %% = %."""
    if not pattern:
        return ""
    subs = {"j": job_id, "A": job_id, "x": name, "u": user, "%": "%"}
    return re.sub(r"%([jAxu%])", lambda m: subs[m.group(1)], pattern)


def build_track_script(tracked: Mapping[str, str], marker: str, tail_bytes: int) -> str:
    """``tracked``: job id -> its log. One sacct for all; the tails of those that ended."""
    ids = sorted(tracked)
    check_job_ids(ids)
    values = {
        "TRACK_IDS": ids,
        "TRACK_LOGS": [tracked[j] for j in ids],
        "JOB_IDS": ",".join(ids),
        "SACCT_JOBS_FORMAT": SACCT_JOBS_FORMAT,
        "LOOKBACK_DAYS": SACCT_LOOKBACK_DAYS,
        "TAIL_BYTES": int(tail_bytes),
    }
    return compose(marker, values, ("batch_track.sh",))


@dataclass(frozen=True)
class Tracked:
    """What the track script read for one job."""

    state: str = ""  # sacct State ('' = not read)
    traceback: str = ""  # a failed one's first real traceback (or why its log was not read)
    tail: str = ""  # the log tail of one that ended (bounded)
    problem: str = ""  # why the state is unknown

    @property
    def ended(self) -> bool:
        return bool(self.state) and not self.live

    @property
    def live(self) -> bool:
        return is_live(self.state)

    @property
    def completed(self) -> bool:
        return base_state(self.state) == "COMPLETED"


def read_track(out: GatherOutput | None, ids: Sequence[str], problem: str) -> dict[str, Tracked]:
    """Job id -> what was read; a cluster-side problem makes every state unknown (never 'failed')."""
    sa = out.get("sacct") if out else None
    why = problem or ("" if sa else "no sacct record (script cut short)")
    if sa is not None and sa.rc != 0:
        why = f"sacct exited {sa.rc}: {sa.stderr.strip()[:200]}"
    if why or out is None or sa is None:
        return {j: Tracked(problem=why) for j in ids}
    states = {r.job_id: r.state for r in read_sacct_jobs(sa.stdout, out.marker)}
    found = {}
    for j in ids:
        if j not in states:
            found[j] = Tracked(problem=f"sacct -j {j} shows no record yet")
            continue
        t = out.get(f"tail:{j}")
        tail = t.stdout if t is not None and t.rc == 0 else ""
        done = base_state(states[j]) == "COMPLETED"
        tb = first_real_traceback(tail) if tail and not done else ""
        if t is not None and t.rc != 0:
            tb = f"(log not read: {t.stderr.strip()[:160]})"
        found[j] = Tracked(states[j], tb, tail[-2000:])
    return found


FIND_FORMAT = "JobID,Submit,State,JobName"  # JobName last: it may hold the delimiter


def build_find_script(user: str, names: Sequence[str], marker: str) -> str:
    """ONE ``sacct --name`` (record ``find``) and ONE ``squeue -n`` (record ``findq``; a job held
    by ``--begin`` is not in sacct yet) of the user's jobs with these names: id, submit time in
    epoch seconds (SLURM_TIME_FORMAT=%s), state, name, fields split by the marker."""
    for n in names:
        if not n or "," in n or "\n" in n:
            raise ValueError(f"job name {n!r} cannot be looked up with sacct --name")
    joined = shlex.quote(",".join(sorted(set(names))))
    cmd = (
        f'run find env SLURM_TIME_FORMAT=%s sacct -X -P -n -u "$U" --delimiter="$M" '
        f"-S now-{SACCT_LOOKBACK_DAYS}days -o {FIND_FORMAT} --name {joined}\n"
        f'run findq env SLURM_TIME_FORMAT=%s squeue -h -t all -u "$U" -n {joined} -o "%i$M%V$M%T$M%j"\n'
    )
    return compose(marker, {"U": user}, (), trailer=cmd)


@dataclass(frozen=True)
class FoundJob:
    job_id: str
    submit: int  # epoch seconds (remote clock)
    state: str
    name: str


def read_find(out: GatherOutput | None, problem: str) -> tuple[list[FoundJob] | None, str]:
    """The jobs sacct or squeue listed, once each (None and why when either did not answer)."""
    found: dict[str, FoundJob] = {}
    for name, tool in (("find", "sacct"), ("findq", "squeue")):
        rec = out.get(name) if out else None
        if out is None or rec is None or rec.rc != 0:
            why = f"{tool} exited {rec.rc}: {rec.stderr.strip()[:200]}" if rec is not None else f"no {name} record"
            return None, problem or why
        for line in rec.stdout.splitlines():
            parts = line.split(out.marker, 3)
            if len(parts) == 4 and parts[1].isdigit() and valid_job_id(parts[0]):
                found.setdefault(parts[0], FoundJob(parts[0], int(parts[1]), base_state(parts[2]), parts[3]))
    return list(found.values()), ""
