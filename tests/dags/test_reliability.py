"""Airflow's own reliability tools on every DAG: an execution_timeout on every task, never shorter
than the waits the task owns; retries with backoff only for the read-only steps, only on transport
errors; the overrun Deadline Alert on by default (0 = off)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ACTS = {  # every task that changes something: never retried (exactly-once is the ledger's claim)
    ("monitor_cron_sweep", "handoffs"), ("monitor_cron_watch", "handoffs"), ("monitor_cron_watch", "trigger_cancel"),
    *(("monitor_cron_sweep", t) for t in ("trigger_cleanup", "trigger_cancel", "trigger_hf_chain",
                                          "trigger_tracker_harvest", "trigger_deep_dive", "trigger_snapshots",
                                          "trigger_hygiene")),
    ("sweep_cancel", "standing"), ("sweep_cancel", "scancel"), ("sweep_cancel", "approve"),
    ("sweep_cleanup", "consolidate"), ("sweep_cleanup", "upload"), ("sweep_cleanup", "delete"),
    ("sweep_cleanup", "db_register"), ("sweep_snapshots", "approve"), ("sweep_snapshots", "delete"),
    ("sweep_hf_chain", "advance"), ("sweep_tracker_harvest", "harvest"), ("sweep_rl_deep_dive", "verdict"),
    ("sweep_rl_deep_dive", "trigger_cancel"), ("sweep_hygiene", "validate"), ("sweep_hygiene", "approve"),
    ("sweep_hygiene", "pull"),
}  # fmt: skip
READS = {("monitor_cron_sweep", "history"), ("monitor_cron_sweep", "notify"), ("monitor_cron_watch", "history"),
         ("monitor_cron_watch", "notify"), ("sweep_cleanup", "plan"),
         ("sweep_cleanup", "verify"), ("sweep_rl_deep_dive", "probe"), ("sweep_snapshots", "validate")}  # fmt: skip


@pytest.fixture(scope="module")
def bag():
    from airflow.dag_processing.dagbag import DagBag

    got = DagBag(str(ROOT / "dags"))
    assert got.import_errors == {}
    return got


def _tasks(bag):
    return [(dag.dag_id, t) for dag in bag.dags.values() for t in dag.tasks]


def test_every_task_of_every_dag_has_an_execution_timeout(bag) -> None:
    assert len(bag.dags) == 9  # the six, the watch (monitor_cron_watch), sweep_snapshots and sweep_hygiene
    missing = [(d, t.task_id) for d, t in _tasks(bag) if not t.execution_timeout]
    assert missing == []


def test_only_read_only_steps_retry_with_backoff(bag) -> None:
    retrying = {(d, t.task_id) for d, t in _tasks(bag) if t.retries}
    gathers = {(d, t.task_id) for d in ("monitor_cron_sweep", "monitor_cron_watch") for t in bag.get_dag(d).tasks
               if t.task_id.endswith(".gather")}  # fmt: skip
    assert gathers and retrying == READS | gathers
    for d, t in _tasks(bag):
        if (d, t.task_id) in ACTS:
            assert t.retries == 0, (d, t.task_id)
        if t.retries:
            assert t.retry_exponential_backoff and t.max_retry_delay, (d, t.task_id)


def test_timeouts_cover_the_waits_the_tasks_own(bag) -> None:
    from sweep_core.config.handoffs_schema import MAX_APPROVAL_MINUTES
    from sweep_core.config.ops import load_cluster
    from sweep_core.config.sweep import load_sweep_config

    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    g = config.gather
    sweep = bag.get_dag("monitor_cron_sweep")
    leonardo = load_cluster(ROOT / "include" / "ops", "leonardo")
    need = len(leonardo.login_nodes) * (g.connect_timeout_s + g.command_timeout_s)
    assert sweep.get_task("leonardo.gather").execution_timeout >= dt.timedelta(seconds=need)
    # an approval task is never killed before its own (largest) response timeout
    for dag_id in ("sweep_cancel", "sweep_snapshots", "sweep_hygiene"):
        approve = bag.get_dag(dag_id).get_task("approve")
        assert approve.execution_timeout > dt.timedelta(minutes=MAX_APPROVAL_MINUTES), dag_id
    verify = bag.get_dag("sweep_cleanup").get_task("verify")
    assert verify.execution_timeout > dt.timedelta(seconds=config.cleanup.verify_timeout_s)


def test_the_approval_operator_keeps_its_execution_timeout() -> None:
    """HITLOperator turns an execution_timeout given without a response_timeout into one, and clears it."""
    from sweep_operators.cancel_tasks import CancelApprovalOperator

    op = CancelApprovalOperator(task_id="a", sweep_yaml="x", subject="s", execution_timeout=dt.timedelta(hours=13))
    assert op.execution_timeout == dt.timedelta(hours=13)


def test_the_overrun_deadline_is_on_by_default_and_off_by_config(monkeypatch, tmp_path) -> None:
    from sweep_core.config.sweep import load_sweep_config
    from sweep_operators.approval_notify import sweep_deadline

    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    assert config.notify.overrun_intervals == 1
    monkeypatch.delenv("SWEEP_OVERRUN_ALERT", raising=False)
    alert = sweep_deadline("x.yaml", config.schedule, config.notify.overrun_intervals)
    assert alert is not None and alert.interval == dt.timedelta(hours=3)
    assert sweep_deadline("x.yaml", config.schedule, 0) is None
    monkeypatch.setenv("SWEEP_OVERRUN_ALERT", "off")
    assert sweep_deadline("x.yaml", config.schedule, 1) is None


def _bag_with(monkeypatch, tmp_path, queues: dict, files: str = ""):
    import yaml
    from airflow.dag_processing.dagbag import DagBag

    conf = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text())
    conf["queues"] = queues
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(conf))
    monkeypatch.setenv("SWEEP_CONFIG", str(tmp_path / "sweep.yaml"))
    return DagBag(str(ROOT / "dags" / files))


def test_the_acts_run_on_the_queues_sweep_yaml_names_and_nothing_else_moves(bag, monkeypatch, tmp_path) -> None:
    from airflow.configuration import conf

    default = conf.get("operators", "default_queue")
    assert {t.queue for _, t in _tasks(bag)} == {default}  # shipped: every task on Airflow's default queue
    got = _bag_with(monkeypatch, tmp_path, {"acts": "acts", "tasks": {"sweep_cleanup.delete": "acts-a",
                                                                     "sweep_cleanup.upload": "acts-b",
                                                                     "sweep_cleanup.plan": "acts-a"}})  # fmt: skip
    assert got.import_errors == {}
    queues = {(d, t.task_id): t.queue for d, t in _tasks(got)}
    assert queues[("sweep_cleanup", "delete")] == "acts-a" and queues[("sweep_cleanup", "plan")] == "acts-a"
    assert queues[("sweep_cleanup", "upload")] == "acts-b"
    handoff_acts = {
        ("sweep_cancel", "standing"),
        ("sweep_cancel", "scancel"),
        ("sweep_cleanup", "consolidate"),
        ("sweep_cleanup", "db_register"),
        ("sweep_hf_chain", "advance"),
        ("sweep_tracker_harvest", "harvest"),
        ("sweep_snapshots", "delete"),
        ("sweep_hygiene", "pull"),
    }  # the tasks that change a cluster or hub
    assert {queues[k] for k in handoff_acts} == {"acts"}
    rest = set(queues) - handoff_acts - {("sweep_cleanup", t) for t in ("delete", "upload", "plan")}
    assert {queues[k] for k in rest} == {default}, sorted(k for k in rest if queues[k] != default)


def test_a_queue_for_a_task_the_dag_lacks_is_a_parse_error(monkeypatch, tmp_path) -> None:
    got = _bag_with(monkeypatch, tmp_path, {"tasks": {"sweep_cleanup.uplod": "acts-b"}}, "sweep_cleanup.py")
    assert len(got.import_errors) == 1
    assert "sweep_cleanup.uplod" in next(iter(got.import_errors.values()))
