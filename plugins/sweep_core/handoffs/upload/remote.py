"""The upload's batched scripts (one SSH session each, per cluster) and their readers.

track : sweep_core/programs/upload_track.sh: ONE ``sacct -j a,b,c`` for every upload in flight, the
        bounded log tail of each one that ended (a failure's traceback, a COMPLETED one's commit).
submit: one ``sbatch --parsable --output=<log> ...`` per upload (record ``sub:<k>``), every value
        shlex-quoted; an act (bounded on the node, never re-sent once sent).
find  : ONE ``sacct --name`` and ONE ``squeue -n`` (a job held by ``--begin`` is not in sacct yet)
        for the job names of submissions whose answer was lost (UNKNOWN): which job each became.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sweep_core.fanin.tracebacks import first_real_traceback
from sweep_core.handoffs.chain.plan import parse_job_id
from sweep_core.handoffs.upload.plan import commit_of, valid_job_id
from sweep_core.slurm.failover import not_done
from sweep_core.slurm.gather import GatherOutput
from sweep_core.slurm.parse import SACCT_JOBS_FORMAT, read_sacct_jobs
from sweep_core.slurm.remote_scripts import compose

SACCT_LOOKBACK_DAYS = 120


def build_track_script(tracked: dict[str, str], marker: str, tail_bytes: int) -> str:
    """``tracked``: upload job id -> its log. One sacct for all; tails of the failed ones."""
    ids = sorted(tracked)
    for j in ids:
        if not valid_job_id(j):
            raise ValueError(f"upload job id {j!r} is not a Slurm job id")
    values = {
        "TRACK_IDS": ids,
        "TRACK_LOGS": [tracked[j] for j in ids],
        "JOB_IDS": ",".join(ids),
        "SACCT_JOBS_FORMAT": SACCT_JOBS_FORMAT,
        "LOOKBACK_DAYS": SACCT_LOOKBACK_DAYS,
        "TAIL_BYTES": int(tail_bytes),
    }
    return compose(marker, values, ("upload_track.sh",))


@dataclass(frozen=True)
class UploadState:
    """What the track script read for one upload job."""

    state: str = ""  # sacct State ('' = not read)
    traceback: str = ""  # the first real traceback of a failed one's log
    tail: str = ""
    problem: str = ""  # why the state is unknown
    revision: str = ""  # COMPLETED: the hub commit its log names for the attempt's repo


def read_track(
    out: GatherOutput | None, ids: Sequence[str], problem: str, repos: Mapping[str, str] | None = None
) -> dict[str, UploadState]:
    """Upload job id -> its state; a cluster-side problem makes every state unknown (never 'failed').
    ``repos``: upload job id -> the hub repo it writes (the commit read from a COMPLETED one's log)."""
    sa = out.get("sacct") if out else None
    why = problem or ("" if sa else "no sacct record (script cut short)")
    if sa is not None and sa.rc != 0:
        why = f"sacct exited {sa.rc}: {sa.stderr.strip()[:200]}"
    if why or out is None or sa is None:
        return {j: UploadState(problem=why) for j in ids}
    states = {r.job_id: r.state for r in read_sacct_jobs(sa.stdout, out.marker)}
    found = {}
    for j in ids:
        if j not in states:
            found[j] = UploadState(problem=f"sacct -j {j} shows no record yet")
            continue
        t = out.get(f"tail:{j}")
        tail = t.stdout if t is not None and t.rc == 0 else ""
        done = states[j].split(" ")[0] == "COMPLETED"
        tb = first_real_traceback(tail) if tail and not done else ""
        if t is not None and t.rc != 0:
            tb = f"(log not read: {t.stderr.strip()[:160]})"
        rev = commit_of(tail, (repos or {}).get(j, "")) if done else ""
        found[j] = UploadState(states[j], tb, tail[-2000:], revision=rev)
    return found


def submit_line(argv: Sequence[str]) -> str:
    """The command as the cluster runs it (every value shell-quoted): what a dry run prints."""
    return " ".join(shlex.quote(a) for a in argv)


def build_submit_script(argvs: Sequence[Sequence[str]], marker: str) -> str:
    """One ``sub:<k>`` record per upload job submitted."""
    for argv in argvs:
        if not argv or argv[0] != "sbatch":
            raise ValueError(f"{list(argv)!r}: an upload is submitted with sbatch, never run on the login node")
    trailer = "".join(f"run sub:{k} {submit_line(a)}\n" for k, a in enumerate(argvs))
    return compose(marker, {}, (), trailer=trailer, act=True)


def read_submit(out: GatherOutput | None, n: int, problem: str) -> list[tuple[str, str]]:
    """(job id, '') per submission, or ('', why it was not submitted: ``UNKNOWN: ...`` when it was
    sent and its answer lost, failover.not_done)."""
    res = []
    for k in range(n):
        rec = out.get(f"sub:{k}") if out else None
        jid = parse_job_id(rec.stdout) if rec is not None and rec.rc == 0 else ""
        if jid:
            res.append((jid, ""))
        elif rec is None:
            res.append(("", not_done(problem)))
        else:
            res.append(("", f"sbatch exited {rec.rc}: {(rec.stderr or rec.stdout).strip()[:200]}"))
    return res


FIND_FORMAT = "JobID,Submit,State,JobName"  # JobName last: it may hold the delimiter


def build_find_script(user: str, names: Sequence[str], marker: str) -> str:
    """ONE ``sacct --name`` (record ``find``) and ONE ``squeue -n`` (record ``findq``) of the user's
    jobs with these names: id, submit time in epoch seconds (SLURM_TIME_FORMAT=%s), state, name,
    fields split by the marker."""
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
                found.setdefault(parts[0], FoundJob(parts[0], int(parts[1]), parts[2].split(" ")[0], parts[3]))
    return list(found.values()), ""
