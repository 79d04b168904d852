"""The OpenMetrics endpoint's series (sweep_core.history.openmetrics) from history rows written by the
history's own writer (sweep_frame), read back with prometheus_client's parsers: counts by cluster,
bucket and state, bounded per-job labels, absent (never zero) what could not be read."""

from __future__ import annotations

import datetime as dt
from collections import Counter

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from prometheus_client.parser import text_string_to_metric_families as parse_text

from sweep_core.history.openmetrics import (
    REPORT_DAG,
    WATCH_DAG,
    Facts,
    RunFacts,
    acts_by_cluster,
    exposition,
    families,
    last_successes,
)
from sweep_core.history.rows import sweep_frame
from sweep_core.ledger.entries import LedgerEntry
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job

END = dt.datetime(2026, 12, 6, 12, tzinfo=dt.UTC)


def _frame(snaps: list[ClusterSnapshot], flags: list[Flag] = (), end: dt.datetime = END):  # noqa: ANN202
    return sweep_frame(snaps, list(flags), run_id="scheduled__x", window_start=end - dt.timedelta(hours=3),
                       window_end=end)  # fmt: skip


def _running(cluster: str, job_id: str, bucket: str, age: float | None, **metrics: float) -> Job:
    return Job(cluster, job_id, f"{bucket.lower()}__run_{job_id}", "RUNNING", "squeue", bucket=bucket,
               minutes_since_output=age, metrics=dict(metrics))  # fmt: skip


