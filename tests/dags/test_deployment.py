"""A real deployment, as docs/running.md's "A real deployment" says, command for command: scripts/deploy_local.sh
(Postgres, Redis, api-server, scheduler, dag-processor, triggerer, a Celery worker), then the REST
API as the UI uses it and the airflow CLI: no import errors, a run triggered with conf, two cron
runs whose windows tile, a backfill of two past windows one at a time, a hand-off the sweep
triggered running without anyone unpausing it. It sweeps the bundled Slurm cluster: marked cluster."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from conftest import CLUSTER_DIR
from deploy_client import Deployment, deploy, deploy_env, deployed, deployment_slot, run_timing
from lab import LAB_CONFIG, LAB_OPS

from sweep_core.slurm.snapshot import PAST_WINDOW_SOURCE

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.deploy,
    pytest.mark.timeout(900),
    pytest.mark.exclusive,
    pytest.mark.long(4),
]
SWEEP = "monitor_cron_sweep"
HANDOFF_DAGS = ("sweep_cleanup", "sweep_cancel", "sweep_hf_chain", "sweep_tracker_harvest", "sweep_rl_deep_dive")
EXECUTOR = os.environ.get("SWEEP_DEPLOY_TEST_EXECUTOR", "CeleryExecutor")


def _now() -> str:
    """Now as the API writes its times (ISO, UTC, ``Z``): comparable as text."""
    return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")


def _test_config(home: Path) -> dict[str, str]:
    """A test copy of sweep.yaml (a cron every minute, a tracker repo so the harvest hand-off is
    triggered every sweep) and an ops dir holding only the bundled cluster."""
    shutil.copytree(LAB_OPS / "local", home / "ops" / "local")
    tracker = home / "tracker"
    tracker.mkdir()
    subprocess.run(["git", "init", "-q", str(tracker)], check=True)
    conf = yaml.safe_load(LAB_CONFIG.read_text())
    conf["schedule"] = "*/1 * * * *"
    conf["trackers"]["repo"] = str(tracker)
    (home / "sweep.yaml").write_text(yaml.safe_dump(conf))
    return {"SWEEP_CONFIG": str(home / "sweep.yaml"), "SWEEP_OPS_DIR": str(home / "ops")}


@pytest.fixture(scope="module")
def deployment(_local_cluster_session) -> Iterator[Deployment]:
    with deployment_slot():
        yield from _deployment()


def _deployment() -> Iterator[Deployment]:
    home = Path(tempfile.mkdtemp(prefix="sweep-deploy-", dir="/var/tmp"))
    home.chmod(0o755)  # the postgres user reaches its data dir below it
    env = deploy_env(home, EXECUTOR, **_test_config(home))
    try:
        with deployed(env, CLUSTER_DIR / "connections.json") as dep:
            running = {
                ln.split()[0] for ln in deploy(env, "status", timeout=60).stdout.splitlines() if " running " in ln
            }
            again = deploy(env, "up")
            # a second `up` starts nothing: every service it names is one `status` saw running
            said = set(re.findall(r"\[deploy\] (\S+) already running", again.stdout))
            core = {"postgres", "api-server", "scheduler", "dag-processor", "triggerer", "db-clean"}
            if EXECUTOR == "CeleryExecutor":
                core |= {"redis", "worker", "worker-logs"}
            assert again.returncode == 0 and " started (pid" not in again.stdout, again.stdout
            assert said == running and core <= said, (said, running, again.stdout)
            yield dep
        status = deploy(env, "status", timeout=60).stdout
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert "running" not in status, status


def test_every_dag_imports_and_the_hand_offs_are_not_paused(deployment: Deployment) -> None:
    dags = deployment.wait_dags({SWEEP, *HANDOFF_DAGS})
    assert deployment.get("/api/v2/importErrors")["import_errors"] == []
    assert {d: dags[d]["is_paused"] for d in HANDOFF_DAGS} == dict.fromkeys(HANDOFF_DAGS, False)
    assert dags[SWEEP]["is_paused"] is True  # a person unpauses the sweep (docs/running.md)
    clusters = deployment.get(f"/api/v2/dags/{SWEEP}/details")["params"]["clusters"]
    assert clusters["schema"]["examples"] == ["local"] and "null" in clusters["schema"]["type"]


def test_the_worker_holds_the_sweeps_login_and_it_cannot_do_an_admins_work(deployment: Deployment) -> None:
    """issue 26: the environment every service starts with (airflow.env, which the script sources
    before it starts them, each through ``env -u _AIRFLOW_WWW_USER_PASSWORD``) holds no admin
    password; the Connection it holds logs in as the sweep's FAB user (role User: made by up, like
    the admin), who may edit DAG runs and may not touch Connections or Variables. The worker's
    environment holds no JWT secret and no Fernet key either (it runs
    its tasks without it: the runs below); a Celery worker retitles its process, which blanks its
    /proc environ, so the names it was exec'd with are read from the file the script writes.)"""
    secrets = dict(line.split("=", 1) for line in (deployment.home / "secrets.env").read_text().splitlines())
    env_file = (deployment.home / "airflow.env").read_text()
    assert secrets["_AIRFLOW_WWW_USER_PASSWORD"] not in env_file
    if EXECUTOR == "CeleryExecutor":  # the worker's own environment: no JWT secret, no admin password
        names = (deployment.home / "worker-env-names").read_text().split()
        assert "AIRFLOW_CONN_SWEEP_AIRFLOW_API" in names and "AIRFLOW__CORE__EXECUTION_API_SERVER_URL" in names
        assert "AIRFLOW__API_AUTH__JWT_SECRET" not in names and "_AIRFLOW_WWW_USER_PASSWORD" not in names
        assert "AIRFLOW__CORE__FERNET_KEY" not in names  # issue 39: tasks read Connections via the API server
    line = next(x for x in env_file.splitlines() if x.startswith("export AIRFLOW_CONN_SWEEP_AIRFLOW_API="))
    conn = json.loads(line.split("=", 1)[1].strip("'"))
    assert (conn["login"], conn["password"]) == ("sweep_api", secrets["SWEEP_API_PASSWORD"])
    api = httpx.Client(base_url=conn["host"], timeout=30)
    token = api.post("/auth/token", json={"username": conn["login"], "password": conn["password"]})
    token.raise_for_status()
    api.headers["Authorization"] = f"Bearer {token.json()['access_token']}"
    assert api.get(f"/api/v2/dags/{SWEEP}").status_code == 200
    assert api.get("/api/v2/connections").status_code == 403
    assert api.post("/api/v2/variables", json={"key": "k", "value": "v"}).status_code == 403


