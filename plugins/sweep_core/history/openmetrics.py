"""What the sweep tells Prometheus: the series of the Sweeps page's OpenMetrics endpoint
(``/sweeps/metrics``), drawn from the latest report sweep's and watch run's history rows, the
per-cluster last successes, the DAGs' last successful runs, the ledger's acts and the pending
approvals (:class:`Facts`, gathered by the plugin). Exposed with ``prometheus_client``'s own
exposition (text 0.0.4, or OpenMetrics 1.0 when the scraper asks for it).

Every label set is bounded: cluster, bucket, base state, rule, severity, kind and DAG come from the
config and the code; a job's id and name are labels only on the per-job series of at most
``job_series_limit`` RUNNING jobs (the stalest first), and the rest are counted in
``sweep_job_series_omitted`` (the per cluster/bucket maximum of the output age covers every job).
What cannot be read is absent, never zero: an UNKNOWN cluster has no job series, only its status, and
a source that could not be read is ``sweep_source_up 0``.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sweep_core.history.rows import CLUSTER, FLAG, JOB, QUOTA_PREFIX
from sweep_core.records.models import base_state_of
from sweep_core.records.vocab import Bucket
from sweep_core.safe.text import clean

if TYPE_CHECKING:  # imported where used: the plugin imports this module in every task process
    import pandas as pd
    from prometheus_client.metrics_core import Metric

NS = "sweep"
REPORT_DAG, WATCH_DAG = "monitor_cron_sweep", "monitor_cron_watch"
SOURCES = ("history", "watch_history", "ledger", "airflow_db")
NAME_CHARS = 120  # a job name label is cut to this many characters
# A job's main metric per bucket: (metric column(s), its series' name); eval and datagen as done/total.
MAIN_METRIC: dict[str, tuple[str, str]] = {
    Bucket.RL: ("reward", "job_reward"),
    Bucket.SFT: ("loss", "job_loss"),
    Bucket.EVAL: ("done/total", "job_progress_ratio"),
    Bucket.DATAGEN: ("chunks_done/chunks_total", "job_progress_ratio"),
}
MAIN_DOCS = {
    "job_reward": "An RL job's latest reward",
    "job_loss": "An SFT job's latest loss",
    "job_progress_ratio": "An eval job's trials done/total, a datagen job's chunks done/total",
}
OK_STATUSES = frozenset({"OK"})  # a cluster swept whole (PARTIAL: sacct unknown, not a success)


@dataclass(frozen=True)
class RunFacts:
    """One DAG's latest successful run, from Airflow's metadata DB: when it ended, how long it ran,
    each cluster's gather task's duration, and the DAG's cadence (None: unscheduled)."""

    dag_id: str
    end: dt.datetime | None = None
    duration_s: float | None = None
    gather_s: Mapping[str, float] = field(default_factory=dict)
    cadence_s: float | None = None


@dataclass
class Facts:
    """Everything one scrape reads; None where a source could not be read (``down`` says why)."""

    report: pd.DataFrame | None = None  # the latest report sweep's rows (no log tails)
    watch: pd.DataFrame | None = None  # the latest watch run's rows (clusters and flags)
    last_ok: Mapping[tuple[str, str], dt.datetime] = field(default_factory=dict)  # (dag, cluster) -> window end
    runs: Sequence[RunFacts] = ()
    acts: Counter[tuple[str, str]] | None = None  # (cluster, kind) -> acts the ledger holds
    approvals: Sequence[tuple[str, dt.datetime]] | None = None  # (dag, asked at) of each unanswered approval
    down: dict[str, str] = field(default_factory=dict)  # source -> why it could not be read
    now: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    job_series_limit: int = 200


def _ts(t: Any) -> float | None:
    """Seconds since the epoch of a datetime or pandas Timestamp (naive = UTC); None when missing."""
    if t is None or (isinstance(t, float) and math.isnan(t)):
        return None
    try:
        if getattr(t, "tzinfo", None) is None:
            t = t.replace(tzinfo=dt.UTC)
        return float(t.timestamp())
    except (AttributeError, ValueError, OverflowError):  # NaT, a string
        return None