def _samples(body: bytes, openmetrics: bool = False) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    parse = parse_om if openmetrics else parse_text
    out = {}
    for fam in parse(body.decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _get(samples: dict, metric: str, /, **labels: str) -> float | None:
    return samples.get((metric, tuple(sorted(labels.items()))))


def test_jobs_by_cluster_bucket_and_state_flags_by_rule_and_severity_and_the_main_metrics() -> None:
    hpc = ClusterSnapshot("hpc", "slurm", ClusterStatus.OK, running=[
        _running("hpc", "1", "RL", 4.0, reward=-0.8, step=120),
        _running("hpc", "2", "RL", 95.0, reward=0.31),
        _running("hpc", "3", "SFT", 2.0, loss=1.25),
        _running("hpc", "4", "Eval", 1.0, done=30, total=120),
    ], finished=[
        Job("hpc", "5", "sft__done", "COMPLETED", "sacct", bucket="SFT"),
        Job("hpc", "6", "sft__gone", "CANCELLED by 1001", "sacct", bucket="SFT"),
    ], quota={"status": "NEAR", "worst": {"used": 900_000, "soft": 1_000_000, "kind": "inodes"}})  # fmt: skip
    flags = [Flag(rule="liveness_stale", severity="warn", cluster="hpc", job_id="2", message="no output for 95 min"),
             Flag(rule="rl_collapse", severity="critical", cluster="hpc", job_id="1", message="collapse")]  # fmt: skip
    body, ctype = exposition(families(Facts(report=_frame([hpc], flags))))
    assert ctype.startswith("text/plain")
    s = _samples(body)
    assert _get(s, "sweep_jobs", cluster="hpc", bucket="RL", state="RUNNING") == 2
    assert _get(s, "sweep_jobs", cluster="hpc", bucket="SFT", state="CANCELLED") == 1  # "by <uid>" is no label
    assert _get(s, "sweep_flags", source="report", cluster="hpc", rule="rl_collapse", severity="critical") == 1
    job = {"cluster": "hpc", "bucket": "RL", "job_id": "1", "name": "rl__run_1"}
    assert _get(s, "sweep_job_reward", **job) == -0.8  # a negative reward is exported as it is
    assert _get(s, "sweep_job_last_output_age_seconds", **job) == 240
    assert _get(s, "sweep_job_loss", cluster="hpc", bucket="SFT", job_id="3", name="sft__run_3") == 1.25
    assert _get(s, "sweep_job_progress_ratio", cluster="hpc", bucket="Eval", job_id="4", name="eval__run_4") == 0.25
    assert _get(s, "sweep_running_last_output_age_max_seconds", cluster="hpc", bucket="RL") == 95 * 60
    assert abs(_get(s, "sweep_quota_headroom_ratio", cluster="hpc", kind="inodes", limit="soft") - 0.1) < 1e-9
    assert _get(s, "sweep_quota_headroom_inodes", cluster="hpc", limit="soft") == 100_000
    assert _get(s, "sweep_quota_status", cluster="hpc", status="NEAR") == 1
    assert _get(s, "sweep_cluster_status", cluster="hpc", status="OK") == 1


def test_openmetrics_when_the_scraper_asks_for_it() -> None:
    hpc = ClusterSnapshot("hpc", "slurm", ClusterStatus.OK, running=[_running("hpc", "1", "RL", 3.0, reward=0.5)])
    body, ctype = exposition(families(Facts(report=_frame([hpc]))), "application/openmetrics-text; version=1.0.0")
    assert ctype.startswith("application/openmetrics-text") and body.rstrip().endswith(b"# EOF")
    s = _samples(body, openmetrics=True)
    assert _get(s, "sweep_job_reward", cluster="hpc", bucket="RL", job_id="1", name="rl__run_1") == 0.5


def test_an_unknown_cluster_has_no_job_series_never_zero_jobs() -> None:
    down = ClusterSnapshot("far", "slurm", ClusterStatus.UNKNOWN, notes=["squeue: Socket timed out"])
    up = ClusterSnapshot("hpc", "slurm", ClusterStatus.OK, running=[_running("hpc", "1", "SFT", 1.0, loss=2.0)])
    s = _samples(exposition(families(Facts(report=_frame([down, up]))))[0])
    assert _get(s, "sweep_cluster_status", cluster="far", status="UNKNOWN") == 1
    assert not [k for k in s if k[0] == "sweep_jobs" and ("cluster", "far") in k[1]]
    assert _get(s, "sweep_jobs", cluster="hpc", bucket="SFT", state="RUNNING") == 1


def test_per_job_labels_are_bounded_the_stalest_kept_and_the_rest_counted() -> None:
    jobs = [_running("hpc", str(i), "RL", float(i), reward=0.1) for i in range(250)]
    snap = ClusterSnapshot("hpc", "slurm", ClusterStatus.OK, running=jobs)
    s = _samples(exposition(families(Facts(report=_frame([snap]), job_series_limit=200)))[0])
    ages = {dict(k[1])["job_id"] for k in s if k[0] == "sweep_job_last_output_age_seconds"}
    assert len(ages) == 200 and "249" in ages and "0" not in ages  # the 200 stalest
    assert _get(s, "sweep_job_series_omitted") == 50
    assert _get(s, "sweep_running_last_output_age_max_seconds", cluster="hpc", bucket="RL") == 249 * 60
    assert len({dict(k[1])["job_id"] for k in s if k[0] == "sweep_job_reward"}) == 200
    s0 = _samples(exposition(families(Facts(report=_frame([snap]), job_series_limit=0)))[0])
    assert not [k for k in s0 if "job_id" in dict(k[1])] and _get(s0, "sweep_job_series_omitted") == 250


def test_unreadable_values_are_absent_and_hostile_names_are_escaped() -> None:
    nasty = 'rl__x"} evil{a="1"\nsweep_fake 1'
    jobs = [Job("hpc", "1", nasty, "RUNNING", "squeue", bucket="RL", minutes_since_output=None,
                metrics={"reward": float("nan")}),
            _running("hpc", "2", "Eval", 1.0, done=3, total=0),
            _running("hpc", "3", "Datagen", 1.0, chunks_done=2, chunks_total=8)]  # fmt: skip
    snap = ClusterSnapshot("hpc", "slurm", ClusterStatus.OK, running=jobs, quota={"status": "UNKNOWN"})
    body = exposition(families(Facts(report=_frame([snap]))))[0]
    s = _samples(body)
    assert not [k for k in s if k[0] in ("sweep_job_reward", "sweep_fake")]  # NaN: absent; no injected series
    assert not [k for k in s if k[0] == "sweep_job_last_output_age_seconds" and dict(k[1])["job_id"] == "1"]
    assert not [k for k in s if k[0] == "sweep_job_progress_ratio" and dict(k[1])["job_id"] == "2"]  # total 0
    assert (
        _get(s, "sweep_job_progress_ratio", cluster="hpc", bucket="Datagen", job_id="3", name="datagen__run_3") == 0.25
    )
    assert not [k for k in s if k[0].startswith("sweep_quota_headroom")]
    assert _get(s, "sweep_quota_status", cluster="hpc", status="UNKNOWN") == 1


def test_no_history_is_sources_and_help_only() -> None:
    s = _samples(exposition(families(Facts(down={"history": "EIO", "ledger": "locked"})))[0])
    assert _get(s, "sweep_source_up", source="history") == 0 and _get(s, "sweep_source_up", source="ledger") == 0
    assert _get(s, "sweep_source_up", source="watch_history") == 1
    assert not [k for k in s if k[0] in ("sweep_jobs", "sweep_flags", "sweep_job_series_omitted")]


def test_last_successes_runs_acts_and_approvals() -> None:
    earlier = _frame([ClusterSnapshot("hpc", "slurm", ClusterStatus.OK),
                      ClusterSnapshot("far", "slurm", ClusterStatus.OK)], end=END - dt.timedelta(hours=3))  # fmt: skip
    latest = _frame([ClusterSnapshot("hpc", "slurm", ClusterStatus.OK),
                     ClusterSnapshot("far", "slurm", ClusterStatus.UNREACHABLE)])  # fmt: skip
    ok = last_successes(REPORT_DAG, [latest, earlier, None])
    assert ok == {(REPORT_DAG, "hpc"): END, (REPORT_DAG, "far"): END - dt.timedelta(hours=3)}
    watch_flags = [Flag(rule="liveness_stale", severity="warn", cluster="hpc", job_id="9", message="silent")]
    ledger_jobs = {"hpc|1": LedgerEntry("hpc", "1", "a", acts=[{"kind": "cancel"}, {"kind": "reject"}]),
                   "hpc|2": LedgerEntry("hpc", "2", "b", acts=[{"kind": "cancel"}]),
                   "far|3": LedgerEntry("far", "3", "c")}  # fmt: skip
    facts = Facts(
        report=latest,
        watch=_frame([ClusterSnapshot("hpc", "slurm", ClusterStatus.OK)], watch_flags),
        last_ok=ok,
        runs=[
            RunFacts(REPORT_DAG, END + dt.timedelta(minutes=4), 240.0, {"hpc": 31.5}, 3 * 3600.0),
            RunFacts(WATCH_DAG, None, None, {}, 300.0),
        ],  # fmt: skip
        acts=acts_by_cluster({k: e.acts for k, e in ledger_jobs.items()}),
        approvals=[("sweep_cancel", END - dt.timedelta(minutes=30)), ("sweep_cancel", END)],
    )
    s = _samples(exposition(families(facts))[0])
    assert _get(s, "sweep_last_success_timestamp_seconds", dag=REPORT_DAG, cluster="far") == END.timestamp() - 3 * 3600
    assert _get(s, "sweep_dag_last_success_duration_seconds", dag=REPORT_DAG) == 240
    assert _get(s, "sweep_dag_cadence_seconds", dag=WATCH_DAG) == 300
    assert _get(s, "sweep_dag_last_success_timestamp_seconds", dag=WATCH_DAG) is None  # never succeeded: absent
    assert _get(s, "sweep_gather_duration_seconds", dag=REPORT_DAG, cluster="hpc") == 31.5
    assert _get(s, "sweep_flags", source="watch", cluster="hpc", rule="liveness_stale", severity="warn") == 1
    assert _get(s, "sweep_ledger_acts", cluster="hpc", kind="cancel") == 2
    assert _get(s, "sweep_pending_approvals", dag="sweep_cancel") == 2
    assert _get(s, "sweep_pending_approval_oldest_timestamp_seconds", dag="sweep_cancel") == END.timestamp() - 1800
    assert Counter(k[0] for k in s)["sweep_source_up"] == 4


def test_the_shipped_alert_rules_and_dashboard_name_only_series_the_endpoint_exports() -> None:
    import json
    import re

    import yaml
    from sweep_runner import ROOT

    snap = ClusterSnapshot("hpc", "slurm", ClusterStatus.OK, running=[
        _running("hpc", "1", "RL", 4.0, reward=0.1), _running("hpc", "2", "SFT", 4.0, loss=1.0),
        _running("hpc", "3", "Eval", 4.0, done=1, total=2)], quota={"status": "OK", "worst": {"used": 1, "soft": 2}})  # fmt: skip
    flags = [Flag(rule="rl_collapse", severity="critical", cluster="hpc", job_id="1", message="x")]
    full = Facts(report=_frame([snap], flags), watch=_frame([snap], flags), last_ok={(REPORT_DAG, "hpc"): END},
                 runs=[RunFacts(REPORT_DAG, END, 1.0, {"hpc": 1.0}, 60.0)], acts=Counter({("hpc", "cancel"): 1}),
                 approvals=[("sweep_cancel", END)])  # fmt: skip
    exported = {m.name for m in families(full)}
    monitoring = ROOT / "include" / "monitoring"
    rules = yaml.safe_load((monitoring / "prometheus" / "sweep_alerts.yml").read_text())
    exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    dashboard = json.loads((monitoring / "grafana" / "sweep_dashboard.json").read_text())
    exprs += [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    named = {n for e in exprs for n in re.findall(r"\bsweep_[a-z_]+", e)}
    assert len(named) >= 15 and named <= exported, named - exported


def test_a_job_listed_twice_gives_one_sample_so_the_scrape_stays_valid() -> None:
    twice = [_running("hpc", "1", "RL", 5.0, reward=0.5), _running("hpc", "1", "RL", 5.0, reward=0.5)]
    body = exposition(
        families(Facts(report=_frame([ClusterSnapshot("hpc", "slurm", ClusterStatus.OK, running=twice)])))
    )[0]
    assert body.count(b'sweep_job_reward{bucket="RL",cluster="hpc",job_id="1"') == 1
    assert _get(_samples(body), "sweep_jobs", cluster="hpc", bucket="RL", state="RUNNING") == 2
