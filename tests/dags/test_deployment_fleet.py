"""A fleet: scripts/deploy_local.sh with TWO Celery workers laid out as two hosts (each its own
AIRFLOW_HOME, scratch TMPDIR, hostname and address, 127.0.0.1 / 127.0.0.2, its log server on it),
sharing the state database (the deployment's Postgres through the Connection sweep_state; the
SQLite default in a shared run-log dir with SWEEP_FLEET_STATES=postgres,sqlite) and the run-log
store (a file:// URL standing where s3:// would; a shared path on SQLite). Against the scratch
Slurm cluster and the hub STUB, at once: a backfill of two windows, a run by hand and the cron runs,
over windows that overlap on two completed jobs, one whose cleanup deletes (the hub holds it), one
whose cleanup uploads (sbatch --wait on a job held by --begin: the act stays in flight, the test's own
condition). sweep.yaml queues: sends the cleanup's delete to worker 1's queue (acts-a) and its upload to
worker 2's (acts-b). Worker 2 is SIGKILLed (its process group) mid-upload, the task cleared, the worker
started again (`deploy_local.sh up`: the host back) and the upload run there again. Measured: each
hand-off given once, one upload job in sacct, each job told in one digest, the delete on worker 1 and
the upload on worker 2 (each once), worker 2's task log served through the REST API, every sweep's run
log in the Sweeps page."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import huggingface_hub
import pytest
import yaml
from conftest import CLUSTER_DIR, ROOT, LocalCluster, sh
from deploy_client import DONE, Deployment, deploy, deploy_env, deployed, deployment_slot
from hf_hub_stub import hub_stub
from lab import ARTIFACTS, LAB_CONFIG, LAB_OPS, USER
from receivers import slack_webhook_stub

from sweep_core.ledger.store import load_ledger
from sweep_core.state.db import use_url

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.deploy,
    pytest.mark.timeout(1800),
    pytest.mark.exclusive,
    pytest.mark.long(11),
]
SWEEP, CLEANUP = "monitor_cron_sweep", "sweep_cleanup"
ORG = "sweep-local"
W1, W2 = "127.0.0.1", "127.0.0.2"  # the two workers' hostnames (deploy_local.sh: worker k is 127.0.0.k)
JOB_PY = ROOT / "tests" / "fixtures" / "upload" / "hf_upload_job.py"
SITE = Path(huggingface_hub.__file__).resolve().parents[1]  # readable by the cluster user


def _tree(name: str, subs: tuple[str, ...]) -> Path:
    base = ARTIFACTS / name
    for sub in subs:
        (base / sub).mkdir(parents=True, exist_ok=True)
        (base / sub / "config.json").write_text("{}")
        (base / sub / "model-00001-of-00001.safetensors").write_text("weights")
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(ARTIFACTS)], check=True)
    return base


def _config(home: Path, hub: str, hook: str, state: str) -> tuple[dict[str, str], str]:
    """sweep.yaml (cron every minute, a Slack digest to the stub, the upload held in flight by
    ``sbatch --wait --begin``), the ops dir, and the shared run-log store (a file:// URL on Postgres)."""
    shutil.copytree(LAB_OPS / "local", home / "ops" / "local")
    store = home / "shared" / "run-logs"
    store.mkdir(parents=True)
    conf = yaml.safe_load(LAB_CONFIG.read_text())
    conf["schedule"] = "*/1 * * * *"
    conf["gather"]["command_timeout_s"] = 900  # the upload's act waits up to ~890 s: the kill comes first
    conf["notify"] = {"channels": [{"name": "team", "kind": "slack", "conn_id": "slack_stub"}]}
    conf["cleanup"]["flavors"]["rl-standard-job-cleanup"]["upload"] = [
        "sbatch", "--wait", "--begin=now+1800", "-J", "upload__{name}",
        f"--export=ALL,HF_ENDPOINT={hub},PYTHONPATH={SITE},HF_HUB_DISABLE_TELEMETRY=1",
        str(JOB_PY), "{artifact_dir}", "{hub_repo}", "{step}",
    ]  # fmt: skip
    # the acts on the workers that serve their queue: the delete on worker 1, the upload on worker 2
    conf["queues"] = {"tasks": {f"{CLEANUP}.delete": "acts-a", f"{CLEANUP}.upload": "acts-b"}}
    run_logs = str(store)
    if state == "postgres":
        conf["state"] = {"conn_id": "sweep_state"}
        run_logs = f"file://{store}"
    (home / "sweep.yaml").write_text(yaml.safe_dump(conf))
    env = {
        "SWEEP_CONFIG": str(home / "sweep.yaml"),
        "SWEEP_OPS_DIR": str(home / "ops"),
        "SWEEP_RUN_LOG_DIR": run_logs,
        "HF_ENDPOINT": hub,
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "AIRFLOW_CONN_SLACK_STUB": json.dumps({"conn_type": "slackwebhook", "password": hook}),
        # a lost worker's task is failed 30 s after its last heartbeat (default 300 s)
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
    }
    return env, run_logs


@dataclass
class Fleet:
    """The deployment, its environment (deploy_local.sh's), the run-log store and the state database's
    URL (None: the SQLite default), the hub stub and the Slack stub's posts."""

    dep: Deployment
    env: dict[str, str]
    run_logs: str
    state_url: str | None
    hub: Any
    posts: list

    def ledger(self):
        use_url(self.state_url)
        try:
            return load_ledger(self.run_logs)
        finally:
            use_url(None)

    def worker_pid(self, service: str) -> int:
        return int((self.dep.home / "pids" / f"{service}.pid").read_text().split()[0])


# The state store a fleet names (sweep.yaml state.conn_id: docs/memory.md), every run; the SQLite default
# shared by the two workers (one host's layout) with SWEEP_FLEET_STATES=postgres,sqlite. That layout's
# claims are the suite's all the same: tests/state (two processes on one SQLite file) and
# test_deployment.py (a Celery worker of 4 processes on the SQLite default).
STATES = os.environ.get("SWEEP_FLEET_STATES", "postgres").split(",")


@pytest.fixture(scope="module", params=STATES)
def fleet(request, _local_cluster_session) -> Iterator[Fleet]:
    with deployment_slot(), hub_stub({}) as hub, slack_webhook_stub() as (hook, posts):
        home = Path(tempfile.mkdtemp(prefix="sweep-fleet-", dir="/var/tmp"))
        home.chmod(0o755)  # the postgres user reaches its data dir below it
        extra, run_logs = _config(home, hub.url, hook, request.param)
        extra["SWEEP_DEPLOY_WORKERS"] = "2"
        extra["SWEEP_DEPLOY_WORKER_QUEUES"] = "default,acts-a default,acts-b"  # worker 1's, worker 2's
        extra["SWEEP_DEPLOY_STATE_DB"] = "postgres" if request.param == "postgres" else ""
        env = deploy_env(home, extra.pop("SWEEP_DEPLOY_EXECUTOR", "CeleryExecutor"), **extra)
        try:
            with deployed(env, CLUSTER_DIR / "connections.json") as dep:
                url = None
                if request.param == "postgres":
                    env_file = (dep.home / "airflow.env").read_text()
                    conn = json.loads(re.search(r"AIRFLOW_CONN_SWEEP_STATE='(.*)'", env_file)[1])  # type: ignore[index]
                    url = (
                        f"postgresql+psycopg2://{conn['login']}:{conn['password']}@127.0.0.1:{conn['port']}/sweep_state"
                    )
                yield Fleet(dep, env, run_logs, url, hub, posts)
        finally:
            shutil.rmtree(home, ignore_errors=True)


def _runs(dep: Deployment, dag_id: str) -> list[dict]:
    return dep.runs(dag_id)


def _ti(dep: Deployment, dag_id: str, run_id: str, task_id: str) -> dict:
    return next(t for t in dep.task_instances(dag_id, run_id) if t["task_id"] == task_id)


def _served_log(dep: Deployment, dag_id: str, run_id: str, task_id: str, try_number: int) -> str:
    """A task's log as the UI reads it (the REST API: the API server fetches it from the worker's log server)."""
    path = f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}/logs/{try_number}"
    r = dep.client.get(path, params={"full_content": True}, headers={"Accept": "application/json"})
    assert r.status_code == 200, r.text[:300]
    return json.dumps(r.json()["content"])


