"""INODE HEADROOM on the real cluster: the sweep reads df -i -P of the artifact roots and the
ops.md quota command; at/over the soft limit it red-flags and hands the cluster to reclaim."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from lab import HOME, LAB_OPS
from sweep_runner import run_dag

pytestmark = pytest.mark.cluster


def _ops(tmp_path: Path, quota: dict) -> Path:
    ops = tmp_path / "ops"
    shutil.copytree(LAB_OPS / "local", ops / "local")
    md = ops / "local" / "ops.md"
    _, front, body = md.read_text().split("---", 2)
    meta = yaml.safe_load(front)
    meta["quota"] = quota
    md.write_text("---\n" + yaml.safe_dump(meta) + "---" + body)
    return ops


def test_over_the_soft_limit_red_flags_and_triggers_reclaim(local_cluster, tmp_path) -> None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    ops = _ops(tmp_path, {"kind": "inodes", "command": f"df -i -P {HOME}", "soft_limit": 1000})
    run = run_dag("monitor_cron_sweep", {"clusters": ["local"], "lookback_hours": 0.25}, tmp_path / "logs", ops)
    assert run.state == "success", run.task_states
    snap = next(s for s in run.values["bucket"]["snapshots"] if s["cluster"] == "local")
    assert snap["quota"]["status"] == "OVER" and "inodes" in snap["quota"]["reason"]
    flags = [f for f in run.values["bucket"]["flags"] if f["rule"] == "inode_headroom"]
    assert flags and flags[0]["severity"] == "critical" and flags[0]["action"] == "reclaim"
    assert "OVER" in run.values["render"]["overview"]
    assert run.task_states["trigger_cleanup"] == "success"
    with create_session() as s:
        conf = (
            s.query(DagRun)
            .filter(DagRun.dag_id == "sweep_cleanup", DagRun.run_id == f"{run.run_id}__cleanup")
            .one()
            .conf
        )
    assert conf["reclaim_clusters"] == ["local"]


def test_quota_command_failure_is_unknown_never_ok(local_cluster, tmp_path) -> None:
    ops = _ops(tmp_path, {"kind": "inodes", "command": "jutil project dataquota -p nosuchproject"})
    run = run_dag("monitor_cron_sweep", {"clusters": ["local"], "lookback_hours": 0.25}, tmp_path / "logs", ops)
    snap = next(s for s in run.values["bucket"]["snapshots"] if s["cluster"] == "local")
    assert snap["quota"]["status"] == "UNKNOWN" and "exited 127" in snap["quota"]["reason"]
    assert any(f["rule"] == "inode_headroom" and "UNKNOWN" in f["message"] for f in run.values["bucket"]["flags"])
    assert run.task_states["trigger_cleanup"] in ("skipped", "success")


def test_dormant_quota_is_not_checked(local_cluster, tmp_path) -> None:
    ops = _ops(tmp_path, {"kind": "inodes", "command": f"df -i -P {HOME}", "soft_limit": 1000, "dormant": True})
    run = run_dag("monitor_cron_sweep", {"clusters": ["local"], "lookback_hours": 0.25}, tmp_path / "logs", ops)
    snap = next(s for s in run.values["bucket"]["snapshots"] if s["cluster"] == "local")
    assert snap["quota"] is None
    assert not [f for f in run.values["bucket"]["flags"] if f["rule"] == "inode_headroom"]
