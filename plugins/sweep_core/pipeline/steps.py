"""The pipeline of one sweep, above the rules it runs: bucket -> liveness -> metrics -> rules -> render. The DAG
runs them in three places: each gather task digests its own cluster's log tails (digest_step: bucket,
metrics, evidence, capped excerpts; fanin/digest.py), ``bucket`` (bucket_stages) and ``render``
(render_step and the run log); Laps times each stage for the task log."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Collection, Sequence
from pathlib import Path

from sweep_core.campaigns.docs import load_campaigns
from sweep_core.config.ops import ClusterConfig, OpsConfigError, load_cluster
from sweep_core.config.sweep import SweepConfig
from sweep_core.fanin.buckets import bucket_for
from sweep_core.fanin.cursor import before_digest, carry
from sweep_core.fanin.digest import digest_snapshot
from sweep_core.fanin.isolate import guarded
from sweep_core.fanin.liveness import job_liveness
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.fanin.recent_window import judge_at_end, trim_recent
from sweep_core.fanin.render import SweepResult, render_sweep
from sweep_core.fanin.render_campaigns import render_campaign
from sweep_core.fanin.step_check import check_steps
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.vanished import add_vanished_rows
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job
from sweep_core.rules.config import hf_only_series, rules_config
from sweep_core.rules.context import History, RuleContext
from sweep_core.rules.registry import apply_rules
from sweep_core.timing.window import PAST_WINDOW_NOTE, is_past_window


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


def return_check(cfg: ClusterConfig | None, snap: ClusterSnapshot, at: dt.datetime) -> ClusterSnapshot:
    """A cluster whose ops.md still says ``skipped`` but whose ``skip_until`` has passed is on trial:
    this sweep's gather is its return check (ssh answered and squeue validated). Until it passes the
    cluster stays SKIPPED, with the date and the check (no UNREACHABLE alarm for a cluster that is
    meant to be away); once it passes it is swept, with a note to set ``status: active``."""
    if cfg is None or cfg.status != "skipped" or cfg.skip_until is None or snap.status == ClusterStatus.SKIPPED:
        return snap
    when = at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%MZ")
    if snap.status in (ClusterStatus.OK, ClusterStatus.PARTIAL):
        snap.notes.insert(
            0,
            f"{cfg.name}: back after skip_until {cfg.skip_until.isoformat()}: ssh and squeue "
            f"answered ({when}); set status: active in {cfg.path}",
        )
        return snap
    why = "; ".join(snap.notes)[:300] or str(snap.status)
    note = (
        f"{cfg.name}: skipped until {cfg.skip_until.isoformat()} (past); return check {when}: "
        f"{snap.status} ({why}): still skipped, checked again next sweep"
    )
    return ClusterSnapshot(
        cfg.name,
        cfg.scheduler,
        ClusterStatus.SKIPPED,
        window_start=snap.window_start,
        window_end=snap.window_end,
        notes=[note],
    )


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
    """Set every job's bucket from its name (spec §2); a job that cannot be bucketed is Catch-all."""
    for s in snaps:
        for job in s.all_jobs():
            job.bucket = (
                guarded(job, "bucket", lambda j=job: bucket_for(j.name, config.buckets)) or (config.bucket_names[-1])
            )


