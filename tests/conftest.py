"""Session set-up: the bundled local Slurm cluster (real) and an Airflow Connection for it."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lab import LOGS, USER, WORKER

ROOT = Path(__file__).resolve().parents[1]
CLUSTER_DIR = Path(os.environ.get("SWEEP_CLUSTER_DIR", "/var/tmp/sweep-local-cluster"))
SCRIPT = ROOT / "scripts" / "local_cluster.sh"


def _lane_metadata_db() -> None:
    """An xdist worker's own Airflow metadata DB: a copy (SQLite's backup API, never a file copy
    of a live DB) of the migrated one, in ``<AIRFLOW_HOME>-<worker>``, set before Airflow is imported."""
    home = os.environ.get("AIRFLOW_HOME")
    if not WORKER or not home or os.environ.get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"):
        return
    import sqlite3

    mine = Path(f"{home.rstrip('/')}-{WORKER}")
    mine.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(Path(home) / "airflow.db") as src, sqlite3.connect(mine / "airflow.db") as dst:
        src.backup(dst)
    os.environ["AIRFLOW_HOME"] = str(mine)


_lane_metadata_db()
# dag.test() serializes the DAGs of the dags-folder bundle (settings.DAGS_FOLDER, read once when
# airflow is first imported): this checkout's dags/, not whatever checkout env.sh pointed at.
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(ROOT / "dags")
# dag.test() cannot run a DAG with a deadline= in Airflow 3.3.2: the overrun alert is tested on its own
os.environ.setdefault("SWEEP_OVERRUN_ALERT", "off")


def sh(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=timeout)


@dataclass
class LocalCluster:
    """Handles to the real local cluster: submit jobs as the cluster user, stop/start daemons."""

    dir: Path

    def submit(self, name: str, command: str, *extra: str, output: str | None = None) -> str:
        out = output or str(LOGS / "%x-%j.out")
        res = sh("runuser", "-u", USER, "--", "sbatch", "--parsable", "-J", name, "-o", out, *extra, "--wrap", command)
        return res.stdout.strip().split(";")[0]

    def squeue_state(self, job_id: str) -> str:
        res = sh("squeue", "-h", "-j", job_id, "-o", "%T", check=False)
        return res.stdout.strip().splitlines()[0] if res.returncode == 0 and res.stdout.strip() else ""

    def sacct_state(self, job_id: str) -> str:
        res = sh("sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State", check=False)
        return res.stdout.strip().splitlines()[0] if res.stdout.strip() else ""

    def wait_running(self, *job_ids: str, timeout: float = 60) -> None:
        end = time.time() + timeout
        while time.time() < end:
            states = {j: self.squeue_state(j) for j in job_ids}
            if all(s == "RUNNING" for s in states.values()):
                return
            time.sleep(0.5)
        raise AssertionError(f"jobs not RUNNING after {timeout}s: {states}")

    def wait_finished(self, job_id: str, state: str, timeout: float = 60) -> None:
        end = time.time() + timeout
        seen = ""
        while time.time() < end:
            seen = self.sacct_state(job_id)
            if seen.startswith(state):
                return
            time.sleep(0.5)
        raise AssertionError(f"job {job_id} not {state} after {timeout}s (sacct says {seen!r})")

    def wait_windowed(self, job_id: str, timeout: float = 90) -> None:
        """Wait until slurmdbd's windowed answer (what the sweep asks: -S/-E with terminal states)
        lists the ended job: it lags `sacct -j` by seconds, more while slurmctld is busy."""
        end = time.time() + timeout
        while time.time() < end:
            res = sh("sacct", "-u", USER, "-S", "now-2hours", "-E", "now", "-X", "-P", "-n",
                     "-s", "BF,CA,CD,DL,F,NF,OOM,PR,RQ,TO", "-o", "JobID", check=False)  # fmt: skip
            if job_id in res.stdout.split():
                return
            time.sleep(0.5)
        raise AssertionError(f"job {job_id} not in the windowed sacct after {timeout}s")

    def stdout_path(self, job_id: str) -> Path:
        res = sh("scontrol", "show", "job", job_id)
        for line in res.stdout.splitlines():
            if line.strip().startswith("StdOut="):
                return Path(line.strip()[len("StdOut=") :])
        raise AssertionError(f"no StdOut for {job_id}")

    def wait_log(self, job_id: str, timeout: float = 30) -> Path:
        path = self.stdout_path(job_id)
        end = time.time() + timeout
        while time.time() < end and not (path.exists() and path.stat().st_size > 0):
            time.sleep(0.3)
        return path

    def stop(self, daemon: str) -> None:
        sh(str(SCRIPT), "stop-one", daemon)

    def start(self, daemon: str) -> None:
        sh(str(SCRIPT), "start-one", daemon, timeout=180)

    def sshd_accepts(self, node: str) -> int:
        """How many SSH logins the node's sshd has accepted so far (from its own log)."""
        log = self.dir / "log" / f"sshd-{node}.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return text.count(f"Accepted publickey for {USER} ")  # this lane's logins only

    def cancel_all(self) -> None:
        sh("runuser", "-u", USER, "--", "scancel", "-u", USER, check=False)


