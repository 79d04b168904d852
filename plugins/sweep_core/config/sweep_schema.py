"""The schema of include/sweep.yaml: one model per section, each key's type and its one default
(docs/configuration.md's sweep.yaml table is generated from the descriptions below). The fan-in sections
are in fanin_schema, the hand-off sections in handoffs_schema; the loader is config.sweep.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from sweep_core.config.consolidate_schema import ConsolidateSection
from sweep_core.config.db_clean_schema import DbCleanSection
from sweep_core.config.deep_dive_schema import DeepDiveSection
from sweep_core.config.fanin_schema import CampaignSpec, MetricsSection, RulesSection
from sweep_core.config.handoffs_schema import CancelConfig, CleanupSection, HfChainSection, TrackersSection
from sweep_core.config.notify_schema import HistorySection, NotifySection, OpenMetricsSection
from sweep_core.config.queues_schema import QueuesSection
from sweep_core.config.schema_base import BucketName, CrossFieldErrors, Regex, StrictModel, Tup
from sweep_core.config.steps_schema import DaytonaSection
from sweep_core.config.tasks_schema import TasksSection
from sweep_core.config.watch_schema import WatchSection
from sweep_core.timing.act_bounds import ACT_BOUND_MARGIN_S, ACT_MIN_WAIT_S, max_act_wait_s

Positive = Annotated[int, Field(gt=0)]


class BucketRule(StrictModel):
    """One bucket: the first whose pattern matches a job name wins; no patterns = the catch-all."""

    name: BucketName
    patterns: Tup[Regex] = ()
    cadence_minutes: Positive = Field(60, description="a RUNNING job silent longer than this is stale")


class GatherLimits(StrictModel):
    """sweep.yaml ``gather:``: what one batched remote script brings back per cluster."""

    tail_bytes: Positive = Field(16384, description="bytes of each RUNNING job's log brought back")
    max_jobs: Positive = Field(1000, description="running jobs whose logs are read per cluster per sweep")
    xcom_excerpt_bytes: Positive = Field(
        1048576, description="log excerpts one cluster's gather passes on (XCom); past it excerpts are dropped, noted"
    )
    series_points: Positive = Field(
        32,
        description="metric points (logged steps) per job the gather passes on for rl_collapse/sft_divergence:"
        " the last this many, older NaN/inf kept; a cut is noted",
    )
    log_budget_bytes: int = Field(
        1073741824,
        ge=0,
        description="bytes of logs read per sweep per cluster from their cursors (SLURM StdOut, iris "
        "log entries; RUNNING jobs first, then the final reads of jobs ended in the window; 0 = unbounded): "
        "a first sight past it reads the rest of its history over the next sweeps, its newest tail every "
        "sweep; an ended job's final read stops there (said in its note)",
    )
    stream_file_bytes: Positive = Field(
        8388608,
        description="bytes of one metric stream file (ops.md metric_streams) read per sweep from its cursor: a "
        "longer history is read over the next sweeps",
    )
    stream_budget_bytes: int = Field(
        67108864,
        ge=0,
        description="bytes of metric streams read per sweep per cluster in all (0 = unbounded): first sights past "
        "it read their history over the next sweeps (benchmarks/streams.py: ~2.3 s of a login-node core per 64 MiB)",
    )
    stream_points: Positive = Field(
        50,
        description="points (step, value) per metric per job a sweep keeps of its streams (more are thinned "
        "evenly, the newest kept): what the history holds of each read",
    )
    connect_timeout_s: Positive = Field(15, description="per login node")
    command_timeout_s: Positive = Field(300, description="the one batched remote script")
    sacct_settle_s: Positive = Field(10, description="wait until window end + this before sacct: slurmdbd lags")
    chain_prefixes: Tup[str] = Field(("rl__",), description="RUNNING jobs whose earlier chain links are tailed too")
    catch_up_hours: Positive = Field(
        24, description="after sweeps that could not read a cluster, sacct reaches back at most this far"
    )


class StateSection(StrictModel):
    """sweep.yaml ``state:``: where the sweep's memory (the ledger, the cleanup backlog) is kept."""

    conn_id: str | None = Field(
        None,
        min_length=1,
        description="Airflow Connection of the state database (postgres; every worker reaches it); "
        "null = an SQLite file `<run_log_dir>/.sweep-state/state.db` (one machine)",
    )