def test_triggered_run_then_two_scheduled_runs_that_tile(deployment: Deployment) -> None:
    deployment.patch(f"/api/v2/dags/{SWEEP}", {"is_paused": False})
    run = deployment.post(
        f"/api/v2/dags/{SWEEP}/dagRuns",
        {"logical_date": None, "conf": {"clusters": ["local"], "lookback_hours": 0.25, "dry_run": True}},
    )
    manual = deployment.wait_run(SWEEP, run["dag_run_id"], timeout=300)
    assert manual["state"] == "success", manual
    # its own run log, named in the note; the note's lines stay lines in the UI (Markdown paragraphs)
    path = Path(deployment.xcom(SWEEP, manual["dag_run_id"], "render")["run_log"])
    assert path.is_file() and manual["dag_run_id"] in path.read_text()
    note = manual["note"]
    assert re.match(r"Clusters: local OK\n\nJobs: .*\n\nFlagged: \d+", note), note
    assert f"Run log: `{path}`" in note  # set through sweep_airflow_api: the USER-role login (test above)
    timing = run_timing(deployment.task_instances(SWEEP, manual["dag_run_id"]), manual)
    print(f"\n{EXECUTOR} manual sweep: {timing}")
    # the hand-off the sweep triggered runs: its DAG was never unpaused by hand
    handoff = deployment.wait_run("sweep_tracker_harvest", f"{manual['dag_run_id']}__harvest", timeout=180)
    assert handoff["state"] == "success", handoff
    # a hand-off DAG a person paused: the sweep's run log says its run waits
    paused_at = deployment.patch("/api/v2/dags/sweep_tracker_harvest", {"is_paused": True}) and _now()
    # the cron runs: two consecutive ones, each window starting where the one before ended
    scheduled = deployment.wait_scheduled(SWEEP, count=2, timeout=300)
    if scheduled[-1]["start_date"] < paused_at:
        scheduled = deployment.wait_scheduled(SWEEP, count=3, timeout=120)
    deployment.patch(f"/api/v2/dags/{SWEEP}", {"is_paused": True})
    first, second = scheduled[-2:]
    waiting = Path(deployment.xcom(SWEEP, second["dag_run_id"], "render")["run_log"]).read_text()
    assert "## Hand-offs waiting: DAG paused" in waiting and "`sweep_tracker_harvest` is paused" in waiting
    assert first["data_interval_end"] == second["data_interval_start"]
    assert {r["state"] for r in (first, second)} == {"success"}
    logs = {Path(deployment.xcom(SWEEP, r["dag_run_id"], "render")["run_log"]) for r in (first, second, manual)}
    assert len(logs) == 3  # each run keeps its own log
    print(f"{EXECUTOR} scheduled sweep: {run_timing(deployment.task_instances(SWEEP, second['dag_run_id']), second)}")