# Tests that start real services (the Slurm cluster, an iris controller, an api-server): left out of
# `scripts/test.sh --fast`, the inner loop's tier (unit + DagBag).
SLOW_FIXTURES = frozenset({"local_cluster", "_local_cluster_session", "controller"})


# The files that start a real deployment (marker deploy), in two chains: scripts/test.sh's exclusive
# run (--dist loadfile) hands each chain to one worker, as it hands a file, so two deployments run at
# once at most, each chain's one after the other, and no worker waits for a deployment slot.
DEPLOY_CHAINS = {
    "tests/dags/test_deployment_fleet.py": "deployments-1",
    "tests/dags/test_deployment.py": "deployments-1",
    "tests/dags/test_watch_latency_local.py": "deployments-2",
    "tests/handoffs/relaunch/test_wedge_relaunch_e2e_local.py": "deployments-2",
}


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist loadfile, a deployment chain (DEPLOY_CHAINS) taken as one file. (xdist's loadgroup
    cannot do it under pytest 9.2: it renames ``item._nodeid``, which a node id no longer reads.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ChainScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return DEPLOY_CHAINS.get(path, path)

    return ChainScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that needs the cluster, a deployment or a real iris controller, and
    ``cluster`` every test that uses the local Slurm cluster (its fixture, even through another):
    scripts/test.sh runs the ``cluster`` tests in one lane and every other test beside them. A
    ``deploy`` file not in DEPLOY_CHAINS is a usage error (it would run as a third deployment)."""
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        if "_local_cluster_session" in uses and not item.get_closest_marker("cluster"):
            item.add_marker(pytest.mark.cluster)
        if uses & SLOW_FIXTURES or any(item.get_closest_marker(m) for m in ("cluster", "deploy", "dagrun")):
            item.add_marker(pytest.mark.slow)
        path = item.nodeid.split("::", 1)[0]
        if item.get_closest_marker("deploy") and path not in DEPLOY_CHAINS:
            raise pytest.UsageError(f"{path} starts a deployment (marker deploy): name its chain in DEPLOY_CHAINS")
    items.sort(key=_minutes_first)  # stable: the rest keep their order


def _minutes_first(item: pytest.Item) -> int:
    """The longest files first (marker ``long(minutes)``): scripts/test.sh hands files to its parallel
    workers in collection order (--no-loadscope-reorder), so no long one starts last."""
    mark = item.get_closest_marker("long")
    return -int(mark.args[0]) if mark else 0


@pytest.fixture(scope="session")
def _local_cluster_session():
    """The real local cluster, started if it is not running (needs root); jobs cancelled after."""
    status = sh(str(SCRIPT), "status", check=False).stdout
    if "stopped" in status or not status:
        res = sh(str(SCRIPT), "up", check=False, timeout=900)
        if res.returncode != 0:
            pytest.fail(f"local cluster did not come up:\n{res.stdout}\n{res.stderr}")
    conns = json.loads((CLUSTER_DIR / "connections.json").read_text())
    for conn_id, conn in conns.items():  # this lane's Slurm user logs in
        os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps({**conn, "login": USER})
    cluster = LocalCluster(CLUSTER_DIR)
    cluster.cancel_all()
    yield cluster
    cluster.cancel_all()


@pytest.fixture
def local_cluster(_local_cluster_session):
    """The session's cluster for one test; the sweep user's jobs are cancelled when the test ends,
    so a job a test leaves RUNNING (a NaN-logging RL job, a held successor) cannot raise a flag or
    hand-off in the next test's sweep, whatever order the tests run in."""
    yield _local_cluster_session
    _local_cluster_session.cancel_all()


@pytest.fixture
def tag() -> str:
    """A unique token for this test's job names."""
    return "t" + uuid.uuid4().hex[:6]


@pytest.fixture(scope="module")
def controller(tmp_path_factory):
    """A REAL local iris controller for one test module (tests/iris_local.py): (url, its HOME)."""
    import signal

    from iris_local import start_controller

    run = tmp_path_factory.mktemp("iris")
    (run / "tmp").mkdir()
    proc, url = start_controller(run)
    yield url, run
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture
def figure(record_property) -> Callable[[str], None]:
    """``figure(text)``: a figure the test measured (a latency, a timeline step), printed and listed
    again in the session's summary ("measured figures"), even under -q and from xdist workers."""

    def note(text: str) -> None:
        print(text)
        record_property("figure", text)

    return note


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The figures tests measured (fixture ``figure``), one per line, test by test."""
    lines = [
        f"{rep.nodeid.split('::')[-1]}: {value}"
        for reports in terminalreporter.stats.values()
        for rep in reports
        if getattr(rep, "when", None) == "call"
        for key, value in getattr(rep, "user_properties", ())
        if key == "figure"
    ]
    if lines:
        terminalreporter.section("measured figures")
        for line in lines:
            terminalreporter.write_line(line)
