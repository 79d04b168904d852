"""Fan-in: bucketing, liveness against the remote clock, and the rendered box tables."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sweep_core.config.sweep import SweepConfigError, load_sweep_config, parse_sweep_config
from sweep_core.fanin.buckets import bucket_for
from sweep_core.fanin.report import flagged_lines, render_run_log, run_log_path, run_note
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

ROOT = Path(__file__).resolve().parents[2]
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")
NOW = 1_764_680_000.0


@pytest.mark.parametrize(
    ("name", "bucket"),
    [
        ("rl__a3_qwen8b", "RL"),
        ("sft__delphi_cell3", "SFT"),
        ("datagen__minimax_chunk", "Datagen"),
        ("eval-math500_qwen", "Eval"),
        ("delphi__eval__cell3", "Eval"),
        ("consolidate_minimax", "Catch-all"),
        ("hf_upload", "Catch-all"),
        ("rl_not_double_underscore", "Catch-all"),
        ("RL__upper", "Catch-all"),
        ("", "Catch-all"),
    ],
)
def test_bucket_by_name(name: str, bucket: str) -> None:
    assert bucket_for(name, CONFIG.buckets) == bucket


def job(jid: str, name: str, mtime: float | None, source: str = "squeue", **kw: str) -> Job:
    state = kw.pop("state", "RUNNING" if source == "squeue" else "COMPLETED")
    return Job(cluster="c1", job_id=jid, name=name, state=state, source=source, log_mtime=mtime, **kw)


def snapshot() -> ClusterSnapshot:
    return ClusterSnapshot(
        "c1",
        "slurm",
        ClusterStatus.OK,
        login_node="login02",
        remote_now=NOW,
        running=[
            job("1", "rl__fresh", NOW - 5 * 60),
            job("2", "rl__wedged", NOW - 3 * 3600 - 5 * 60),
            job("3", "sft__nolog", None, log_note="log not readable: Permission denied"),
        ],
        finished=[
            job("4", "datagen__done", None, source="sacct", end="2026-12-02T11:00:00", exit_code="0:0"),
            job("5", "eval-x", None, source="sacct", state="FAILED", exit_code="1:0"),
        ],
    )


def test_liveness_uses_bucket_cadence_and_marks_stale() -> None:
    s = snapshot()
    result = run_fan_in([s], CONFIG)
    fresh, wedged, nolog = s.running
    assert fresh.minutes_since_output == pytest.approx(5) and not fresh.stale
    assert wedged.stale and wedged.minutes_since_output == pytest.approx(185)
    assert nolog.minutes_since_output is None and not nolog.stale
    rl = result.rendered.tables["RL"]
    assert "last output 5 min ago" in rl
    assert "last output 3h05m ago STALE (>30m)" in rl


def test_ops_md_cadence_override_wins() -> None:
    s = snapshot()
    run_fan_in([s], CONFIG, {"c1": {"RL": 240}})
    assert not s.running[1].stale


def test_tables_are_box_drawing_one_per_bucket_then_pending() -> None:
    result = run_fan_in([snapshot()], CONFIG)
    assert list(result.rendered.tables) == ["RL", "SFT", "Datagen", "Eval", "Catch-all", "Pending"]
    for table in result.rendered.tables.values():
        assert table.startswith("┌") and "┬" in table and table.rstrip().endswith("┘")
        assert "|---" not in table and "| --" not in table
        assert "Cluster" in table.splitlines()[1]
    assert "(no jobs)" in result.rendered.tables["Catch-all"]
    assert "Permission denied" in result.rendered.tables["SFT"]
    assert "login02" in result.rendered.overview


def test_unknown_cluster_is_said_once_in_the_overview_not_in_every_bucket() -> None:
    bad = ClusterSnapshot(
        "c2",
        "slurm",
        ClusterStatus.UNKNOWN,
        running=None,
        finished=[],
        notes=["running set UNKNOWN: squeue exited 1: slurm_load_jobs error: Socket timed out"],
    )
    result = run_fan_in([snapshot(), bad], CONFIG)
    for table in result.rendered.tables.values():  # no placeholder row per bucket (issue 18)
        assert "c2" not in table and "UNKNOWN" not in table
    row = result.rendered.overview.split("c2")[1].splitlines()[0]
    assert "?" in row and "UNKNOWN" in row  # running count "?" not 0
    notes = [ln.rstrip("│ ").rsplit("│", 1)[-1].strip() for ln in result.rendered.overview.splitlines()]
    assert "running jobs UNKNOWN (not none): no RUNNING rows for it in the bucket tables" in " ".join(notes)
    flags = flagged_lines(result)
    assert any(f.startswith("[cluster-unknown] c2") for f in flags)
    assert any("[liveness_stale]" in f and "rl__wedged" in f for f in flags)
    assert any("[genuine_failure]" in f and "eval-x" in f for f in flags)


def test_skipped_and_dropped_clusters_do_not_add_unknown_rows() -> None:
    skipped = ClusterSnapshot("j", "slurm", ClusterStatus.SKIPPED, notes=["j: skipped until 2026-07-12"])
    result = run_fan_in([skipped], CONFIG)
    assert "UNKNOWN" not in result.rendered.tables["RL"]
    assert "skipped until 2026-07-12" in result.rendered.overview


def test_run_log_and_note(tmp_path: Path) -> None:
    import datetime as dt

    result = run_fan_in([snapshot()], CONFIG)
    end = dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.UTC)
    path = run_log_path(tmp_path, end, CONFIG.topic)
    assert path.name == "2026-12-02_monitor-sweep-1200Z.md"
    text = render_run_log(
        result,
        ROOT / "include" / "templates",
        dag_id="d",
        run_id="r",
        window_start="2026-12-02T09:00:00+00:00",
        window_end=end.isoformat(),
    )
    assert "## RL" in text and "┌" in text and "rl__wedged" in text
    assert "## Actions taken / flagged" in text and "[liveness_stale]" in text
    note = run_note(result, path)
    assert len(note) <= 1000 and "RL 2" in note


def test_sweep_config_errors() -> None:
    with pytest.raises(SweepConfigError, match="catch-all"):
        parse_sweep_config("buckets: [{name: RL, patterns: ['^rl__']}]")
    with pytest.raises(SweepConfigError, match="bad regex"):
        parse_sweep_config("buckets: [{name: RL, patterns: ['(']}, {name: C}]")
    with pytest.raises(SweepConfigError, match="cron"):
        parse_sweep_config("schedule: hourly\nbuckets: [{name: C}]")


def test_sweep_yaml_duplicate_key_is_rejected_naming_the_key() -> None:
    # Before: the second `schedule:` silently won.
    with pytest.raises(SweepConfigError, match="'schedule' is given twice") as err:
        parse_sweep_config("schedule: '0 * * * *'\nschedule: '0 0 * * *'\nbuckets: [{name: C}]", "/x/sweep.yaml")
    assert "/x/sweep.yaml" in str(err.value)


def test_rows_sort_running_first_then_numeric_job_id() -> None:
    from sweep_core.fanin.render import job_sort_key

    jobs = [
        job("10", "a", 1.0),
        job("9", "b", 1.0),
        job("3_10", "c", 1.0),
        job("3_2", "d", 1.0),
        job("2", "e", None, source="sacct"),
    ]
    assert [j.job_id for j in sorted(jobs, key=job_sort_key)] == ["3_2", "3_10", "9", "10", "2"]


# --- per-job isolation (issue 9, item 4) ---------------------------------------------------------

LOGS = ROOT / "tests" / "fixtures" / "logs"


def _healthy(jid: str) -> Job:
    return job(jid, f"rl__ok_{jid}", NOW - 60, log_tail=(LOGS / "rl_healthy.out").read_text())


# Each broken job breaks one fan-in step with data as a bad gather record / XCom could carry it.
BROKEN = {
    "bucket": lambda: job("90", None, NOW - 60),  # type: ignore[arg-type]  # no name
    "liveness": lambda: job("91", "rl__x", "yesterday"),  # type: ignore[arg-type]  # mtime not a number
    "metrics": lambda: job("92", "rl__x", NOW - 60, log_tail=None),  # type: ignore[arg-type]  # no text
    # stale, and its node count is text: the liveness_stale rule cannot compare it
    "rules": lambda: job("93", "rl__x", NOW - 10 * 3600, num_nodes="four"),  # type: ignore[arg-type]
    "render": lambda: job(12345, "datagen__x", None, source="sacct"),  # type: ignore[arg-type]  # id not text
}


@pytest.mark.parametrize("step", BROKEN)
def test_one_broken_job_costs_only_itself_in_every_fan_in_step(step: str) -> None:
    bad = BROKEN[step]()
    snap = ClusterSnapshot(
        "c1", "slurm", ClusterStatus.OK, remote_now=NOW, running=[_healthy("1"), _healthy("2")], finished=[]
    )
    (snap.finished if bad.source == "sacct" else snap.running).insert(1, bad)  # type: ignore[union-attr]
    result = run_fan_in([snap], CONFIG)
    assert any(e.startswith(f"{step} failed on this job" if step != "rules" else "rule ") for e in bad.errors), (
        bad.errors
    )
    for ok in (snap.running or [])[::2]:  # the healthy jobs are intact
        assert ok.errors == [] and ok.metrics["step"] == 45 and ok.minutes_since_output == 1.0
    text = result.rendered.text()
    assert "rl__ok_1" in text and "rl__ok_2" in text and "failed on this job" in text


def test_nan_and_inf_metrics_survive_the_xcom_json_and_raise_the_collapse_flag() -> None:
    import json

    nan_job = job("7", "rl__nan_run", NOW - 60, log_tail=(LOGS / "rl_nan.out").read_text())
    snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, remote_now=NOW, running=[nan_job], finished=[])
    result = run_fan_in([snap], CONFIG)
    wire = json.dumps([snap.to_dict()], allow_nan=False)  # what the bucket task pushes to XCom
    back = ClusterSnapshot.from_dict(json.loads(wire)[0]).running[0]  # type: ignore[index]
    assert math.isnan(back.metrics["reward"]) and back.metrics["grad_norm"] == math.inf
    assert math.isnan(back.metrics["series"][-1]["reward"])
    row = next(ln for ln in result.rendered.tables["RL"].splitlines() if "rl__nan_run" in ln)
    assert "nan" in row and "inf" in row and "[rl_collapse]" in row
    assert any(f.rule == "rl_collapse" and f.severity == "critical" and "NaN" in f.message for f in result.flags)