BUSY = {"running", "queued", "scheduled", "deferred", "up_for_retry", "up_for_reschedule", "restarting"}


def _settled(dep: Deployment, run: dict) -> bool:
    """A sweep run done, queued, or held by the pause (running, none of its tasks busy: a paused DAG's
    running run schedules no further task)."""
    if run["state"] != "running":
        return True
    return not any(t["state"] in BUSY for t in dep.task_instances(SWEEP, run["dag_run_id"]))


def _uploads(name: str) -> list[str]:
    """Every job named upload__<name> that sacct or squeue knows (a job held by --begin is in squeue only)."""
    acct = sh("sacct", "-n", "-X", "-P", "-S", "now-1hours", "--name", f"upload__{name}", "-o", "JobID").stdout
    queue = sh("squeue", "-h", "-t", "all", "-n", f"upload__{name}", "-o", "%i", check=False).stdout
    return sorted({*acct.split(), *queue.split()}, key=int)


def _until(what: str, timeout: float, probe):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = probe()
        if got:
            return got
        time.sleep(2)
    raise AssertionError(f"{what}: not after {timeout}s")


@pytest.fixture
def names(tag: str) -> Iterator[tuple[str, str]]:
    """This test's two job names; after it, their trees removed and their upload jobs cancelled, so the
    other state variant's deployment (a memory of its own) finds nothing of them to clean or upload."""
    done, up = f"rl__{tag}_done_harbor", f"rl__{tag}_up"
    yield done, up
    for n in (done, up):
        shutil.rmtree(ARTIFACTS / n, ignore_errors=True)
    sh("runuser", "-u", USER, "--", "scancel", "-n", f"upload__{up}", check=False)