def _num(v: Any) -> float | None:
    """A finite float, or None (missing, NaN, text)."""
    if isinstance(v, bool) or v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _text(v: Any) -> str:
    """A cell as text ("" when missing: _records turns pandas' missing values into None)."""
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def _records(frame: pd.DataFrame | None, record: str) -> list[dict[str, Any]]:
    """The rows of ``record`` kind as dicts (pandas' missing values as None)."""
    if frame is None or frame.empty or "record" not in frame:
        return []
    rows = frame[frame["record"] == record]
    rows = rows.astype(object).where(rows.notna(), None)
    return rows.to_dict("records")


def main_metric(row: Mapping[str, Any]) -> tuple[str, float] | None:
    """(series name, value) of a job row's main column: reward (RL), loss (SFT), done/total (Eval,
    Datagen: chunks, else nothing); None when its bucket has none or it is unreadable."""
    bucket = _text(row.get("bucket"))
    if bucket not in MAIN_METRIC:
        return None
    column, name = MAIN_METRIC[bucket]
    if "/" in column:
        done, total = (_num(row.get("m." + c)) for c in column.split("/"))
        if done is None or not total or total <= 0:
            return None
        return name, done / total
    value = _num(row.get("m." + column))
    return None if value is None else (name, value)


def last_successes(dag_id: str, frames: Iterable[pd.DataFrame | None]) -> dict[tuple[str, str], dt.datetime]:
    """(dag, cluster) -> the window end of the newest sweep (``frames`` newest first, read lazily)
    where the cluster's status was OK, for each cluster of the newest sweep; read no further once
    each has one. A cluster never OK in them has none."""
    out: dict[tuple[str, str], dt.datetime] = {}
    wanted: set[str] | None = None
    for frame in frames:
        rows = _records(frame, CLUSTER)
        if wanted is None:
            wanted = {_text(r.get("cluster")) for r in rows}
        for row in rows:
            key = (dag_id, _text(row.get("cluster")))
            if key not in out and _text(row.get("status")) in OK_STATUSES and row.get("window_end") is not None:
                end = row["window_end"]
                out[key] = end.to_pydatetime() if hasattr(end, "to_pydatetime") else end
        if wanted is not None and all((dag_id, c) in out for c in wanted):
            break
    return out


def cadence_seconds(cron: str | None, now: dt.datetime) -> float | None:
    """The interval between the next two runs of the 5-field ``cron`` after ``now``; None when unscheduled."""
    if not cron:
        return None
    from croniter import croniter  # Airflow's dependency: where this runs, Airflow is installed

    it = croniter(cron, now.astimezone(dt.UTC))
    first, second = it.get_next(dt.datetime), it.get_next(dt.datetime)
    return (second - first).total_seconds()


def acts_by_cluster(jobs: Mapping[str, Iterable[Mapping[str, Any]]]) -> Counter[tuple[str, str]]:
    """(cluster, kind) -> the acts the ledger holds (``jobs``: key ``<cluster>|<id>`` -> its acts)."""
    out: Counter[tuple[str, str]] = Counter()
    for key, acts in jobs.items():
        cluster = key.split("|", 1)[0]
        for act in acts:
            out[(cluster, str(act.get("kind") or "?"))] += 1
    return out


class _Families:
    """The metric families of one scrape, by name, created on first use."""

    def __init__(self) -> None:
        self.by_name: dict[str, Metric] = {}
        self._seen: set[tuple[str, tuple[str, ...]]] = set()

    def gauge(self, name: str, doc: str, labels: Sequence[str], values: Sequence[str], value: float) -> None:
        from prometheus_client.core import GaugeMetricFamily

        fam = self.by_name.get(name)
        if fam is None:
            fam = self.by_name[name] = GaugeMetricFamily(f"{NS}_{name}", doc, labels=list(labels))
        labelled = tuple(clean(v, newlines=False)[:NAME_CHARS] for v in values)
        if (name, labelled) in self._seen:  # a job twice in one sweep: one sample (a duplicate fails the scrape)
            return
        self._seen.add((name, labelled))
        fam.add_metric(list(labelled), value)

    def declare(self, name: str, doc: str, labels: Sequence[str]) -> None:
        """A family that has no sample this scrape still says what it is (HELP/TYPE)."""
        from prometheus_client.core import GaugeMetricFamily

        self.by_name.setdefault(name, GaugeMetricFamily(f"{NS}_{name}", doc, labels=list(labels)))


