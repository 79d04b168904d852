"""Which hand-off DAGs a sweep triggers, and the ``conf`` each gets (spec §4 "Flag + hand off").

The sweep only decides and hands off; the hand-off DAGs re-validate everything themselves
before anything destructive (sweep_cleanup probes squeue/sacct/paths/hub again).
"""

from __future__ import annotations

from typing import Any

from sweep_core.handoffs.cleanup.plan import targets_from_flags
from sweep_core.models import ClusterSnapshot, ClusterStatus, Flag
from sweep_core.vocab import CANCEL_ACTIONS, Action

# hand-off name -> (the trigger task id in monitor_cron_sweep, the DAG it triggers)
HANDOFF_DAGS = {
    "cleanup": ("trigger_cleanup", "sweep_cleanup"),
    "cancel": ("trigger_cancel", "sweep_cancel"),
    "hf_chain": ("trigger_hf_chain", "sweep_hf_chain"),
    "harvest": ("trigger_tracker_harvest", "sweep_tracker_harvest"),
}


def plan_handoffs(
    snaps: list[ClusterSnapshot],
    flags: list[Flag],
    *,
    dry_run: bool,
    run_log: str,
    trackers: bool,
    hf_chain: bool,
) -> dict[str, dict[str, Any] | None]:
    """conf per hand-off; None = not triggered this sweep."""
    trusted = {s.cluster for s in snaps if s.status in (ClusterStatus.OK, ClusterStatus.PARTIAL)}
    base = {"dry_run": dry_run, "run_log": run_log}
    cleanup = [t.to_dict() for t in targets_from_flags(flags) if t.cluster in trusted]
    reclaim = sorted({f.cluster for f in flags if f.action == Action.RECLAIM and f.cluster in trusted})
    cancel = [
        {"cluster": f.cluster, "job_id": f.job_id, "name": f.job_name, "action": str(f.action), "evidence": f.line()}
        for f in flags
        if f.action in CANCEL_ACTIONS and f.cluster in trusted and f.job_id
    ]
    return {
        "cleanup": {**base, "jobs": cleanup, "reclaim_clusters": reclaim} if cleanup or reclaim else None,
        "cancel": {**base, "jobs": cancel} if cancel else None,
        "hf_chain": dict(base) if hf_chain else None,
        "harvest": dict(base) if trackers else None,
    }


def branch_choice(confs: dict[str, dict[str, Any] | None]) -> list[str]:
    """The trigger task ids to follow (BranchPythonOperator); none = the ``no_handoff`` task."""
    chosen = [HANDOFF_DAGS[k][0] for k, conf in confs.items() if conf is not None and k in HANDOFF_DAGS]
    return chosen or ["no_handoff"]
