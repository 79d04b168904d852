"""What the cleanup decision is handed besides its targets: the ledger folded once per run
(``CleanupView``, folded by sweep_core.handoffs.dispatch.views: the jobs an upload or a salvage keeps
open, the jobs recorded for salvage, each salvaged or uploaded-for job's own hub commit, the
consolidations in flight) and what this run's consolidate step holds back (``Hold``, made by
sweep_core.handoffs.consolidate.usecase.hold_of). The plan (usecase.plan_cleanup) and the sweep's
re-judging of the backlog (rejudge.give_backlog) are handed them; neither reads the ledger
mid-decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Key = tuple[str, str]  # (cluster, job id)


def _key(job: Mapping[str, Any]) -> Key:
    return (str(job.get("cluster")), str(job.get("job_id")))


@dataclass(frozen=True)
class CleanupView:
    """One run's folded view of the ledger, as the cleanup guards read it.

    ``open``: cleanup targets (cluster, job_id, name, flavor) an upload or salvage keeps open;
    ``salvaged``: jobs recorded for salvage (CANCELLED is their done-signal);
    ``own``: (cluster, job id) -> the hub commit its own upload wrote ('' = none yet), for every
    job the sweep salvaged or uploaded for (its hub evidence is that commit, never a name match);
    ``consolidating``: cleanup targets (job_id = array id) of every consolidation in flight."""

    open: tuple[dict[str, str], ...] = ()
    salvaged: frozenset[Key] = frozenset()
    own: Mapping[Key, str] = field(default_factory=dict)
    consolidating: tuple[dict[str, str], ...] = ()

    def with_open(self, jobs: Iterable[Any]) -> list[Any]:
        """The requested jobs, then the open ones not requested already."""
        jobs = list(jobs)
        asked = {_key(j) for j in jobs if isinstance(j, dict)}
        return jobs + [dict(j) for j in self.open if _key(j) not in asked]

    @property
    def followed(self) -> set[Key]:
        """The jobs sweep_cleanup follows every run anyway: an upload or salvage open, and a
        consolidation in flight by its array id (any chunk of it)."""
        return {_key(j) for j in self.open} | {(c, j.split("_", 1)[0]) for c, j in map(_key, self.consolidating)}


NOTHING_OPEN = CleanupView()


@dataclass(frozen=True)
class Hold:
    """The deletes this run's consolidate step holds back: a consolidated flavor's trees stay until
    its array is released (its tracker row advanced first, then the trees go).

    ``flavors``: the consolidated flavors; ``released``: ``<cluster>|<array id>`` of the arrays the
    step released; ``why``: the step's reasons per array (none: no consolidate step ran for it)."""

    flavors: frozenset[str] = frozenset()
    released: frozenset[str] = frozenset()
    why: Mapping[str, str] = field(default_factory=dict)

    def reason(self, cluster: str, array_id: str, flavor: str) -> str:
        """Why a delete of this array's trees waits ('' = it does not)."""
        key = f"{cluster}|{array_id}"
        if flavor not in self.flavors or key in self.released:
            return ""
        return f"consolidate not finished: {self.why.get(key) or 'no consolidate step ran for it'}"


NO_HOLD = Hold()