class SweepConfig(StrictModel):
    """The whole of include/sweep.yaml, validated."""

    schedule: str = Field("0 */3 * * *", description="5-field cron of the data intervals (each run covers one)")
    timezone: str = Field("UTC", min_length=1, description="time zone of the schedule")
    watch: WatchSection = Field(
        WatchSection(), description="the light watch sweep every few minutes (fast rules, alerts, cancel hand-offs)"
    )
    run_log_dir: str | None = Field(
        None,
        description="where the dated run logs go: a folder, or an Airflow ObjectStoragePath (`s3://bucket/sweeps`, "
        "`gs://…`; then `state.conn_id` too); null = `$AIRFLOW_HOME/agent_logs`; `SWEEP_RUN_LOG_DIR` overrides",
    )
    run_log_conn_id: str | None = Field(
        None, min_length=1, description="the Connection an `s3://`/`gs://` run_log_dir is opened with (credentials)"
    )
    topic: str = Field(
        "monitor-sweep-{end:%H%M}Z", min_length=1, description="run-log name after the date: `YYYY-MM-DD_<topic>.md`"
    )
    buckets: Tup[BucketRule] = Field(
        description="the buckets in match order: `{name, patterns, cadence_minutes}`; names from "
        "RL, SFT, Datagen, Eval, Catch-all, each at most once; the last has no patterns (the catch-all)"
    )
    gather: GatherLimits = Field(GatherLimits(), description="limits of the one remote gather script per cluster")
    metrics: MetricsSection = Field(MetricsSection(), description="per-bucket patterns read from the log tails")
    rules: RulesSection = Field(RulesSection(), description="flag thresholds, tags, launch-fingerprint patterns")
    cleanup: CleanupSection = Field(
        CleanupSection(), description="completion -> cleanup by flavor: hub evidence first, then the deletes"
    )
    trackers: TrackersSection = Field(TrackersSection(), description="the eval-grid tracker harvest (repo null = off)")
    consolidate: ConsolidateSection = Field(
        ConsolidateSection(), description="datagen arrays: the consolidate job, then the tracker row (none = off)"
    )
    cancel: CancelConfig = Field(CancelConfig(), description="scancel of flagged jobs after a human's approval")
    hf_chain: HfChainSection = Field(HfChainSection(), description="the HF-only SFT chain's series (none = off)")
    daytona: DaytonaSection | None = Field(
        None,
        description="the Daytona snapshot count vs the org's HARD cap; at the cap STALE snapshots offered for cleanup "
        "through approval (null = not watched; a field left empty = OFF, said)",
    )
    deep_dive: DeepDiveSection = Field(
        DeepDiveSection(),
        description="the RL deep-dive probe: rollout layout, log signatures, KILL thresholds, serving LUT",
    )
    campaigns: Tup[CampaignSpec] = Field(
        (), description="`{name, jobs, policy, state}`: POLICY.md/STATE.md read each sweep, drift flagged, never edited"
    )
    history: HistorySection = Field(HistorySection(), description="the Parquet record of every sweep: where, how long")
    notify: NotifySection = Field(NotifySection(), description="digest channels (Slack, e-mail), cooldown, approvers")
    openmetrics: OpenMetricsSection = Field(
        OpenMetricsSection(), description="the Sweeps page's Prometheus endpoint `/sweeps/metrics`: label bounds, token"
    )
    tasks: TasksSection = Field(
        TasksSection(), description="every task's execution_timeout margin; retries of the read-only steps"
    )
    state: StateSection = Field(
        StateSection(), description="the state database of the ledger and cleanup backlog (`sweep-state` upgrades it)"
    )
    queues: QueuesSection = Field(
        QueuesSection(),
        description="the Celery queues of the hand-off DAGs' acts: in a fleet, only the workers trusted to act serve them",
    )
    db_clean: DbCleanSection = Field(
        DbCleanSection(),
        description="`airflow db clean` on a schedule, run by the deployment (no DAG: tasks have no metadata DB)",
    )

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str) -> str:
        if len(value.split()) != 5:
            raise ValueError(f"must be a 5-field cron string, got {value!r}")
        return value

    @field_validator("buckets")
    @classmethod
    def _bucket_order(cls, value: tuple[BucketRule, ...]) -> tuple[BucketRule, ...]:
        if not value:
            raise ValueError("must list at least one bucket")
        errors, seen = [], set()
        for i, rule in enumerate(value):
            if rule.name in seen:
                errors.append((f"[{i}].name", f"{rule.name} is listed twice"))
            seen.add(rule.name)
        if value[-1].patterns:
            errors.append(("", "the last bucket must be the catch-all (no patterns)"))
        if errors:
            raise CrossFieldErrors(errors)
        return value

    @model_validator(mode="after")
    def _one_builder_per_flavor(self) -> SweepConfig:
        """A flavor with a consolidate command and an upload command would build its dataset twice."""
        both = [
            (f"consolidate.flavors.{name}", f"cleanup.flavors.{name} also names an upload: give it one or the other")
            for name in self.consolidate.flavors
            if (flavor := self.cleanup.flavors.get(name)) is not None and flavor.upload
        ]
        if both:
            raise CrossFieldErrors(both)
        return self

    @model_validator(mode="after")
    def _series_holds_a_spike(self) -> SweepConfig:
        """The bounded series (gather.series_points) holds the earlier points a spike needs."""
        need = self.rules.sft_divergence.min_points
        if self.gather.series_points <= need:
            raise CrossFieldErrors(
                [
                    (
                        "gather.series_points",
                        f"must be above rules.sft_divergence.min_points ({need}): a spike needs"
                        " that many earlier points and the last one",
                    )
                ]
            )
        return self

    @model_validator(mode="after")
    def _waits_inside_the_act_bound(self) -> SweepConfig:
        """An act script's waits (checkpoint grace, confirm polls) end before its bound on the node,
        which ends before the reader's ``gather.command_timeout_s``: a wait longer than that would
        keep acting after the sweep gave up on it."""
        limit = max_act_wait_s(self.gather.command_timeout_s)
        timeout = f"gather.command_timeout_s ({self.gather.command_timeout_s})"
        rel = self.cancel.relaunch
        waits = [
            ("cancel.confirm_timeout_s", f"{self.cancel.confirm_timeout_s} s", self.cancel.confirm_timeout_s),
            ("cancel.relaunch.confirm_timeout_s", f"{rel.confirm_timeout_s} s", rel.confirm_timeout_s),
        ]
        for k, ser in enumerate(rel.series):
            what = f"{ser.grace_s} s + cancel.relaunch.confirm_timeout_s {rel.confirm_timeout_s} s"
            waits.append((f"cancel.relaunch.series[{k}].grace_s", what, ser.grace_s + rel.confirm_timeout_s))
        margin = ACT_BOUND_MARGIN_S + ACT_MIN_WAIT_S
        errors = [
            (
                key,
                f"{what} must be at most {limit} s ({timeout} minus {margin} s): the act is cut off on the "
                "node before the sweep stops reading it; lower it or raise gather.command_timeout_s",
            )
            for key, what, total in waits
            if total > limit
        ]
        if errors:
            raise CrossFieldErrors(errors)
        return self

    @property
    def bucket_names(self) -> list[str]:
        return [b.name for b in self.buckets]

    def cadence(self, bucket: str, overrides: dict[str, int] | None = None) -> int:
        """Minutes a RUNNING job in ``bucket`` may be silent; a cluster's ops.md may override."""
        if overrides and bucket in overrides:
            return overrides[bucket]
        for rule in self.buckets:
            if rule.name == bucket:
                return rule.cadence_minutes
        raise KeyError(bucket)