def test_backfill_of_two_past_windows_runs_them_one_at_a_time(deployment: Deployment) -> None:
    start = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=2)).replace(second=0, microsecond=0)
    frm, to = start.isoformat(), (start + dt.timedelta(minutes=1)).isoformat()
    deployment.patch(f"/api/v2/dags/{SWEEP}", {"is_paused": False})  # a paused DAG runs no run, backfills too
    out = deployment.airflow(
        "backfill", "create", "--dag-id", SWEEP, "--from-date", frm, "--to-date", to,
        "--max-active-runs", "1", "--reprocess-behavior", "failed",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    runs = deployment.wait_backfill(SWEEP, count=2, timeout=300)
    deployment.patch(f"/api/v2/dags/{SWEEP}", {"is_paused": True})
    assert [r["state"] for r in runs] == ["success", "success"], runs
    first, second = sorted(runs, key=lambda r: r["data_interval_start"])
    assert first["data_interval_start"].startswith(start.strftime("%Y-%m-%dT%H:%M:00"))
    assert first["data_interval_end"] == second["data_interval_start"]
    assert first["end_date"] <= second["start_date"]  # one at a time: the second began after the first
    for r in (first, second):
        text = Path(deployment.xcom(SWEEP, r["dag_run_id"], "render")["run_log"]).read_text()
        begin = dt.datetime.fromisoformat(r["data_interval_start"].replace("Z", "+00:00"))
        assert begin.isoformat() in text  # each reports its own window
        snaps = deployment.xcom(SWEEP, r["dag_run_id"], "bucket")["snapshots"]
        local = next(s for s in snaps if s["cluster"] == "local")
        assert local["window_start"] == begin.isoformat() and PAST_WINDOW_SOURCE in local["notes"]  # from sacct


def test_prometheus_scrapes_the_deployment_and_a_silent_job_fires_the_shipped_wedge_alert(
    deployment: Deployment, local_cluster, tag, tmp_path
) -> None:
    """issue 43: Debian's Prometheus scrapes the deployment's own api-server (``/sweeps/metrics``,
    the scraper's token in the Airflow Variable sweep.yaml ``openmetrics.token_variable`` names, set
    through the REST API), after a sweep the deployment's scheduler and Celery worker ran: a real
    Slurm job silent for 3 hours is swept (liveness_stale) and the shipped rule SweepJobWedged fires
    for the cluster; its output age, the sweep's last success and durations come from that run."""
    import secrets

    from prometheus_local import prometheus
    from sweep_runner import ROOT

    deployment.wait_dags({SWEEP})  # parsed by the deployment's dag-processor (this test may run first)
    c = local_cluster
    name = f"sft__{tag}_wedged"
    job = c.submit(name, "echo 'Step 3/10 ['; sleep 900")
    c.wait_running(job)
    subprocess.run(["touch", "-d", "3 hours ago", str(c.wait_log(job))], check=True)
    token = secrets.token_urlsafe(24)
    deployment.post("/api/v2/variables", {"key": "sweep_metrics_token", "value": token})
    (tmp_path / "token").write_text(token)
    deployment.patch(f"/api/v2/dags/{SWEEP}", {"is_paused": False})
    try:
        run = deployment.post(f"/api/v2/dags/{SWEEP}/dagRuns", {"logical_date": None, "conf": {
            "clusters": ["local"], "lookback_hours": 0.25, "dry_run": True}})  # fmt: skip
        done = deployment.wait_run(SWEEP, run["dag_run_id"], timeout=300)
    finally:
        deployment.patch(f"/api/v2/dags/{SWEEP}", {"is_paused": True})
    assert done["state"] == "success", done
    target = str(deployment.client.base_url).removeprefix("http://").rstrip("/")
    assert httpx.get(f"http://{target}/sweeps/metrics", timeout=30).status_code in (401, 403)  # no token: refused
    rules = [ROOT / "include" / "monitoring" / "prometheus" / "sweep_alerts.yml"]
    with prometheus(tmp_path / "prom", target, "/sweeps/metrics", tmp_path / "token", rules) as prom:
        age = prom.wait("the silent job's output age scraped",
                        lambda: prom.query(f'sweep_job_last_output_age_seconds{{job_id="{job}"}}'), timeout=120)  # fmt: skip
        assert float(age[0]["value"][1]) >= 3 * 3600 - 300 and age[0]["metric"]["name"] == name
        assert age[0]["metric"]["cluster"] == "local" and age[0]["metric"]["bucket"] == "SFT"

        def wedge() -> dict | None:
            return next((a for a in prom.alerts() if a["labels"]["alertname"] == "SweepJobWedged"
                         and a["state"] == "firing" and a["labels"]["cluster"] == "local"), None)  # fmt: skip

        assert prom.wait("SweepJobWedged firing for local", wedge)
        ok = prom.query(f'sweep_last_success_timestamp_seconds{{dag="{SWEEP}",cluster="local"}}')
        took = prom.query(f'sweep_dag_last_success_duration_seconds{{dag="{SWEEP}"}}')
        gather = prom.query(f'sweep_gather_duration_seconds{{dag="{SWEEP}",cluster="local"}}')
        assert ok and took and gather and 0 < float(gather[0]["value"][1]) < float(took[0]["value"][1])
        assert prom.query('sweep_source_up{source="airflow_db"}')[0]["value"][1] == "1"
