"""The upload's batched scripts (one SSH session each, per cluster) and their readers.

track : include/remote/upload_track.sh: ONE ``sacct -j a,b,c`` for every upload in flight, the
        bounded log tail of each one that ended (a failure's traceback, a COMPLETED one's commit).
submit: one ``sbatch --parsable --output=<log> ...`` per upload (record ``sub:<k>``), every value
        shlex-quoted.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sweep_core.fanin.tracebacks import first_real_traceback
from sweep_core.handoffs.chain.plan import parse_job_id
from sweep_core.handoffs.upload.plan import commit_of, valid_job_id
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
    return compose(marker, {}, (), trailer=trailer)


def read_submit(out: GatherOutput | None, n: int, problem: str) -> list[tuple[str, str]]:
    """(job id, '') per submission, or ('', why it was not submitted)."""
    res = []
    for k in range(n):
        rec = out.get(f"sub:{k}") if out else None
        jid = parse_job_id(rec.stdout) if rec is not None and rec.rc == 0 else ""
        if jid:
            res.append((jid, ""))
        elif rec is None:
            res.append(("", f"not run: {problem or 'script cut short'}"))
        else:
            res.append(("", f"sbatch exited {rec.rc}: {(rec.stderr or rec.stdout).strip()[:200]}"))
    return res
