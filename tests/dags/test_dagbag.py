"""The DAG file: imports clean, one group per ops.md cluster, fan-in tasks, params, timetable."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(ROOT / "dags"))
    assert bag.import_errors == {}
    return bag.get_dag("monitor_cron_sweep")


def test_one_group_per_cluster_and_fan_in(dag) -> None:
    from sweep_core.config.ops import cluster_names

    clusters = cluster_names(ROOT / "include" / "ops")
    assert set(dag.task_group.children) >= {*clusters, "bucket", "render", "verdict"}
    # the fan-in is two tasks: log tails cross XCom once (gather -> bucket)
    assert not {"liveness", "metrics", "rules", "report"} & set(dag.task_ids)
    for c in clusters:
        assert {f"{c}.step0", f"{c}.gather"} <= set(dag.task_ids)
        assert dag.get_task(f"{c}.gather").upstream_task_ids == {f"{c}.step0"}
    assert type(dag.get_task("coreweave.gather")).__name__ == "IrisGatherOperator"
    assert type(dag.get_task("leonardo.gather")).__name__ == "SlurmGatherOperator"
    bucket = dag.get_task("bucket")
    assert {f"{c}.gather" for c in clusters} == bucket.upstream_task_ids
    assert bucket.trigger_rule == "all_done"
    assert dag.get_task("render").upstream_task_ids == {"bucket"}
    assert dag.get_task("verdict").upstream_task_ids == {"render"}
    assert dag.get_task("handoffs").upstream_task_ids == {"render"}


def test_params_and_run_policy(dag) -> None:
    assert set(dag.params) == {"clusters", "lookback_hours", "dry_run", "confirm_ledger_reset"}
    assert dag.params["confirm_ledger_reset"] is False  # acts held after a ledger recovery until set
    assert dag.params["dry_run"] is False
    assert dag.max_active_runs == 1
    assert dag.catchup is False


def test_clusters_is_an_optional_multi_select_of_the_ops_md_clusters(dag) -> None:
    """The trigger form shows an array param as a multi-select only with `examples`, and marks it
    required unless its type allows null (a cleared multi-select sends null)."""
    from sweep_core.config.ops import cluster_names

    schema = dag.params.get_param("clusters").schema
    assert "null" in schema["type"] and "array" in schema["type"]
    assert schema["examples"] == cluster_names(ROOT / "include" / "ops") == schema["items"]["enum"]
    dag.params.get_param("clusters").resolve(None)  # cleared: every active cluster
    dag.params.get_param("clusters").resolve(["leonardo"])


def test_hand_off_dags_are_not_paused_when_first_seen() -> None:
    """A hand-off the sweep triggers runs without someone unpausing its DAG (guards re-validate)."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(ROOT / "dags"))
    assert bag.import_errors == {}
    for dag_id in ("sweep_cleanup", "sweep_cancel", "sweep_hf_chain", "sweep_tracker_harvest", "sweep_rl_deep_dive"):
        assert bag.get_dag(dag_id).is_paused_upon_creation is False, dag_id
    assert bag.get_dag("monitor_cron_sweep").is_paused_upon_creation is not False  # unpaused by a person


def test_cron_data_interval_tiles_time(dag) -> None:
    from airflow.sdk import CronDataIntervalTimetable
    from airflow.timetables.interval import CronDataIntervalTimetable as SchedulerTimetable

    assert isinstance(dag.timetable, CronDataIntervalTimetable)
    # The scheduler's side of the same timetable: what the data intervals really are.
    tt = SchedulerTimetable(dag.timetable.expression, dag.timetable.timezone)
    start = dt.datetime(2026, 3, 1, 0, 0, tzinfo=dt.UTC)
    first = tt.infer_manual_data_interval(run_after=start + dt.timedelta(hours=4, minutes=10))
    assert first.end - first.start == dt.timedelta(hours=3)
    # Consecutive intervals: each starts where the previous ended (no gap, no overlap).
    end = first.end
    for _ in range(4):
        nxt = tt.infer_manual_data_interval(run_after=end + dt.timedelta(hours=3))
        assert nxt.start == end
        end = nxt.end


