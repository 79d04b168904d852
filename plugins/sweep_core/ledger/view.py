"""A job's ledger history folded ONCE into a frozen view that the relaunch and cancel policies read
(handoffs.relaunch): its own acts, the relaunches of its series (across chain links and renames) with
the series' own record and PENDING links, its latest deep-dive verdict and the Reject of a KILL that
stands against it (ledger.verdicts.kill_reask), the ledger's last step; and, for the brakes, every
act a standing permission took. A policy given the view never goes back to the ledger mid-decision.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from sweep_core.ledger.acts import ActKind, PastAct, read_ledger, relaunch_series, series_key, series_record
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.verdicts import kill_reask, latest_verdict, standing_reject


@dataclass(frozen=True)
class SeriesView:
    """The relaunch series a job counts against: its key, every relaunch on any of its links (oldest
    first), the relaunches counted (its own record, or the acts of a ledger from before it), the
    series record's own count, last relaunch time and step, when "cap reached" was escalated
    ("" = not yet), and its other links the ledger knows PENDING on the job's cluster (id, name)."""

    key: str
    relaunches: tuple[PastAct, ...] = ()
    count: int = 0
    recorded: int = 0
    record_at: str = ""
    record_step: str = ""
    escalated: str = ""
    pending: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class JobView:
    """One job's history as the policies read it (see the module doc)."""

    cluster: str
    job_id: str
    name: str
    step: int | None = None  # the ledger's last step
    acts: tuple[PastAct, ...] = ()  # oldest first
    series: SeriesView = field(default_factory=lambda: SeriesView(""))
    verdict: PastAct | None = None  # the latest deep-dive verdict
    kill_reject: PastAct | None = None  # the latest Reject of a deep_dive_kill request
    kill_blocked: str = ""  # why that Reject still stands against the latest verdict ("" = a KILL may be asked)

    @property
    def key(self) -> str:
        return f"{self.cluster}|{self.job_id}"


@dataclass(frozen=True)
class LedgerView:
    """The folded jobs (key "cluster|job_id" -> view; every job asked for has one) and every
    relaunch and cancel a standing permission took (the brakes' caps count them)."""

    jobs: Mapping[str, JobView] = field(default_factory=lambda: MappingProxyType({}))
    standing: tuple[PastAct, ...] = ()


@dataclass(frozen=True)
class _Index:
    """The ledger walked once: its entries by series key, its PENDING entries by cluster."""

    links: Mapping[str, tuple[LedgerEntry, ...]]
    pending: Mapping[str, tuple[LedgerEntry, ...]]


def _index(ledger: Ledger) -> _Index:
    links: dict[str, list[LedgerEntry]] = defaultdict(list)
    pending: dict[str, list[LedgerEntry]] = defaultdict(list)
    for e in ledger.jobs.values():
        links[series_key(e, e.cluster, e.name)].append(e)
        if e.state == "PENDING":
            pending[e.cluster].append(e)
    return _Index({k: tuple(v) for k, v in links.items()}, {k: tuple(v) for k, v in pending.items()})


def _series(ledger: Ledger, idx: _Index, cluster: str, job_id: str, name: str) -> SeriesView:
    key = relaunch_series(ledger, cluster, job_id, name)
    done = sorted(
        (a for e in idx.links.get(key, ()) for a in e.acts if a.get("kind") == ActKind.RELAUNCH),
        key=lambda a: a.get("at", ""),
    )
    rec = series_record(ledger, key)
    mine = series_key(ledger.jobs.get(f"{cluster}|{job_id}"), cluster, name)
    pending = {
        (e.job_id, e.name)
        for e in idx.pending.get(cluster, ())
        if e.job_id != job_id and (e.name == name or series_key(e, cluster, e.name) == mine)
    }
    return SeriesView(
        key,
        tuple(PastAct.of(a) for a in done),
        max(rec.count, len(done)),
        rec.count,
        rec.last_at,
        rec.last_step,
        rec.escalated,
        tuple(sorted(pending)),
    )


def fold_job(ledger: Ledger, cluster: str, job_id: str, name: str, idx: _Index | None = None) -> JobView:
    """One job's view (an empty history for a job the ledger does not know)."""
    e = ledger.jobs.get(f"{cluster}|{job_id}")
    v, r = latest_verdict(e), standing_reject(e)
    verdict, reject = (PastAct.of(v) if v is not None else None), (PastAct.of(r) if r is not None else None)
    ok, why = kill_reask(reject, verdict.weight if verdict else 0)
    return JobView(
        cluster,
        job_id,
        name,
        e.step if e is not None else None,
        tuple(PastAct.of(a) for a in (e.acts if e else [])),
        _series(ledger, idx or _index(ledger), cluster, job_id, name),
        verdict,
        reject,
        "" if ok else why,
    )


def fold_view(ledger: Ledger, jobs: Iterable[tuple[str, str, str]]) -> LedgerView:
    """The view of ``(cluster, job id, name)`` jobs and the standing acts, the ledger walked once."""
    idx = _index(ledger)
    folded = {f"{c}|{i}": fold_job(ledger, c, i, n, idx) for c, i, n in jobs}
    standing = tuple(
        PastAct.of(a)
        for e in ledger.jobs.values()
        for a in e.acts
        if a.get("kind") in (ActKind.RELAUNCH, ActKind.CANCEL) and a.get("standing")
    )
    return LedgerView(MappingProxyType(folded), standing)


def read_view(run_log_dir: str | Path, jobs: Iterable[tuple[str, str, str]]) -> LedgerView:
    """fold_view of the stored ledger, read once."""
    return fold_view(read_ledger(run_log_dir), jobs)
