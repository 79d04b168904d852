"""What the cleanup decision reads of the ledger, folded once per run (sweep_core.handoffs.views
folds it): the jobs an upload or a salvage keeps open, the jobs recorded for salvage, each
salvaged or uploaded-for job's own hub commit, and the consolidations in flight. The plan
(usecase.plan_cleanup) and the sweep's re-judging of the backlog (rejudge.give_backlog) are
handed this view; neither reads the ledger mid-decision.
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