def cadence_table(config: SweepConfig, overrides: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """cluster -> bucket -> cadence minutes (a cluster's ops.md cadence_minutes beats sweep.yaml)."""
    return {c: {b: config.cadence(b, o) for b in config.bucket_names} for c, o in overrides.items()}


def liveness_step(snaps: Sequence[ClusterSnapshot], cadences: dict[str, dict[str, int]]) -> None:
    """Minutes since last output and the stale mark for every RUNNING job (an error: age "?").
    A past window's jobs are not judged: the cluster's note says so (PAST_WINDOW_NOTE); a recent
    window's are judged at its end (fanin.recent_window)."""
    for s in snaps:
        cadence = cadences.get(s.cluster, {})
        if is_past_window(s.window_end, s.remote_now):
            if PAST_WINDOW_NOTE not in s.notes:
                s.notes.append(PAST_WINDOW_NOTE)
            continue
        end = trim_recent(s)  # a recent window: judged at its end, jobs started after it not listed
        for job in s.running or []:
            if end is None:
                guarded(job, "liveness", lambda j=job, now=s.remote_now, c=cadence: job_liveness(j, now, c))
            else:
                guarded(job, "liveness", lambda j=job, c=cadence, e=end: (job_liveness(j, e, c), judge_at_end(j, e)))


def group_by_bucket(snaps: Sequence[ClusterSnapshot], config: SweepConfig) -> dict[str, list[Job]]:
    """bucket -> jobs across all clusters, every bucket present, in config order."""
    grouped: dict[str, list[Job]] = {name: [] for name in config.bucket_names}
    for s in snaps:
        for job in s.all_jobs():
            grouped[job.bucket or config.bucket_names[-1]].append(job)
    return grouped


def render_step(
    snaps: Sequence[ClusterSnapshot],
    config: SweepConfig,
    cadences: dict[str, dict[str, int]],
    off: dict[str, list[str]] | None = None,
) -> SweepResult:
    """Group the (bucketed, liveness-checked) jobs and render every table; ``off`` (cluster -> its
    ``OFF: <handoff> needs <field> in <file>`` lines, admin.switches.off_lines) goes into the
    Clusters table and the run log's head."""
    grouped = group_by_bucket(snaps, config)

    def cadence_for(cluster: str, bucket: str) -> int:
        return cadences.get(cluster, {}).get(bucket) or config.cadence(bucket)

    rendered = render_sweep(snaps, grouped, cadence_for, off=off)
    for docs in load_campaigns(config):  # read at run time, like ops.md; never edited
        rendered.tables[f"Campaign {docs.name}"] = render_campaign(docs, snaps)
    return SweepResult(list(snaps), grouped, rendered, off=dict(off or {}))


def rules_step(
    snaps: Sequence[ClusterSnapshot],
    config: SweepConfig,
    cadences: dict[str, dict[str, int]],
    caps: dict[str, int | None] | None = None,
    history: History | None = None,
    only: Collection[str] | None = None,
) -> list[Flag]:
    """Apply every flag rule (``only``: just these: a watch run); flags are attached to their jobs as
    well. The ledger's VANISHED jobs become rows first (sweep_core.ledger.vanished)."""
    max_back = dt.timedelta(hours=config.gather.catch_up_hours)
    add_vanished_rows(snaps, (history or History()).ledger, config.bucket_names[-1], max_back)
    ctx = RuleContext(
        snaps=list(snaps),
        cfg=dataclasses.replace(rules_config(config.rules), hf_only=hf_only_series(config.hf_chain.series)),
        mcfg=metrics_config(config.metrics),
        cadence=lambda c, b: cadences.get(c, {}).get(b) or config.cadence(b),
        caps=caps or {},
        history=history or History(),
        campaigns=load_campaigns(config),  # read at run time, like ops.md
    )
    return apply_rules(ctx, only)


class Laps:
    """Wall seconds per stage, in the order the stages ran; ``str()`` is the task-log line
    ("bucket 0.01 s, liveness 0.00 s, ..."). ``into``, when given, receives the times."""

    def __init__(self, into: dict[str, float] | None = None) -> None:
        self.times = into if into is not None else {}
        self._t = time.perf_counter()

    def lap(self, stage: str) -> None:
        """Close ``stage``: the time since the previous lap (or since the start)."""
        now = time.perf_counter()
        self.times[stage] = self.times.get(stage, 0.0) + now - self._t
        self._t = now

    def __str__(self) -> str:
        return ", ".join(f"{stage} {secs:.2f} s" for stage, secs in self.times.items())


def bucket_stages(
    snaps: Sequence[ClusterSnapshot],
    config: SweepConfig,
    cadences: dict[str, dict[str, int]],
    laps: Laps,
    caps: dict[str, int | None] | None = None,
    history: History | None = None,
    only: Collection[str] | None = None,
) -> list[Flag]:
    """The stages of the ``bucket`` task, in order: bucket, liveness, metrics, rules (each lapped;
    ``only``: the rules a watch run runs)."""
    bucket_step(snaps, config)
    laps.lap("bucket")
    liveness_step(snaps, cadences)
    laps.lap("liveness")
    digest_tails(snaps, config)
    laps.lap("metrics")
    flags = rules_step(snaps, config, cadences, caps, history, only)
    laps.lap("rules")
    return flags


def digest_step(snaps: Sequence[ClusterSnapshot], config: SweepConfig) -> int:
    """Bucket every job, then turn its log tail into metric columns, evidence and a capped excerpt
    (fanin/digest.py): the gather task runs it before its XCom push, the fan-in again for any job
    not digested yet (a no-op for the others). Returns the excerpts the per-cluster cap dropped."""
    bucket_step(snaps, config)
    return digest_tails(snaps, config)


def digest_gathered(snap: ClusterSnapshot, ledger: Ledger, config: SweepConfig) -> None:
    """A gather's snapshot before its XCom push (in place): a log read on from its cursor gets the
    ledger's last lines before the new ones, then digest_step, then a metric the new bytes did not
    show keeps the ledger's value (said so; fanin.cursor), then the step is checked against the
    ledger's last step and total (fanin.step_check)."""
    before_digest(snap, ledger)
    digest_step([snap], config)
    carry(snap, ledger)
    check_steps(snap, ledger)


def digest_tails(snaps: Sequence[ClusterSnapshot], config: SweepConfig) -> int:
    """digest_step for jobs already bucketed."""
    mcfg, rcfg = metrics_config(config.metrics), rules_config(config.rules)
    g = config.gather
    return sum(digest_snapshot(s, mcfg, rcfg, g.xcom_excerpt_bytes, g.series_points, g.stream_points) for s in snaps)


def run_fan_in(
    snaps: Sequence[ClusterSnapshot],
    config: SweepConfig,
    overrides: dict[str, dict[str, int]] | None = None,
    caps: dict[str, int | None] | None = None,
    history: History | None = None,
    timings: dict[str, float] | None = None,
) -> SweepResult:
    """All fan-in steps in one call (tests and benchmarks): bucket, liveness, metrics, rules, render.

    ``timings``, when given, receives each step's wall seconds (benchmarks/fan_in.py prints them).
    """
    overrides = {s.cluster: {} for s in snaps} | (overrides or {})
    laps = Laps(timings)
    cadences = cadence_table(config, overrides)
    flags = bucket_stages(snaps, config, cadences, laps, caps, history)
    result = render_step(snaps, config, cadences)
    laps.lap("render")
    result.flags = flags
    return result
