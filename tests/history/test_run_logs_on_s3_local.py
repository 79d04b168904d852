"""Run logs and history on ``s3://``, as a deployment writes them, against a STUB S3: moto's
S3-compatible server (tests/s3_stub.py; no real S3 runs here). sweep.yaml ``run_log_dir:
s3://<bucket>/run-logs``, ``run_log_conn_id`` an ``aws`` Connection whose extra names the stub's
endpoint (AIRFLOW_CONN_<ID>), ``state.conn_id`` a state database Connection; ONE real sweep of the
bundled Slurm cluster writes its run log and its Parquet history into the bucket (listed with
boto3), whole (no temp or partial object left), nothing on the worker's disk, and the Sweeps page's
app serves that run's log from the bucket. A missing bucket or a stopped endpoint fails the render
task with an error that names the ``s3://`` path, and nothing is written locally instead."""

from __future__ import annotations

import datetime as dt
import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from lab import LAB_CONFIG
from s3_stub import aws_connection, client, free_port, keys, moto_s3
from sweep_runner import DagRun, run_dag

pytest.importorskip("s3fs", reason="requirements-test.txt: apache-airflow-providers-amazon[s3fs], moto[s3]")


@pytest.fixture(autouse=True)
def _state_db_reset() -> Iterator[None]:
    """state.conn_id sets this process's state database (sweep_core.state.db.use_url): unset after."""
    yield
    from sweep_core.state.db import use_url

    use_url(None)


def _conn() -> str:
    """A Connection id of this test alone: Airflow caches a filesystem per scheme and Connection id
    for the process, so a second test naming the same id would reach the first test's endpoint."""
    return f"aws_sweeps_{uuid.uuid4().hex[:8]}"


def _sweep_yaml(tmp_path: Path, where: str, current: bool = False) -> Path:
    conf = yaml.safe_load(LAB_CONFIG.read_text())
    if current:
        conf["schedule"] = "* * * * *"  # one-minute windows
    conf["run_log_dir"] = where
    conf["run_log_conn_id"] = _conn()
    conf["state"] = {"conn_id": "sweep_state"}
    conf.pop("history", None)  # <run_log_dir>/history, opened with run_log_conn_id
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(conf))
    return path


def _env(tmp_path: Path, endpoint: str, sweep_yaml: Path) -> dict[str, str]:
    conn = yaml.safe_load(sweep_yaml.read_text())["run_log_conn_id"]
    return {
        "SWEEP_CONFIG": str(sweep_yaml),
        f"AIRFLOW_CONN_{conn.upper()}": aws_connection(endpoint),
        "AIRFLOW_CONN_SWEEP_STATE": json.dumps({"conn_type": "sqlite", "host": str(tmp_path / "state.db")}),
    }


def _local_files(*roots: Path) -> list[str]:
    """Every run log or Parquet file under the local roots a wrong fallback would write to."""
    return sorted(str(p) for r in roots if r.exists() for p in r.rglob("*") if p.suffix in (".md", ".parquet"))