def _jobs(f: _Families, facts: Facts) -> None:
    jobs = _records(facts.report, JOB)
    counts: Counter[tuple[str, str, str]] = Counter()
    for j in jobs:
        counts[(_text(j.get("cluster")), _text(j.get("bucket")), base_state_of(_text(j.get("state"))) or "?")] += 1
    f.declare("jobs", "Jobs of the latest report sweep by cluster, bucket and state", ("cluster", "bucket", "state"))
    for (cluster, bucket, state), n in sorted(counts.items()):
        f.gauge("jobs", "", ("cluster", "bucket", "state"), (cluster, bucket, state), n)
    running = [j for j in jobs if base_state_of(_text(j.get("state"))) == "RUNNING"]
    age_max: dict[tuple[str, str], float] = {}
    for j in running:
        age = _num(j.get("minutes_since_output"))
        if age is not None:
            key = (_text(j.get("cluster")), _text(j.get("bucket")))
            age_max[key] = max(age_max.get(key, 0.0), age * 60)
    f.declare(
        "running_last_output_age_max_seconds",
        "Longest time since a RUNNING job's log last grew, per cluster and bucket (every job)",
        ("cluster", "bucket"),
    )
    for (cluster, bucket), age in sorted(age_max.items()):
        f.gauge("running_last_output_age_max_seconds", "", ("cluster", "bucket"), (cluster, bucket), age)

    # the per-job series: the stalest RUNNING jobs first, at most job_series_limit of them
    def silence(j: Mapping[str, Any]) -> float:
        age = _num(j.get("minutes_since_output"))
        return -1.0 if age is None else age

    running.sort(key=lambda j: (-silence(j), _text(j.get("job_id"))))
    kept, omitted = running[: max(0, facts.job_series_limit)], running[max(0, facts.job_series_limit) :]
    labels = ("cluster", "bucket", "job_id", "name")
    f.declare("job_last_output_age_seconds", "Time since a RUNNING job's log last grew (per job, bounded)", labels)
    for series, doc in MAIN_DOCS.items():
        f.declare(series, f"{doc} (per RUNNING job, bounded)", labels)
    for j in kept:
        values = (_text(j.get("cluster")), _text(j.get("bucket")), _text(j.get("job_id")), _text(j.get("name")))
        age = _num(j.get("minutes_since_output"))
        if age is not None:
            f.gauge("job_last_output_age_seconds", "", labels, values, age * 60)
        main = main_metric(j)
        if main is not None:
            f.gauge(main[0], "", labels, values, main[1])
    if facts.report is not None:
        f.gauge(
            "job_series_omitted",
            f"RUNNING jobs past the limit of per-job series ({facts.job_series_limit})",
            (),
            (),
            len(omitted),
        )


def _clusters(f: _Families, facts: Facts) -> None:
    f.declare("cluster_status", "1 for each cluster's status in the latest report sweep", ("cluster", "status"))
    f.declare(
        "quota_headroom_ratio",
        "1 - used/limit of a cluster's worst quota (soft, else hard, else capacity)",
        ("cluster", "kind", "limit"),
    )
    for row in _records(facts.report, CLUSTER):
        cluster = _text(row.get("cluster"))
        f.gauge("cluster_status", "", ("cluster", "status"), (cluster, _text(row.get("status")) or "?"), 1)
        used = _num(row.get(QUOTA_PREFIX + "used"))
        kind = _text(row.get(QUOTA_PREFIX + "kind")) or "inodes"
        for limit in ("soft", "hard", "capacity"):
            cap = _num(row.get(QUOTA_PREFIX + limit))
            if cap and cap > 0 and used is not None:
                f.gauge(
                    "quota_headroom_ratio", "", ("cluster", "kind", "limit"), (cluster, kind, limit), 1 - used / cap
                )
                unit = "bytes" if kind == "bytes" else "inodes"
                f.gauge(
                    f"quota_headroom_{unit}",
                    f"Limit minus use of a cluster's worst quota, in {unit}",
                    ("cluster", "limit"),
                    (cluster, limit),
                    cap - used,
                )
                break
        status = _text(row.get("quota_status"))
        if status:
            f.gauge(
                "quota_status",
                "1 for each cluster's quota verdict (OK, NEAR, OVER, UNKNOWN)",
                ("cluster", "status"),
                (cluster, status),
                1,
            )