def test_sweep_cancel_scancels_only_downstream_of_the_approval() -> None:
    from airflow.dag_processing.dagbag import DagBag
    from airflow.providers.standard.operators.hitl import HITLOperator

    bag = DagBag(str(ROOT / "dags"))
    assert bag.import_errors == {}
    dag = bag.get_dag("sweep_cancel")
    approve = dag.get_task("approve")  # mapped over the jobs to ask: one answer per job
    assert issubclass(approve.operator_class, HITLOperator)
    assert approve.partial_kwargs["sweep_yaml"] and "job_key" in approve.expand_input.value
    assert approve.upstream_task_ids == {"to_ask"} and dag.get_task("to_ask").upstream_task_ids == {"validate"}
    assert dag.get_task("standing").upstream_task_ids == {"validate"}  # waits for no human
    scancel = dag.get_task("scancel")
    assert scancel.upstream_task_ids == {"approve"} and scancel.trigger_rule == "none_failed_min_one_success"
    assert dag.get_task("record").upstream_task_ids == {"scancel", "standing"}
    assert dag.get_task("record").trigger_rule == "all_done"
    assert dag.params["approval_timeout_minutes"] is None
    assert dag.params.get_param("approval_timeout_minutes").schema["maximum"] == 720  # never blocks forever
    assert dag.params["dry_run"] is True and dag.max_active_runs == 1


def test_a_bad_date_in_one_ops_md_leaves_every_dag_importable(tmp_path, monkeypatch) -> None:
    """`skip_until: 2099-13-45` raised a bare ValueError at parse time: monitor_cron_sweep failed to
    import and no cluster was swept. Now only that cluster's step0 fails, naming file and field."""
    import shutil

    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk.exceptions import AirflowFailException

    ops = tmp_path / "ops"
    shutil.copytree(ROOT / "include" / "ops", ops)
    for name, status in (("baddate", "skipped"), ("gonebad", "dropped")):
        (ops / name).mkdir()
        (ops / name / "ops.md").write_text(f"---\nscheduler: slurm\nstatus: {status}\nskip_until: 2099-13-45\n---\n")
    (ops / "twice").mkdir()
    (ops / "twice" / "ops.md").write_text(
        (ROOT / "lab-config/ops/local/ops.md")
        .read_text()
        .replace("user: sweep\n", "user: sweep\nuser: root\n")
        .replace("name: local\n", "name: twice\n")
    )
    monkeypatch.setenv("SWEEP_OPS_DIR", str(ops))
    bag = DagBag(str(ROOT / "dags"))
    assert bag.import_errors == {}
    assert {"monitor_cron_sweep", "sweep_cleanup", "sweep_cancel", "sweep_hf_chain", "sweep_tracker_harvest"} <= set(
        bag.dag_ids
    )
    dag = bag.get_dag("monitor_cron_sweep")
    for name, field in (("baddate", "skip_until"), ("gonebad", "skip_until"), ("twice", "user")):
        step0 = dag.get_task(f"{name}.step0")
        with pytest.raises(AirflowFailException) as err:
            step0.python_callable(
                **step0.op_kwargs, params={}, data_interval_end=dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
            )
        assert f"{name}/ops.md" in str(err.value) and f"'{field}'" in str(err.value)
    assert {"tacc.step0", "leonardo.gather"} <= set(dag.task_ids)


