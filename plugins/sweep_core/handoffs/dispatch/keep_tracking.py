"""The sweep keeps a consolidation moving: while the ledger tracks one in flight on a cluster the
sweep could read, sweep_cleanup is triggered even when no new completion was flagged (its
consolidate step polls the tracked job ids with one sacct per cluster)."""

from __future__ import annotations

from typing import Any

from sweep_core.handoffs.cleanup.view import CleanupView
from sweep_core.handoffs.dispatch.triggers import Handoff
from sweep_core.records.models import ClusterSnapshot, ClusterStatus

CLEANUP = Handoff.CLEANUP.value


def keep_tracking(
    confs: dict[str, dict[str, Any] | None],
    snaps: list[ClusterSnapshot],
    view: CleanupView,
    *,
    dry_run: bool,
    run_log: str,
) -> tuple[dict[str, dict[str, Any] | None], list[str]]:
    """``confs`` with a cleanup conf (no jobs) when none is set and a consolidation is in flight on a
    trusted cluster (``view.consolidating``: the ledger folded, handoffs.dispatch.views); and one note per such
    consolidation."""
    trusted = {s.cluster for s in snaps if s.status in (ClusterStatus.OK, ClusterStatus.PARTIAL)}
    mine = [t for t in view.consolidating if t["cluster"] in trusted]
    notes = [f"consolidate: {t['cluster']} {t['job_id']} {t['name']} in flight: tracked by sweep_cleanup" for t in mine]
    if not mine or confs.get(CLEANUP) is not None:
        return confs, notes
    return {**confs, CLEANUP: {"dry_run": dry_run, "run_log": run_log, "jobs": [], "reclaim_clusters": []}}, notes
