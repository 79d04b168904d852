"""The progress counter across sweeps (issue 14): what each job's counter read, since when it has
not moved (the remote clock of the sweep that first read that value) and in how many consecutive
sweeps; a new chain link continues its series' counter; one [time, value] sample per sweep (rates).
"""

from __future__ import annotations

from collections.abc import Container

from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.records.models import Job
from sweep_core.records.progress_counter import progress_counter

MAX_SAMPLES = 24  # samples kept per job (half a day of half-hourly sweeps)


Links = dict[str, list[LedgerEntry]]


def link_index(ledger: Ledger) -> Links:
    """The ledger's entries by chain: RL series, else cluster|name (built once per sweep: a lookup per
    job over every entry would be quadratic)."""
    out: Links = {}
    for e in ledger.jobs.values():
        out.setdefault(e.series or f"{e.cluster}|{e.name}", []).append(e)
    return out


def _links_of(links: Links, job: Job, series: str) -> list[LedgerEntry]:
    return links.get(series or f"{job.cluster}|{job.name}", [])


def earlier_counter(
    ledger: Ledger, job: Job, series: str, links: Links, running: Container[str] = ()
) -> LedgerEntry | None:
    """The entry whose counter this job's is compared with: its own once a sweep read it, else the
    latest earlier link of its RL ``series`` (or, with no series, of its name on its cluster) that is
    not RUNNING now (``running``: "cluster|job_id" keys); None when no sweep read one."""
    key = f"{job.cluster}|{job.job_id}"
    own = ledger.jobs.get(key)
    if own is not None and own.counter:
        return own
    earlier = [e for e in _links_of(links, job, series) if e.counter and e.key != key and e.key not in running]
    return max(earlier, key=lambda e: (e.last_seen, e.counter_since or 0.0), default=None)


def counter_run(prev: LedgerEntry | None, counter: str, value: int, now: float) -> tuple[float, int]:
    """(since, sweeps) of ``counter`` reading ``value`` at ``now``: continued from ``prev`` when it
    read the same value, else it moved now (a restart at a lower step moved too)."""
    if prev is not None and prev.counter == counter and prev.counter_value == value and prev.counter_since is not None:
        return prev.counter_since, prev.counter_sweeps + 1
    return now, 1


def note_counter(
    before: Ledger, e: LedgerEntry, job: Job, now: float | None, links: Links, running: Container[str] = ()
) -> None:
    """Record ``job``'s counter this sweep in its entry ``e`` (compared with ``before``, the ledger
    before this sweep, ``links`` its link_index); an unreadable counter, or no remote clock, leaves
    the record as it was."""
    read = progress_counter(job)
    if read is None or now is None:
        return
    counter, value = read
    prev = earlier_counter(before, job, e.series, links, running)
    e.counter_since, e.counter_sweeps = counter_run(prev, counter, value, now)
    e.counter, e.counter_value = counter, value
    if prev is not None and prev.key != e.key:
        e.counter_from = prev.key
    if job.source == "squeue":
        e.samples = [s for s in e.samples if s[0] < now][-(MAX_SAMPLES - 1) :] + [[round(now), value]]


def series_samples(
    ledger: Ledger, job: Job, series: str, links: Links, now: float, value: int
) -> list[tuple[str, float, float]]:
    """(link key, time, value) of every sample of the job's series, its links' (RL ``series``, else
    its name on its cluster) and this sweep's reading of the job itself, oldest first."""
    key = f"{job.cluster}|{job.job_id}"
    entries = {e.key: e for e in _links_of(links, job, series)}
    if key in ledger.jobs:
        entries[key] = ledger.jobs[key]
    out = [(k, t, v) for k, e in entries.items() for t, v in e.samples if t < now]
    return sorted([*out, (key, now, float(value))], key=lambda s: s[1])


def rate_intervals(samples: list[tuple[str, float, float]]) -> list[tuple[float, float]]:
    """(hours, steps) between consecutive samples of the same link in which the counter did not go
    back (the time between links, queued or restarting, is no training time)."""
    out = []
    for (k1, t1, v1), (k2, t2, v2) in zip(samples, samples[1:], strict=False):
        if k1 == k2 and t2 > t1 and v2 >= v1:
            out.append(((t2 - t1) / 3600.0, v2 - v1))
    return out
