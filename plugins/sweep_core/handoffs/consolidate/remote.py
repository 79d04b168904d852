"""Datagen consolidate's cluster side: the read-only probe (sweep_core/programs/consolidate_probe.sh,
ONE SSH session per cluster: one validated squeue, ONE ``sacct -j`` for every array and every
tracked consolidate job, a builtin ``[ -d ]`` per chunk tree, the log tail of a consolidate job
that ended without COMPLETED) and its reader. The submission is the batch-job machine's
(handoffs.batch_job: one ``run sub:<k> sbatch …`` line per job, every argv element shlex-quoted).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sweep_core.handoffs.batch_job.plan import check_job_ids
from sweep_core.handoffs.cleanup.plan import ClusterState
from sweep_core.handoffs.cleanup.remote import ProbeRequest, read_probe
from sweep_core.slurm.gather import GatherOutput
from sweep_core.slurm.parse import SACCT_JOBS_FORMAT, squeue_format
from sweep_core.slurm.remote_scripts import compose


@dataclass(frozen=True)
class ConsolidateProbe:
    user: str
    arrays: list[str]  # array ids (sacct -j lists every chunk)
    dirs: list[str]  # candidate chunk trees (absolute)
    cons: list[str]  # tracked consolidate job ids
    logs: list[str]  # their log paths ('' = unknown), same order
    lookback_days: int = 60
    tail_bytes: int = 16384


def build_probe_script(req: ConsolidateProbe, marker: str) -> str:
    ids = sorted({*req.arrays, *req.cons})
    check_job_ids(ids)
    for p in (*req.dirs, *(x for x in req.logs if x)):
        if not p.startswith("/") or "\n" in p or "\0" in p:
            raise ValueError(f"path {p!r} is not an absolute single-line path")
    values = {
        "U": req.user,
        "SQUEUE_FORMAT": squeue_format(marker),
        "JOB_IDS": ",".join(ids),
        "SACCT_JOBS_FORMAT": SACCT_JOBS_FORMAT,
        "LOOKBACK_DAYS": int(req.lookback_days),
        "DIRS": list(req.dirs),
        "CONS": list(req.cons),
        "LOGS": list(req.logs),
        "TAIL_BYTES": int(req.tail_bytes),
    }
    return compose(marker, values, ("log_helpers.sh", "consolidate_probe.sh"))


@dataclass
class ProbeResult:
    state: ClusterState
    dirs: set[str] = field(default_factory=set)  # chunk trees that are directories
    tails: dict[str, str] = field(default_factory=dict)  # consolidate job id -> log tail
    tail_problems: dict[str, str] = field(default_factory=dict)


def read_consolidate_probe(out: GatherOutput, req: ConsolidateProbe) -> ProbeResult:
    """The validated squeue + sacct state (cleanup's reader), the chunk trees found, the tails."""
    ids = sorted({*req.arrays, *req.cons})
    state, _, _ = read_probe(out, ProbeRequest(req.user, ids, [], []))
    got = ProbeResult(state)
    got.dirs = {d for k, d in enumerate(req.dirs) if out.get(f"dir:{k}") is not None}
    for k, jid in enumerate(req.cons):
        t, missing, nolog = out.get(f"tail:{k}"), out.get(f"notail:{k}"), out.get(f"nolog:{k}")
        if t is not None and t.rc == 0:
            got.tails[jid] = t.stdout
        elif t is not None:
            got.tail_problems[jid] = f"log unreadable: {t.stderr.strip()[:160]}"
        elif missing is not None:
            got.tail_problems[jid] = f"log {missing.stdout} not found"
        elif nolog is not None:
            got.tail_problems[jid] = f"log is a {nolog.stdout.strip()}, not a regular file: not read"
    return got
