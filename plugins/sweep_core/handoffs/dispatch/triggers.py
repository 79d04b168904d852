"""Which hand-offs a sweep gives work, and the ``conf`` each gets (a cancel job: a flag_record.FlagRecord).

The sweep only decides and hands off; the hand-offs re-validate everything themselves before
anything destructive (sweep_cleanup probes squeue/sacct/paths/hub again). Which DAG and task
carry each hand-off is the Airflow side's (sweep_operators.task_ids).
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any

from sweep_core.handoffs.cleanup.plan import targets_from_flags
from sweep_core.handoffs.flag_record import FlagRecord
from sweep_core.handoffs.hygiene.plan import tree_jobs
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag
from sweep_core.records.vocab import CANCEL_ACTIONS, Action
from sweep_core.timing.window import is_past_window


class Handoff(StrEnum):
    """The hand-offs, by the name their ``conf`` travels under (equal to the plain string)."""

    CLEANUP = "cleanup"
    CANCEL = "cancel"
    HF_CHAIN = "hf_chain"
    HARVEST = "harvest"
    DEEP_DIVE = "deep_dive"
    SNAPSHOTS = "snapshots"  # Daytona at its HARD cap: delete STALE snapshots a human approves
    HYGIENE = "hygiene"  # a cluster clone not clean or behind: local-clone commit, ff pull once approved


def plan_handoffs(
    snaps: list[ClusterSnapshot],
    flags: list[Flag],
    *,
    dry_run: bool,
    run_log: str,
    trackers: bool,
    hf_chain: bool,
) -> dict[str, dict[str, Any] | None]:
    """conf per hand-off name; None = no work for it this sweep."""
    trusted = {s.cluster for s in snaps if s.status in (ClusterStatus.OK, ClusterStatus.PARTIAL)}
    base = {"dry_run": dry_run, "run_log": run_log}
    cleanup = [t.to_dict() for t in targets_from_flags(flags) if t.cluster in trusted]
    reclaim = sorted({f.cluster for f in flags if f.action == Action.RECLAIM and f.cluster in trusted})
    past = {s.cluster for s in snaps if is_past_window(s.window_end, s.remote_now)}  # never cancel from a past window
    cancel = [
        FlagRecord.from_flag(f).to_dict()  # typed: read back field by field, never from the line
        for f in flags
        if f.action in CANCEL_ACTIONS and f.cluster in trusted - past and f.job_id
    ]
    deep = [
        {"cluster": f.cluster, "job_id": f.job_id, "name": f.job_name}
        for f in flags
        if f.action == Action.DEEP_DIVE and f.cluster in trusted - past and f.job_id
    ]
    # HF-only completions of no listed series (launch YAML enable_db_registration: false): the chain
    # records each as a cell of its cluster's found series (idempotent by cell: no given-once needed)
    found = [
        {"cluster": f.cluster, "job_id": f.job_id, "name": f.job_name}
        for f in flags
        if f.action == Action.HF_CHAIN and f.cluster in trusted and f.job_id
    ]
    snapshots = _snapshot_conf(snaps, flags, trusted - past)
    trees = tree_jobs(snaps, trusted - past)  # once per change of what it found (the ledger's given-once)
    return {
        Handoff.CLEANUP.value: {**base, "jobs": cleanup, "reclaim_clusters": reclaim} if cleanup or reclaim else None,
        Handoff.CANCEL.value: {**base, "jobs": cancel} if cancel else None,
        Handoff.HF_CHAIN.value: {**base, "found": found} if hf_chain or found else None,
        Handoff.HARVEST.value: dict(base) if trackers else None,
        Handoff.DEEP_DIVE.value: {**base, "jobs": deep} if deep else None,
        Handoff.SNAPSHOTS.value: {**base, **snapshots} if snapshots else None,
        Handoff.HYGIENE.value: {**base, "jobs": trees} if trees else None,
    }


def _snapshot_conf(snaps: list[ClusterSnapshot], flags: list[Flag], clusters: set[str]) -> dict[str, Any]:
    """The Daytona snapshot cleanup's conf: the cluster whose list was read and the STALE names it
    offered (a snapshot_cap flag asking for it, on a trusted cluster of a current window); {} = none.
    ``jobs`` holds one item, ``snapshots:<hash of the names>``: the ledger gives it once, so a person is
    asked again when the STALE set changes, not every sweep while the org stays at the cap (kept as an
    ended job seen at ``seen``: the same set is offered again after ledger.fold.KEEP_ENDED_DAYS)."""
    asking = {f.cluster for f in flags if f.action == Action.SNAPSHOT_CLEANUP and f.cluster in clusters}
    for s in snaps:
        if s.cluster in asking and (stale := (s.checks.get("snapshots") or {}).get("stale")):
            names = [x["name"] for x in stale]
            digest = hashlib.sha1(json.dumps(sorted(names)).encode()).hexdigest()[:12]
            item = {
                "cluster": s.cluster,
                "job_id": f"snapshots:{digest}",
                "name": f"{len(names)} STALE snapshots",
                "seen": s.window_end,
            }
            return {"cluster": s.cluster, "offered": names, "jobs": [item]}
    return {}


def with_work(confs: dict[str, dict[str, Any] | None]) -> list[Handoff]:
    """The hand-offs whose conf says they have work, in ``Handoff`` order (unknown names ignored)."""
    return [h for h in Handoff if confs.get(h.value) is not None]