def test_an_unknown_key_in_sweep_yaml_fails_the_import_naming_file_and_key_path(tmp_path, monkeypatch) -> None:
    """`rules: {colapse: …}` was silently ignored, a renamed RL bucket silently turned off every RL
    metric and rule; now the schema refuses the file and says where, every error at once."""
    from airflow.dag_processing.dagbag import DagBag

    text = (ROOT / "include" / "sweep.yaml").read_text()
    bad = tmp_path / "sweep.yaml"
    bad.write_text(text.replace("  collapse:\n", "  colapse:\n").replace("- name: RL\n", "- name: RLHF\n"))
    monkeypatch.setenv("SWEEP_CONFIG", str(bad))
    bag = DagBag(str(ROOT / "dags"))
    error = next(msg for path, msg in bag.import_errors.items() if path.endswith("monitor_cron_sweep.py"))
    assert f"{bad}: rules.colapse: unknown key" in error
    assert f"{bad}: buckets[0].name: must be one of RL, SFT, Datagen, Eval, Catch-all, got 'RLHF'" in error


def test_the_deep_dive_dag_branches_kill_to_sweep_cancel_and_records_either_way() -> None:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(ROOT / "dags"))
    assert bag.import_errors == {}
    dag = bag.get_dag("sweep_rl_deep_dive")
    assert set(dag.params) == {"jobs", "dry_run", "run_log"}
    assert dag.get_task("kill_branch").downstream_task_ids == {"trigger_cancel", "no_kill"}
    assert dag.get_task("trigger_cancel").trigger_dag_id == "sweep_cancel"
    assert dag.get_task("record").upstream_task_ids == {"trigger_cancel", "no_kill"}
    assert dag.get_task("record").trigger_rule == "all_done"
    sweep = bag.get_dag("monitor_cron_sweep")
    assert sweep.get_task("trigger_deep_dive").trigger_dag_id == "sweep_rl_deep_dive"
    assert "trigger_deep_dive" in sweep.get_task("handoff_branch").downstream_task_ids


def test_airflow_loads_the_sweeps_page_plugin_and_no_import_error() -> None:
    """Airflow's plugin manager, as the api-server and scheduler run it (a fresh interpreter):
    the Sweeps page is the one plugin, and no file under plugins/ fails to import (every module
    there was once imported under its bare name: iris_stop.py failed in every run's log)."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json; from airflow import plugins_manager as m; p, e = m._get_plugins();"
        "print(json.dumps({'names': sorted(x.name for x in p), 'errors': e}))"
    )
    env = {**os.environ, "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins")}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["errors"] == {}, got["errors"]
    assert got["names"] == ["sweeps_page"]


def test_the_watch_dag_runs_gather_fast_rules_alerts_and_cancel_only() -> None:
    """monitor_cron_watch: the same groups and operators as the report sweep, every 5 minutes, no
    tables, run log, cleanup, harvest, chain or deep-dive; one run at a time, no catch-up."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(ROOT / "dags"))
    assert bag.import_errors == {}
    watch, sweep = bag.get_dag("monitor_cron_watch"), bag.get_dag("monitor_cron_sweep")
    assert watch.timetable.expression == "*/5 * * * *" and watch.max_active_runs == 1 and watch.catchup is False
    assert not {"render", "trigger_cleanup", "trigger_hf_chain", "trigger_tracker_harvest", "trigger_deep_dive"} & set(
        watch.task_ids
    )
    assert {"bucket", "fold", "handoffs", "trigger_cancel", "history", "notify"} <= set(watch.task_ids)
    gathers = {t for t in sweep.task_ids if t.endswith((".gather", ".step0"))}
    assert gathers and gathers <= set(watch.task_ids)
    for t in gathers:  # the same operator classes, the same cluster wiring
        assert type(watch.get_task(t)) is type(sweep.get_task(t))
    assert watch.get_task("bucket").op_kwargs["watch"] is True and sweep.get_task("bucket").op_kwargs["watch"] is False
    assert watch.get_task("handoffs").op_kwargs["kinds"] == ["cancel"]
    assert watch.get_task("trigger_cancel").trigger_dag_id == "sweep_cancel"
    assert watch.get_task("fold").upstream_task_ids == {"bucket"}