def test_a_fleet_of_two_workers_hands_off_uploads_and_tells_each_once_through_a_lost_worker(
    fleet: Fleet, names: tuple[str, str]
) -> None:
    dep, c = fleet.dep, LocalCluster(CLUSTER_DIR)
    t_start = time.monotonic()
    dep.wait_dags({SWEEP, CLEANUP})
    done, up = names
    _tree(done, ("trace_jobs", "exports"))
    _tree(up, ("checkpoints/step_10", "exports"))
    fleet.hub.repos.update(
        {
            ("model", f"{ORG}/{done}"): ["config.json", "model-00001-of-00001.safetensors"],
            ("dataset", f"{ORG}/{done}-traces"): ["data/train-00000-of-00001.parquet"],
        }
    )
    ids = {n: c.submit(n, "echo done") for n in (done, up)}
    for j in ids.values():
        c.wait_finished(j, "COMPLETED")
        c.wait_windowed(j)
    ended = dt.datetime.now(dt.UTC)
    minute = ended.replace(second=0, microsecond=0)
    time.sleep(max(0.0, (minute + dt.timedelta(minutes=1, seconds=2) - dt.datetime.now(dt.UTC)).total_seconds()))
    # at once: a backfill of the two windows up to the jobs' end (the DAG paused: its runs wait), a run by
    # hand over the last 6 min (the least the param takes), then the cron
    frm = (minute - dt.timedelta(minutes=1)).isoformat()
    back = dep.airflow("backfill", "create", "--dag-id", SWEEP, "--from-date", frm, "--to-date", minute.isoformat(),
                       "--max-active-runs", "2", "--reprocess-behavior", "none")  # fmt: skip
    assert back.returncode == 0, back.stdout + back.stderr
    manual = dep.post(f"/api/v2/dags/{SWEEP}/dagRuns", {"logical_date": None, "conf": {"lookback_hours": 0.1}})
    dep.patch(f"/api/v2/dags/{SWEEP}", {"is_paused": False})  # the cron's next window comes after the backfill's
    # the upload's act is in flight (sbatch made its job, --wait holds the answer)
    first = _until("the upload job submitted", 420, lambda: _uploads(up))
    theirs = {r["dag_run_id"] for r in _runs(dep, SWEEP) if r["run_type"] in ("backfill", "manual")}

    def all_three() -> bool:  # the backfill's and the by-hand runs done, and a cron run (it waits: max_active_runs 1)
        runs = _runs(dep, SWEEP)
        done = {r["dag_run_id"] for r in runs if r["state"] in DONE}
        return done >= theirs | {manual["dag_run_id"]} and any(
            r["run_type"] == "scheduled" and r["state"] in DONE for r in runs
        )

    _until("the backfill, the run by hand and a cron run done", 480, all_three)
    dep.patch(f"/api/v2/dags/{SWEEP}", {"is_paused": True})  # no new cron run: the kill hits the act alone
    _until("no sweep task running", 420, lambda: all(_settled(dep, r) for r in _runs(dep, SWEEP)))
    running = _until(
        "a cleanup run's upload task running, its delete done",
        120,
        lambda: next(
            (
                (r["dag_run_id"], _ti(dep, CLEANUP, r["dag_run_id"], "upload"))
                for r in _runs(dep, CLEANUP)
                if _ti(dep, CLEANUP, r["dag_run_id"], "upload")["state"] == "running"
                and _ti(dep, CLEANUP, r["dag_run_id"], "verify")["state"] in DONE | {"skipped"}
            ),
            None,
        ),
    )
    run_id, ti = running
    assert (ti["hostname"], ti["queue"]) == (W2, "acts-b"), ti  # the upload's queue: worker 2's alone
    os.killpg(fleet.worker_pid("worker2"), signal.SIGKILL)
    lost = _until("the lost worker's task failed", 180,
                  lambda: (t := _ti(dep, CLEANUP, run_id, "upload"))["state"] == "failed" and t)  # fmt: skip
    # a person clears it: the same run's next try waits in acts-b until worker 2's host is back
    dep.post(f"/api/v2/dags/{CLEANUP}/clearTaskInstances",
             {"dry_run": False, "dag_run_id": run_id, "task_ids": ["upload"], "include_downstream": True,
              "only_failed": False, "reset_dag_runs": True})  # fmt: skip
    time.sleep(20)
    assert _ti(dep, CLEANUP, run_id, "upload")["state"] in ("queued", "scheduled", None), "ran with no worker on acts-b"
    back = deploy(fleet.env, "up", timeout=600)
    assert back.returncode == 0 and "worker2 started" in back.stdout, back.stdout + back.stderr
    retry = _until("the cleared upload task's retry", 300,
                   lambda: (t := _ti(dep, CLEANUP, run_id, "upload"))["state"] in DONE and t["try_number"] > lost["try_number"] and t)  # fmt: skip
    assert retry["state"] == "success", retry
    _until("every sweep run done", 300, lambda: all(_settled(dep, r) for r in _runs(dep, SWEEP)))
    _until("every cleanup run done", 300, lambda: all(r["state"] in DONE for r in _runs(dep, CLEANUP)) or None)
    runs = _runs(dep, SWEEP)
    frozen = [r["dag_run_id"] for r in runs if r["state"] == "running"]  # a cron run the pause caught: stays there
    sweeps = [r for r in runs if r["state"] in DONE]  # (a cron run queued while paused never ran)
    kinds = sorted({r["run_type"] for r in sweeps})
    assert {"backfill", "manual", "scheduled"} <= set(kinds), kinds
    assert manual["dag_run_id"] in {r["dag_run_id"] for r in sweeps}
    assert all(r["state"] == "success" for r in sweeps), [(r["dag_run_id"], r["state"]) for r in sweeps]

    # each hand-off given once: one cleanup run's conf holds each job, the ledger names that run
    cleanups = _runs(dep, CLEANUP)
    given = {n: [r["dag_run_id"] for r in cleanups if any(j["name"] == n for j in r["conf"].get("jobs") or [])]
             for n in (done, up)}  # fmt: skip
    assert {n: len(v) for n, v in given.items()} == {done: 1, up: 1}, given
    ledger = fleet.ledger()
    entry = {n: ledger.jobs[f"local|{ids[n]}"] for n in (done, up)}
    assert sum(1 for k in entry[done].handoffs if k.startswith("cleanup")) == 1, entry[done].handoffs
    # one upload job, found again by its name after the lost worker, never submitted twice
    ups = [a for a in entry[up].acts if a["kind"] == "upload"]
    assert [a["upload_job"] for a in ups if a["upload_job"]] == first and len(first) == 1, ups
    sh("scontrol", "update", f"jobid={first[0]}", "StartTime=now", check=False)  # let it run now
    time.sleep(5)
    assert _uploads(up) == first
    # the delete ran once: the hub held it, its trees are gone
    assert not (ARTIFACTS / done / "exports").exists()
    deletes = [r["dag_run_id"] for r in cleanups if _ti(dep, CLEANUP, r["dag_run_id"], "delete")["state"] == "success"]
    assert deletes == given[done], deletes
    # tasks ran on both workers; the delete on worker 1 (acts-a), the upload's two tries on worker 2 (acts-b)
    tis = [t for r in sweeps + cleanups for t in dep.task_instances(r["dag_id"], r["dag_run_id"])]
    hosts = {t["hostname"] for t in tis if t.get("hostname")}
    assert hosts == {W1, W2}, hosts
    ran = {(t["task_id"], t["hostname"], t["queue"]) for t in tis if t["dag_id"] == CLEANUP and t["state"] == "success"
           and t["task_id"] in ("delete", "upload")}  # fmt: skip
    assert ran == {("delete", W1, "acts-a"), ("upload", W2, "acts-b")}, ran
    assert lost["hostname"] == retry["hostname"] == W2
    # worker 2's task logs in the UI: served from its own disk by its log server (127.0.0.2), both tries
    for t in (lost, retry):
        text = _served_log(dep, CLEANUP, run_id, "upload", t["try_number"])
        assert "Could not read served logs" not in text and f"http://{W2}:" in text, text[:500]
    assert up in _served_log(dep, CLEANUP, run_id, "upload", retry["try_number"])  # the task's own rows
    deleted_on = _ti(dep, CLEANUP, deletes[0], "delete")
    text = _served_log(dep, CLEANUP, deletes[0], "delete", deleted_on["try_number"])
    # worker 1 shares the API server's AIRFLOW_HOME (one host here): its log is read from that disk
    assert "Could not read" not in text and done in text, text[:500]
    # each job told in one digest
    told = {n: [p for p in fleet.posts if n in json.dumps(p)] for n in (done, up)}
    assert len(told[done]) == 1, told[done]
    # every sweep's run log in the Sweeps page, served from the shared store
    page = dep.client.get("/sweeps/")
    assert page.status_code == 200, page.text[:300]
    for r in sweeps:
        log = dep.xcom(SWEEP, r["dag_run_id"], "render")["run_log"]
        assert r["dag_run_id"] in page.text or Path(log).name in page.text, r["dag_run_id"]
    print(
        f"\nfleet ({fleet.state_url and 'postgres' or 'sqlite'}): sweeps {[(r['run_type'], r['state']) for r in sweeps]}, "
        f"held by the pause {frozen}, "
        f"workers {sorted(hosts)}, delete on {deleted_on['hostname']} ({deleted_on['queue']}), upload lost on "
        f"{lost['hostname']} retried on {retry['hostname']} ({retry['queue']}), "
        f"hand-offs {given}, uploads {first}, digests { ({n: len(v) for n, v in told.items()}) }, deletes {deletes}, "
        f"{time.monotonic() - t_start:.0f} s"
    )
