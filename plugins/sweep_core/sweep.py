"""The fan-in of one sweep as pure steps: bucket -> liveness -> render (the DAG runs each as a task)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sweep_core.buckets import bucket_for
from sweep_core.liveness import apply_liveness
from sweep_core.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.ops_config import ClusterConfig, OpsConfigError, load_cluster
from sweep_core.render import RenderedSweep, render_sweep
from sweep_core.sweep_config import SweepConfig


def skip_snapshot(cfg: ClusterConfig, on: dt.date, selected: Sequence[str]) -> ClusterSnapshot | None:
    """The snapshot of a cluster this sweep does not contact, or None when it is swept."""
    active, why = cfg.activity(on)
    if not active:
        status = ClusterStatus.DROPPED if cfg.status == "dropped" else ClusterStatus.SKIPPED
        return ClusterSnapshot(cfg.name, cfg.scheduler, status, notes=[why])
    if selected and cfg.name not in selected:
        return ClusterSnapshot(
            cfg.name, cfg.scheduler, ClusterStatus.SKIPPED, notes=[f"{cfg.name}: not selected in this run's params"]
        )
    return None


def missing_snapshot(ops_dir: Path | str, cluster: str, on: dt.date, selected: Sequence[str]) -> ClusterSnapshot:
    """Explain a cluster whose gather returned nothing: skipped, dropped, bad ops.md, or failed."""
    try:
        cfg = load_cluster(ops_dir, cluster)
    except OpsConfigError as exc:
        return ClusterSnapshot(cluster, "?", ClusterStatus.ERROR, notes=[str(exc)])
    return skip_snapshot(cfg, on, selected) or ClusterSnapshot(
        cluster,
        cfg.scheduler,
        ClusterStatus.ERROR,
        notes=["gather task failed: see that task's log"],
    )


def bucket_step(snaps: Sequence[ClusterSnapshot], config: SweepConfig) -> None:
    """Set every job's bucket from its name (spec §2)."""
    for s in snaps:
        for job in s.all_jobs():
            job.bucket = bucket_for(job.name, config.buckets)


def cadence_table(config: SweepConfig, overrides: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """cluster -> bucket -> cadence minutes (a cluster's ops.md cadence_minutes beats sweep.yaml)."""
    return {c: {b: config.cadence(b, o) for b in config.bucket_names} for c, o in overrides.items()}


def liveness_step(snaps: Sequence[ClusterSnapshot], cadences: dict[str, dict[str, int]]) -> None:
    """Minutes since last output and the stale mark for every RUNNING job."""
    for s in snaps:
        apply_liveness(s, cadences.get(s.cluster, {}))


def group_by_bucket(snaps: Sequence[ClusterSnapshot], config: SweepConfig) -> dict[str, list[Job]]:
    """bucket -> jobs across all clusters, every bucket present, in config order."""
    grouped: dict[str, list[Job]] = {name: [] for name in config.bucket_names}
    for s in snaps:
        for job in s.all_jobs():
            grouped[job.bucket or config.bucket_names[-1]].append(job)
    return grouped


@dataclass
class SweepResult:
    snapshots: list[ClusterSnapshot]
    grouped: dict[str, list[Job]]
    rendered: RenderedSweep

    def counts(self) -> dict[str, int]:
        return {bucket: len(jobs) for bucket, jobs in self.grouped.items()}


def render_step(
    snaps: Sequence[ClusterSnapshot], config: SweepConfig, cadences: dict[str, dict[str, int]]
) -> SweepResult:
    """Group the (bucketed, liveness-checked) jobs and render every table."""
    grouped = group_by_bucket(snaps, config)

    def cadence_for(cluster: str, bucket: str) -> int:
        return cadences.get(cluster, {}).get(bucket) or config.cadence(bucket)

    return SweepResult(list(snaps), grouped, render_sweep(snaps, grouped, cadence_for))


def run_fan_in(
    snaps: Sequence[ClusterSnapshot],
    config: SweepConfig,
    overrides: dict[str, dict[str, int]] | None = None,
) -> SweepResult:
    """All fan-in steps in one call (the demo, tests and benchmarks)."""
    overrides = {s.cluster: {} for s in snaps} | (overrides or {})
    cadences = cadence_table(config, overrides)
    bucket_step(snaps, config)
    liveness_step(snaps, cadences)
    return render_step(snaps, config, cadences)
