"""Vanished jobs, read from the ledger: a job live in the last sweep that KNEW its cluster, listed
nowhere now while the cluster answered (iris: the controller; SLURM: squeue) and its ended jobs
were read back to when it was last seen (ledger.catch_up), is a row of its own (state VANISHED, last
seen time) before the rules run. UNKNOWN sweeps changed no entry: "last seen" is the last KNOWN one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sweep_core.ledger.catch_up import catch_up_start
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.fold import ACTIVE, TRUSTED, VANISHED
from sweep_core.records.models import ClusterSnapshot, Job


def _at(iso: str) -> dt.datetime:
    return dt.datetime.fromisoformat(iso)


def _listed(s: ClusterSnapshot) -> set[str]:
    return {j.job_id for j in [*(s.running or []), *(s.pending or []), *(s.finished or [])]}


def _why(e: LedgerEntry, s: ClusterSnapshot) -> str:
    if s.scheduler == "iris":
        return (
            f"record gone from the iris controller, which answered this sweep (was {e.state}): TERMINAL "
            "(a kill/evict/preempt can leave no terminal record)"
        )
    return f"not in squeue and not in sacct over {s.window_start} → {s.window_end} (was {e.state}): end state unknown"


def vanished_jobs(ledger: Ledger, s: ClusterSnapshot, default_bucket: str, max_back: dt.timedelta) -> list[Job]:
    """The VANISHED rows of ``s`` (``end`` = when it was last seen, no exit code); none unless the
    cluster answered in full now, an earlier sweep knew it, and the ended jobs were read back to
    when the job was last seen (the catch-up window, ``max_back`` = gather.catch_up_hours)."""
    if s.status not in TRUSTED or s.running is None or s.finished is None or s.cluster not in ledger.known:
        return []
    if not (s.window_start and s.window_end):
        return []
    start, end = _at(s.window_start), _at(s.window_end)
    read_from, _ = catch_up_start(ledger, s.cluster, start, end, max_back)
    listed, out = _listed(s), []
    for e in sorted(ledger.jobs.values(), key=lambda e: e.key):
        if e.cluster != s.cluster or e.state not in ACTIVE or e.job_id in listed:
            continue
        if e.state == "PENDING" and s.pending is None:
            continue  # PENDING jobs were not listed: nothing can be told
        if not e.last_seen or _at(e.last_seen) > end:
            continue  # a later sweep saw it: this (older) window cannot tell it is gone
        if read_from > _at(e.last_seen):
            continue  # its end may lie before what was read: the fold says "gone", not this
        out.append(
            Job(
                cluster=e.cluster,
                job_id=e.job_id,
                name=e.name,
                state=VANISHED,
                source="sacct",
                end=e.last_seen,
                reason=_why(e, s),
                bucket=e.bucket or default_bucket,
                log_mtime=e.last_output,
            )
        )
    return out


def add_vanished_rows(
    snaps: Sequence[ClusterSnapshot], ledger: Ledger, default_bucket: str, max_back: dt.timedelta
) -> None:
    """Append each snapshot's VANISHED rows to its ended jobs (in place)."""
    for s in snaps:
        rows = vanished_jobs(ledger, s, default_bucket, max_back)
        if rows and s.finished is not None:
            s.finished.extend(rows)
