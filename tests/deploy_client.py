"""The deployment test's handle on a running deployment (scripts/deploy_local.sh): the REST API as
the UI calls it (a token from /auth/token), the airflow CLI with the deployment's airflow.env, and
the split of one sweep's wall time (gather, settle wait, fan-in work, Airflow overhead)."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import shlex
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

DONE = {"success", "failed"}
FAN_IN = ("bucket", "render", "handoffs", "handoff_branch", "history", "notify")


SLOTS = int(os.environ.get("SWEEP_DEPLOY_SLOTS", "2"))


@contextlib.contextmanager
def deployment_slot() -> Iterator[None]:
    """Held while a test's deployment runs: at most ``SWEEP_DEPLOY_SLOTS`` (default 2) at a time on
    this machine (scripts/test.sh runs two chains of them, each in its own worker: tests/conftest.py)."""
    files = [open(f"/var/tmp/sweep-deploy-slot{k}.lock", "w") for k in range(max(1, SLOTS))]  # noqa: SIM115
    try:
        while True:
            for f in files:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                yield
                return
            time.sleep(2)
    finally:
        for f in files:
            f.close()


SCRIPT = str(Path(__file__).resolve().parents[1] / "scripts" / "deploy_local.sh")
# What a test's Airflow services need less of than production's (CPU: a 2-core machine runs two
# deployments and the other tests at once): one API server worker, and each DAG file parsed once
# (the files do not change during a test) rather than every 30 s.
TEST_SERVICES = {
    "SWEEP_DEPLOY_API_WORKERS": "1",
    "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
}
PORTS = ("API", "PG", "REDIS", "WORKER_LOG", "TRIGGER_LOG", "HEALTH")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def deploy_env(home: Path, executor: str, **extra: str) -> dict[str, str]:
    """The environment scripts/deploy_local.sh runs with: this one, ``extra`` (SWEEP_CONFIG, …), the
    deployment under ``home/deploy`` on ``executor``, a free port each, no AIRFLOW_HOME of the tests."""
    env = {
        **os.environ,
        **TEST_SERVICES,
        **extra,
        "SWEEP_DEPLOY_HOME": str(home / "deploy"),
        "SWEEP_DEPLOY_EXECUTOR": executor,
    }
    env.update({f"SWEEP_DEPLOY_{k}_PORT": str(free_port()) for k in PORTS})
    env.pop("AIRFLOW_HOME", None)
    return env


def deploy(env: dict[str, str], action: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``scripts/deploy_local.sh ACTION`` (up, down, status) with ``env``."""
    return subprocess.run([SCRIPT, action], env=env, capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def deployed(env: dict[str, str], connections: Path) -> Iterator[Deployment]:
    """A deployment up (``env`` from deploy_env), its REST client logged in as admin and the lab's
    Connections imported; brought down after, whatever happened."""
    try:
        up = deploy(env, "up", timeout=600)
        assert up.returncode == 0, up.stdout + up.stderr
        dep = Deployment.connect(Path(env["SWEEP_DEPLOY_HOME"]), int(env["SWEEP_DEPLOY_API_PORT"]))
        dep.airflow("connections", "import", str(connections))
        yield dep
    finally:
        deploy(env, "down")


def _secrets(home: Path) -> dict[str, str]:
    lines = (home / "secrets.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


@dataclass
class Deployment:
    home: Path
    client: httpx.Client

    @classmethod
    def connect(cls, home: Path, port: int) -> Deployment:
        s = _secrets(home)
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
        user, password = s["_AIRFLOW_WWW_USER_USERNAME"], s["_AIRFLOW_WWW_USER_PASSWORD"]
        token = client.post("/auth/token", json={"username": user, "password": password})
        token.raise_for_status()
        client.headers["Authorization"] = f"Bearer {token.json()['access_token']}"
        return cls(home, client)

    def get(self, path: str, **params: Any) -> Any:
        r = self.client.get(path, params=params)
        r.raise_for_status()
        return r.json()

    def post(self, path: str, body: dict[str, Any]) -> Any:
        r = self.client.post(path, json=body)
        assert r.status_code < 300, r.text
        return r.json()

    def patch(self, path: str, body: dict[str, Any]) -> Any:
        r = self.client.patch(path, json=body)
        assert r.status_code < 300, r.text
        return r.json()

    def airflow(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``source airflow.env && airflow ARGS`` (what a person types)."""
        cmd = f"source {shlex.quote(str(self.home / 'airflow.env'))} && airflow {shlex.join(args)}"
        return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=timeout)

    def _until(self, what: str, timeout: float, probe: Any) -> Any:
        end, last = time.monotonic() + timeout, None
        while time.monotonic() < end:
            last = probe()
            if last is not None and last is not False:
                return last
            time.sleep(2)
        raise AssertionError(f"{what}: not after {timeout}s (last: {last!r})")

    def wait_dags(self, dag_ids: set[str], timeout: float = 180) -> dict[str, dict[str, Any]]:
        def probe() -> Any:
            dags = {d["dag_id"]: d for d in self.get("/api/v2/dags")["dags"]}
            return dags if dag_ids <= set(dags) else None

        return self._until(f"DAGs {sorted(dag_ids)} parsed", timeout, probe)

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        return self.get(f"/api/v2/dags/{dag_id}/dagRuns", order_by="run_after", limit=100)["dag_runs"]

    def wait_run(self, dag_id: str, run_id: str, timeout: float) -> dict[str, Any]:
        def probe() -> Any:
            r = self.client.get(f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}")
            return r.json() if r.status_code == 200 and r.json()["state"] in DONE else None

        return self._until(f"{dag_id} {run_id} done", timeout, probe)

    def _wait_runs(self, dag_id: str, run_type: str, count: int, timeout: float) -> list[dict[str, Any]]:
        def probe() -> Any:
            done = [r for r in self.runs(dag_id) if r["run_type"] == run_type and r["state"] in DONE]
            return done if len(done) >= count else None

        return self._until(f"{count} {run_type} runs of {dag_id}", timeout, probe)

    def wait_scheduled(self, dag_id: str, count: int, timeout: float) -> list[dict[str, Any]]:
        return self._wait_runs(dag_id, "scheduled", count, timeout)

    def wait_backfill(self, dag_id: str, count: int, timeout: float) -> list[dict[str, Any]]:
        return self._wait_runs(dag_id, "backfill", count, timeout)

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        path = f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances"
        return self.get(path)["task_instances"]

    def explain(self, dag_id: str, run_id: str, lines: int = 25) -> str:
        """What a failed wait needs to be read: the run's task instances (state, try, host), the last
        ``lines`` of each unfinished or failed one's log (REST), and of the scheduler's own log."""
        out = []
        try:
            for ti in self.task_instances(dag_id, run_id):
                out.append(
                    f"{ti['task_id']}[{ti['map_index']}] {ti['state']} try {ti['try_number']} on {ti['hostname']}"
                )
                if ti["state"] in ("success", "skipped", None) or not ti["try_number"]:
                    continue
                path = (f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{ti['task_id']}"
                        f"/logs/{ti['try_number']}")  # fmt: skip
                r = self.client.get(path, params={"map_index": ti["map_index"]}, headers={"Accept": "text/plain"})
                out += [f"  | {line}" for line in r.text.splitlines()[-lines:]]
        except (httpx.HTTPError, KeyError) as exc:
            out.append(f"(the REST API did not answer: {exc})")
        sched = self.home / "logs" / "scheduler.log"
        if sched.exists():
            out += ["scheduler.log:"] + [f"  | {x}" for x in sched.read_text(errors="replace").splitlines()[-lines:]]
        return "\n".join(out)

    def xcom(self, dag_id: str, run_id: str, task_id: str) -> Any:
        path = f"/api/v2/dags/{dag_id}/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}"
        return self.get(f"{path}/xcomEntries/return_value", deserialize=True, stringify=False)["value"]


def _t(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _secs(ti: dict[str, Any]) -> float:
    start, end = _t(ti.get("start_date")), _t(ti.get("end_date"))
    return (end - start).total_seconds() if start and end and ti["state"] == "success" else 0.0


def run_timing(tis: list[dict[str, Any]], run: dict[str, Any], cluster: str = "local", settle_s: int = 10) -> str:
    """One sweep's wall time split: the gather (of which the settle wait: the gather script sleeps
    until window end + settle_s), the fan-in's work (bucket .. handoff_branch), the rest of the
    critical path's task time (step0, the trigger), and Airflow's overhead (queueing, task start,
    scheduling gaps) = wall time - the critical path's task time."""
    by = {ti["task_id"]: ti for ti in tis}
    total = (_t(run["end_date"]) - _t(run["start_date"])).total_seconds()  # type: ignore[operator]
    gather = by[f"{cluster}.gather"]
    window_end = _t(run.get("data_interval_end")) or _t(run["run_after"])
    settle = min(
        max((window_end + dt.timedelta(seconds=settle_s) - _t(gather["start_date"])).total_seconds(), 0), settle_s
    )  # type: ignore[operator]
    fan_in = sum(_secs(by[t]) for t in FAN_IN)
    triggers = max((_secs(ti) for t, ti in by.items() if t.startswith("trigger_")), default=0.0)
    other = _secs(by[f"{cluster}.step0"]) + triggers
    overhead = total - _secs(gather) - fan_in - other
    return (
        f"wall {total:.1f} s = gather {_secs(gather):.1f} s (settle wait {settle:.1f} s) + fan-in work {fan_in:.1f} s"
        f" + step0/trigger {other:.1f} s + Airflow overhead {overhead:.1f} s"
    )