def _flags(f: _Families, facts: Facts) -> None:
    labels = ("source", "cluster", "rule", "severity")
    f.declare("flags", "Open flags of the latest report sweep and watch run by rule and severity", labels)
    for source, frame in (("report", facts.report), ("watch", facts.watch)):
        counts = Counter(
            (_text(r.get("cluster")), _text(r.get("rule")) or "?", _text(r.get("severity")) or "?")
            for r in _records(frame, FLAG)
        )
        for (cluster, rule, severity), n in sorted(counts.items()):
            f.gauge("flags", "", labels, (source, cluster, rule, severity), n)
        if frame is not None and not frame.empty and "window_end" in frame:
            end = _ts(frame["window_end"].iloc[0])
            if end is not None:
                f.gauge(
                    "history_window_end_timestamp_seconds",
                    "Window end of the latest sweep of each history",
                    ("source",),
                    (source,),
                    end,
                )


def _runs(f: _Families, facts: Facts) -> None:
    f.declare(
        "last_success_timestamp_seconds",
        "Window end of the newest sweep (report or watch) that swept the cluster whole (status OK)",
        ("dag", "cluster"),
    )
    for (dag, cluster), end in sorted(facts.last_ok.items()):
        t = _ts(end)
        if t is not None:
            f.gauge("last_success_timestamp_seconds", "", ("dag", "cluster"), (dag, cluster), t)
    for run in facts.runs:
        if run.cadence_s:
            f.gauge("dag_cadence_seconds", "The DAG's schedule interval", ("dag",), (run.dag_id,), run.cadence_s)
        t = _ts(run.end)
        if t is not None:
            f.gauge(
                "dag_last_success_timestamp_seconds",
                "End of the DAG's latest successful run",
                ("dag",),
                (run.dag_id,),
                t,
            )
        if run.duration_s is not None:
            f.gauge(
                "dag_last_success_duration_seconds",
                "Duration of the DAG's latest successful run",
                ("dag",),
                (run.dag_id,),
                run.duration_s,
            )
        for cluster, secs in sorted(run.gather_s.items()):
            f.gauge(
                "gather_duration_seconds",
                "Each cluster's gather task in the DAG's latest successful run",
                ("dag", "cluster"),
                (run.dag_id, cluster),
                secs,
            )


def _acts(f: _Families, facts: Facts) -> None:
    if facts.acts is not None:
        f.declare(
            "ledger_acts",
            "Acts and answers the ledger holds per job (kept 50 per job) by cluster and kind",
            ("cluster", "kind"),
        )
        for (cluster, kind), n in sorted(facts.acts.items()):
            f.gauge("ledger_acts", "", ("cluster", "kind"), (cluster, kind), n)
    if facts.approvals is not None:
        pending: Counter[str] = Counter(dag for dag, _ in facts.approvals)
        oldest: dict[str, float] = {}
        for dag, asked in facts.approvals:
            t = _ts(asked)
            if t is not None:
                oldest[dag] = min(oldest.get(dag, t), t)
        f.declare("pending_approvals", "Human approvals the sweep's DAGs wait for", ("dag",))
        for dag, n in sorted(pending.items()):
            f.gauge("pending_approvals", "", ("dag",), (dag,), n)
            if dag in oldest:
                f.gauge(
                    "pending_approval_oldest_timestamp_seconds",
                    "When the oldest pending approval was asked",
                    ("dag",),
                    (dag,),
                    oldest[dag],
                )


def families(facts: Facts) -> list[Metric]:
    """Every metric family of one scrape, in a fixed order."""
    f = _Families()
    for source in SOURCES:
        f.gauge(
            "source_up",
            "1 when the scrape could read the source, else 0",
            ("source",),
            (source,),
            0 if source in facts.down else 1,
        )
    _jobs(f, facts)
    _clusters(f, facts)
    _flags(f, facts)
    _runs(f, facts)
    _acts(f, facts)
    return list(f.by_name.values())


def exposition(metrics: Sequence[Metric], accept: str = "") -> tuple[bytes, str]:
    """(body, content type) of ``metrics`` in the format ``accept`` asks for: OpenMetrics 1.0 when
    it names ``application/openmetrics-text``, else Prometheus' text format 0.0.4."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.exposition import choose_encoder

    class _Scrape:
        def collect(self) -> list[Metric]:
            return list(metrics)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Scrape())
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type
