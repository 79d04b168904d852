"""The sweep's two fan-in tasks, called as Airflow calls them (no cluster): ``bucket`` pushes the
bucketed, ruled snapshots without log tails, ``render`` the tables and the run log; both tell each
stage's wall time in the task log; verdict and the hand-offs read what they pushed."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "fixtures" / "logs"
NOW = 1_764_680_000.0
END = dt.datetime.fromtimestamp(NOW, dt.UTC)


class TaskInstance:
    """Answers xcom_pull with what the tasks returned, through JSON as the metadata DB stores it."""

    def __init__(self, gathered: dict[str, Any]) -> None:
        self.xcom: dict[str, str] = {task: json.dumps(value) for task, value in gathered.items()}

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> Any:
        value = json.loads(self.xcom.get(task_ids, "null"))
        return value.get(key) if key != "return_value" and isinstance(value, dict) else value

    def run(self, task_id: str, call: Any, context: dict[str, Any], **kwargs: Any) -> Any:
        value = call(**kwargs, **context)
        self.xcom[task_id] = json.dumps(value, allow_nan=False)
        return json.loads(self.xcom[task_id])


def _gathered() -> ClusterSnapshot:
    running = [
        Job("local", "11", "rl__nan_run", "RUNNING", "squeue", log_tail=(LOGS / "rl_nan.out").read_text()),
        Job("local", "12", "sft__cell", "RUNNING", "squeue", log_tail=(LOGS / "sft_healthy.out").read_text()),
    ]
    for j in running:
        j.log_mtime = NOW - 60
    done = Job("local", "13", "sft__done", "COMPLETED", "sacct", exit_code="0:0", end="2025-12-02T12:00:00")
    done.metrics["launch_yaml"] = ""  # the gather read its log banner: it names no launch YAML (not HF-only)
    return ClusterSnapshot("local", "slurm", ClusterStatus.OK, remote_now=NOW, running=running, finished=[done])


@pytest.fixture
def swept(tmp_path, monkeypatch, caplog) -> tuple[TaskInstance, dict[str, Any], str]:
    from sweep_operators import sweep_tasks

    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", str(tmp_path / "logs"))
    ti = TaskInstance({"local.gather": _gathered().to_dict()})
    context = {"ti": ti, "params": {"clusters": ["local"], "dry_run": True}, "run_id": "manual__fanin"}
    context |= {"data_interval_start": END - dt.timedelta(hours=3), "data_interval_end": END}
    paths = {"ops_dir": str(ROOT / "lab-config" / "ops"), "sweep_yaml": str(ROOT / "include" / "sweep.yaml")}
    with caplog.at_level(logging.INFO, logger="sweep_operators.sweep_tasks"):
        ti.run("bucket", sweep_tasks.bucket, context, clusters=["local"], **paths)
        template_dir = str(ROOT / "include" / "templates")
        ti.run("render", sweep_tasks.render, context, template_dir=template_dir, **paths)
    return ti, context, caplog.text


def test_bucket_pushes_ruled_snapshots_with_only_the_last_lines_of_each_tail(swept) -> None:
    ti, _, _ = swept
    pushed = ti.xcom_pull("bucket")
    (snap,) = [ClusterSnapshot.from_dict(d) for d in pushed["snapshots"]]
    nan_job = next(j for j in snap.all_jobs() if j.name == "rl__nan_run")
    assert nan_job.bucket == "RL" and nan_job.minutes_since_output == 1.0  # bucket, liveness
    assert nan_job.metrics["grad_norm"] == float("inf")  # metrics
    assert any(f["rule"] == "rl_collapse" and f["job_name"] == "rl__nan_run" for f in pushed["flags"])  # rules
    # the tails crossed XCom once whole; the Sweeps page keeps each job's last 20 lines (<= 2,000 chars)
    assert all(
        len(j.log_tail.splitlines()) <= 20 and len(j.log_tail) <= 2000 and j.chain_tails == [] for j in snap.all_jobs()
    )
    whole = (LOGS / "rl_nan.out").read_text().splitlines()
    assert nan_job.log_tail == "\n".join(whole[-20:])[-2000:] and "grad_norm" in nan_job.log_tail


def test_each_stage_wall_time_is_in_the_task_log(swept) -> None:
    _, _, text = swept
    stage = r"{} \d+\.\d\d s"
    bucket = ", ".join(stage.format(s) for s in ("collect", "bucket", "liveness", "metrics", "rules"))
    render = ", ".join(stage.format(s) for s in ("collect", "tables", "ledger", "run log", "note"))
    assert re.search(f"fan-in stages: {bucket}$", text, re.M), text
    assert re.search(f"fan-in stages: {render}$", text, re.M), text


def test_render_pushes_tables_and_run_log_that_verdict_and_handoffs_read(swept) -> None:
    from sweep_operators import sweep_tasks

    ti, context, _ = swept
    rendered = ti.xcom_pull("render")
    assert set(rendered) == {"overview", "tables", "run_log", "off"}
    # the shipped sweep.yaml leaves the harvest off: said in the overview's row and the run log's head
    assert any(line.startswith("OFF: harvest needs trackers.repo in ") for line in rendered["off"]["local"])
    assert "OFF: " in rendered["overview"] and "harvest" in rendered["overview"].split("OFF: ", 1)[1]
    assert "rl__nan_run" in rendered["tables"]["RL"] and "local" in rendered["overview"]
    run_log = Path(rendered["run_log"]).read_text()
    assert "rl__nan_run" in run_log and "rl_collapse" in run_log
    assert "- local: OFF: harvest needs trackers.repo in " in run_log.split("## Changes")[0]
    sweep_tasks.verdict(**context)  # no configuration error: does not raise
    confs = ti.run("handoffs", sweep_tasks.handoffs, context, sweep_yaml=str(ROOT / "include" / "sweep.yaml"))
    assert confs["cleanup"]["run_log"] == rendered["run_log"]  # the hand-off records into this run log
    assert confs["cleanup"]["jobs"][0]["name"] == "sft__done"
    assert sweep_tasks.handoff_branch(**context) == ["trigger_cleanup"]


def test_render_and_handoffs_write_the_run_log_on_an_object_store(tmp_path, monkeypatch) -> None:
    """run_log_dir a URL (memory:// attached as a provider attaches s3://): render writes the run log
    there (no local file), XCom carries its URL, the hand-offs' own section is added to that object,
    and a re-run of the same run rewrites it keeping that section."""
    import uuid

    from airflow.sdk.io import attach
    from fsspec.implementations.memory import MemoryFileSystem

    from sweep_operators import sweep_tasks
    from sweep_operators.handoff_record import append_record

    fs = MemoryFileSystem()
    attach("memory", fs=fs)
    where = f"memory://sweeps-{uuid.uuid4().hex[:8]}/logs"
    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", where)
    monkeypatch.setenv("SWEEP_STATE_URL", f"sqlite:///{tmp_path / 'state.db'}")
    monkeypatch.chdir(tmp_path)
    sweep_yaml = str(ROOT / "include" / "sweep.yaml")
    ti = TaskInstance({"local.gather": _gathered().to_dict()})
    context = {"ti": ti, "params": {"clusters": ["local"], "dry_run": True}, "run_id": "manual__fanin"}
    context |= {"data_interval_start": END - dt.timedelta(hours=3), "data_interval_end": END}
    paths = {"ops_dir": str(ROOT / "lab-config" / "ops"), "sweep_yaml": sweep_yaml}
    ti.run("bucket", sweep_tasks.bucket, context, clusters=["local"], **paths)
    template_dir = str(ROOT / "include" / "templates")
    ref = ti.run("render", sweep_tasks.render, context, template_dir=template_dir, **paths)["run_log"]
    assert ref.startswith("memory://") and ref.endswith(".md")
    assert "rl__nan_run" in fs.cat_file(ref).decode() and not list(tmp_path.rglob("*.md"))
    append_record({"run_id": "manual__fanin__cleanup", "params": {"run_log": ref}}, sweep_yaml, "sweep_cleanup", "rm x")
    again = ti.run("render", sweep_tasks.render, context, template_dir=template_dir, **paths)["run_log"]
    text = fs.cat_file(again).decode()
    assert again == ref and "## Hand-off sweep_cleanup" in text and text.count("rl__nan_run") >= 1