def test_watch_schedule_null_turns_the_watch_off(tmp_path, monkeypatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    text = (ROOT / "include" / "sweep.yaml").read_text()
    off = tmp_path / "sweep.yaml"
    off.write_text(text.replace('  schedule: "*/5 * * * *"', "  schedule: null"))
    monkeypatch.setenv("SWEEP_CONFIG", str(off))
    bag = DagBag(str(ROOT / "dags"))
    assert bag.import_errors == {}
    assert type(bag.get_dag("monitor_cron_watch").timetable).__name__ == "NullTimetable"
    assert bag.get_dag("monitor_cron_sweep").timetable.expression == "0 */3 * * *"


def test_an_unknown_watch_rule_fails_the_watch_import_naming_file_and_key(tmp_path, monkeypatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    text = (ROOT / "include" / "sweep.yaml").read_text()
    bad = tmp_path / "sweep.yaml"
    bad.write_text(text.replace("  rules: [liveness_stale,", "  rules: [liveness_stail,"))
    monkeypatch.setenv("SWEEP_CONFIG", str(bad))
    bag = DagBag(str(ROOT / "dags"))
    error = next(msg for path, msg in bag.import_errors.items() if path.endswith("monitor_cron_watch.py"))
    assert f"{bad}: watch.rules: unknown rule(s) ['liveness_stail']" in error
    assert "monitor_cron_sweep" in bag.dag_ids  # the report sweep runs every rule: not affected


def test_the_hygiene_handoff_asks_a_human_before_it_pulls() -> None:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(ROOT / "dags"))
    assert bag.import_errors == {}
    dag = bag.get_dag("sweep_hygiene")
    assert set(dag.params) == {"jobs", "cluster", "paths", "dry_run", "run_log"}
    assert dag.params["dry_run"] is True and dag.schedule is None and dag.max_active_runs == 1
    assert dag.get_task("approve").upstream_task_ids == {"validate"}
    assert type(dag.get_task("approve")).__name__ == "HygieneApprovalOperator"
    assert dag.get_task("pull").upstream_task_ids == {"approve"}
    assert dag.get_task("record").upstream_task_ids == {"pull"} and dag.get_task("record").trigger_rule == "all_done"
    sweep = bag.get_dag("monitor_cron_sweep")
    trigger = sweep.get_task("trigger_hygiene")
    assert trigger.trigger_dag_id == "sweep_hygiene" and "handoff_branch" in trigger.upstream_task_ids


def test_the_watch_can_give_the_deep_dive_too(tmp_path, monkeypatch) -> None:
    """watch.handoffs [cancel, deep_dive] with rl_new_untested among its rules: a new RL run is
    deep-dived within minutes (its KILL verdict asks the kill-approval), not at the next report sweep."""
    from airflow.dag_processing.dagbag import DagBag

    text = (ROOT / "include" / "sweep.yaml").read_text()
    assert "  handoffs: [cancel]\n" in text and "sft_divergence]\n" in text
    both = tmp_path / "sweep.yaml"
    both.write_text(text.replace("  handoffs: [cancel]\n", "  handoffs: [cancel, deep_dive]\n", 1)
                    .replace("sft_divergence]\n", "sft_divergence, rl_new_untested]\n", 1))  # fmt: skip
    monkeypatch.setenv("SWEEP_CONFIG", str(both))
    bag = DagBag(str(ROOT / "dags" / "monitor_cron_watch.py"))
    assert bag.import_errors == {}
    watch = bag.get_dag("monitor_cron_watch")
    assert watch.get_task("handoffs").op_kwargs["kinds"] == ["cancel", "deep_dive"]
    assert watch.get_task("trigger_deep_dive").trigger_dag_id == "sweep_rl_deep_dive"
    assert "trigger_cleanup" not in watch.task_ids