def _sweep(where: str, env: dict[str, str], monkeypatch, current: bool = False) -> DagRun:
    """One sweep of the local cluster; ``current``: the one-minute window that has just ended (a job
    started now is in it), else the default schedule's last window."""
    for k, v in env.items():
        monkeypatch.setenv(k, v)  # the Connections for this process too (the page's app reads them)
    # the page's store too (SWEEP_RUN_LOG_DIR wins over sweep.yaml; an earlier test's may be left set)
    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", where)
    if not current:
        return run_dag("monitor_cron_sweep", {"clusters": ["local"]}, where, **env)
    end = dt.datetime.fromtimestamp((int(time.time()) // 60 + 1) * 60, dt.UTC)
    time.sleep(max(0.0, end.timestamp() - time.time()))
    return run_dag("monitor_cron_sweep", {"clusters": ["local"]}, where, logical_date=end, run_after=end, **env)


@pytest.mark.cluster
def test_one_real_sweep_writes_its_run_log_and_history_into_the_bucket(local_cluster, tag, tmp_path,
                                                                       monkeypatch) -> None:  # fmt: skip
    from sweep_operators import sweeps_page

    job = local_cluster.submit(f"sft__{tag}_s3", "echo 'Step 1/9'; sleep 900")
    local_cluster.wait_running(job)
    agent_logs = Path(os.environ["AIRFLOW_HOME"]) / "agent_logs"
    before = _local_files(agent_logs, tmp_path)
    with moto_s3(tmp_path / "moto.log") as endpoint:
        client(endpoint).create_bucket(Bucket="ops-sweeps")
        where = "s3://ops-sweeps/run-logs"
        run = _sweep(
            where, _env(tmp_path, endpoint, _sweep_yaml(tmp_path, where, current=True)), monkeypatch, current=True
        )
        assert run.task_states["render"] == "success" and run.task_states["history"] == "success", run.task_states

        ref = run.values["render"]["run_log"]
        assert ref.startswith("s3://ops-sweeps/run-logs/") and ref.endswith(".md"), ref
        name = ref.rsplit("/", 1)[1]
        stored = keys(endpoint, "ops-sweeps")
        history = [k for k in stored if k.startswith("run-logs/history/")]
        assert f"run-logs/{name}" in stored
        assert len(history) == 1 and history[0].endswith(".parquet"), stored
        # whole objects only: the run log, the history file, nothing else (no temp, lock or partial object)
        assert set(stored) == {f"run-logs/{name}", history[0]}, stored
        body = client(endpoint).get_object(Bucket="ops-sweeps", Key=f"run-logs/{name}")["Body"].read().decode()
        assert f"- Run: `{run.run_id}`" in body and f"sft__{tag}_s3" in body
        assert _local_files(agent_logs, tmp_path) == before  # nothing on the worker's disk

        monkeypatch.setattr(sweeps_page, "_auth", lambda: [])  # the api-server's login: test_sweeps_page_auth
        page = TestClient(sweeps_page.create_app())
        index = page.get("/")
        assert index.status_code == 200 and f'href="runlog?name={name}"' in index.text  # the run, from the bucket
        got = page.get("/runlog", params={"name": name})
        assert got.status_code == 200 and got.text == body


@pytest.mark.cluster
def test_a_missing_bucket_fails_the_render_task_and_nothing_is_written_locally(local_cluster, tmp_path,
                                                                               monkeypatch) -> None:  # fmt: skip
    agent_logs = Path(os.environ["AIRFLOW_HOME"]) / "agent_logs"
    before = _local_files(agent_logs, tmp_path)
    with moto_s3(tmp_path / "moto.log") as endpoint:  # a live endpoint, the bucket never made
        where = "s3://ops-missing/run-logs"
        run = _sweep(where, _env(tmp_path, endpoint, _sweep_yaml(tmp_path, where)), monkeypatch)
        assert client(endpoint).list_buckets()["Buckets"] == []  # not made behind the operator's back
    assert run.task_states["render"] == "failed" and run.state == "failed", run.task_states
    assert _local_files(agent_logs, tmp_path) == before  # no fallback onto the worker's disk


@pytest.mark.parametrize("fault", ["no bucket", "endpoint down"])
def test_the_error_names_the_s3_path_it_could_not_write(tmp_path, monkeypatch, fault) -> None:
    """The render task's write (sweep.yaml, the Connection, the provider's filesystem, s3fs) against
    the stub: a clear error naming the run log's s3:// URL; nothing local instead."""
    from sweep_core.config.sweep import load_sweep_config
    from sweep_core.fanin.run_logs import RunLogUnavailable
    from sweep_operators.handoff_record import run_log_store

    monkeypatch.chdir(tmp_path)
    where = "s3://ops-missing/run-logs"
    with moto_s3(tmp_path / "moto.log") as live:
        endpoint = live if fault == "no bucket" else f"http://127.0.0.1:{free_port()}"  # nothing listens there
        for k, v in _env(tmp_path, endpoint, _sweep_yaml(tmp_path, where)).items():
            monkeypatch.setenv(k, v)
        store = run_log_store(load_sweep_config(str(tmp_path / "sweep.yaml")))
        with pytest.raises(RunLogUnavailable, match=f"run log {where}/2026-12-05_x.md could not be"):
            store.update("2026-12-05_x.md", lambda old: old + "# sweep\n")
    assert _local_files(tmp_path) == []
