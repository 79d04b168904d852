"""The Sweeps page is guarded by read access to the sweep DAG itself (issue 30, item 10), through a
real api-server: its Airflow auth manager (SimpleAuthManager in multi-team mode, where a DAG's team
is its bundle's) lets ``rita`` (viewer, team research) read ``research_dag`` and not
``monitor_cron_sweep``; ``otto`` (viewer, team ops) reads the sweep DAG. Before, the page checked the
DAG named by the request's own ``?dag_id=`` (or none at all): rita read every cluster's jobs and log
tails with ``?dag_id=research_dag``. A run log (``runlog?name=…``) is guarded the same way, and
only a file of the run-log store is served (a path outside it is 404). The metadata DB is a copy of this checkout's, with the two
teams, their bundles and the two DAGs' rows added.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from browser import api_server, passwords_file

from sweep_core.history.rows import sweep_frame
from sweep_core.history.store import HistoryStore
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

pytestmark = pytest.mark.slow  # a real api-server: not in scripts/test.sh --fast

SWEEP_DAG, OTHER_DAG = "monitor_cron_sweep", "research_dag"
TEAMS = """
from airflow.models.dag import DagModel
from airflow.models.dagbundle import DagBundleModel
from airflow.models.team import Team
from airflow.utils.session import create_session

with create_session() as s:
    for team, dag_id in (("ops", "monitor_cron_sweep"), ("research", "research_dag")):
        t = s.get(Team, team) or Team(name=team)
        b = s.get(DagBundleModel, f"{team}-bundle") or DagBundleModel(name=f"{team}-bundle")
        b.teams = [t]
        s.add_all([t, b])
        s.flush()
        dag = s.get(DagModel, dag_id)  # the copy may hold it (runs of earlier tests refer to it): re-homed
        if dag is None:
            dag = DagModel(dag_id=dag_id, fileloc=f"/dags/{dag_id}.py", timetable_type="", max_active_tasks=16,
                           max_consecutive_failed_dag_runs=0, has_task_concurrency_limits=False, is_paused=False,
                           is_stale=False)
        dag.bundle_name = b.name
        s.add(dag)
"""


def _token(base: str, log: Path, user: str) -> str:
    pw = json.loads(passwords_file(log).read_text())[user]
    r = httpx.post(f"{base}/auth/token", json={"username": user, "password": pw}, timeout=30)
    r.raise_for_status()
    return str(r.json()["access_token"])


def test_the_page_needs_read_access_to_the_sweep_dag_not_to_a_dag_the_query_names(tmp_path) -> None:
    db = tmp_path / "airflow.db"
    # SQLite's backup API, never a file copy: opening and closing the live DB file in this process
    # drops every POSIX lock SQLite holds on it here, and another process (an api-server) may then
    # delete the WAL index under this process's open connections ("disk I/O error" ever after).
    with sqlite3.connect(Path(os.environ["AIRFLOW_HOME"]) / "airflow.db") as live, sqlite3.connect(db) as copy:
        live.backup(copy)
    live.close()
    copy.close()
    env = {
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{db}",
        "AIRFLOW__CORE__MULTI_TEAM": "True",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,rita:viewer:research,otto:viewer:ops",
        "SWEEP_HISTORY": str(tmp_path / "history"),
        "SWEEP_RUN_LOG_DIR": str(tmp_path / "logs"),
    }
    subprocess.run([sys.executable, "-c", TEAMS], env={**os.environ, **env}, check=True, timeout=120)
    end = dt.datetime(2026, 12, 3, tzinfo=dt.UTC)
    job = Job("hpc", "41", "rl__secret_run", "RUNNING", "squeue", bucket="RL", log_tail="token=hunter2 step 9")
    snap = ClusterSnapshot("hpc", "slurm", ClusterStatus.OK, running=[job], finished=[])
    store = HistoryStore(tmp_path / "history")
    path = store.append(sweep_frame([snap], [], run_id="r", window_start=end - dt.timedelta(hours=3), window_end=end),
                        run_id="r", window_end=end)  # fmt: skip
    tail = f"sweep={path.name}&cluster=hpc&job_id=41"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "2026-12-03_monitor-sweep-0000Z.md").write_text("# run log of r: rl__secret_run\n")
    (tmp_path / "outside.md").write_text("not the store's")
    runlog = "runlog?name=2026-12-03_monitor-sweep-0000Z.md"
    with api_server(env, tmp_path / "api-server.log") as base:
        rita = {"Authorization": f"Bearer {_token(base, tmp_path / 'api-server.log', 'rita')}"}
        otto = {"Authorization": f"Bearer {_token(base, tmp_path / 'api-server.log', 'otto')}"}
        get = lambda url, who: httpx.get(f"{base}{url}", headers=who, timeout=60)  # noqa: E731
        # the auth manager really scopes by DAG: rita reads her team's DAG, not the sweep DAG
        readable = lambda who: {d["dag_id"] for d in get("/api/v2/dags", who).json()["dags"]}  # noqa: E731
        assert OTHER_DAG in readable(rita) and SWEEP_DAG not in readable(rita) and SWEEP_DAG in readable(otto)
        assert get(f"/api/v2/dags/{SWEEP_DAG}/dagRuns", rita).status_code == 403
        for url in ("/sweeps/", f"/sweeps/?dag_id={OTHER_DAG}", f"/sweeps/tail?{tail}&dag_id={OTHER_DAG}",
                    "/sweeps/?dag_id=~", f"/sweeps/tail?{tail}", f"/sweeps/{runlog}", "/sweeps/metrics",
                    f"/sweeps/metrics?dag_id={OTHER_DAG}"):  # fmt: skip
            r = get(url, rita)
            assert r.status_code == 403, (url, r.status_code)
            assert "rl__secret_run" not in r.text and "hunter2" not in r.text
        r = get("/sweeps/metrics", otto)  # the Prometheus endpoint: the same permission
        assert r.status_code == 200 and 'sweep_jobs{bucket="RL",cluster="hpc",state="RUNNING"} 1.0' in r.text
        page = get("/sweeps/", otto)
        assert page.status_code == 200 and "rl__secret_run" in page.text and "hunter2" not in page.text
        r = get(f"/sweeps/tail?{tail}", otto)
        assert (
            r.status_code == 200
            and r.text == "token=hunter2 step 9"
            and r.headers["content-type"].startswith("text/plain")
        )
        assert get(f"/sweeps/tail?sweep={path.name}&cluster=hpc&job_id=999", otto).status_code == 404
        r = get(f"/sweeps/{runlog}", otto)  # the run log, served by the page from the run-log store
        assert r.status_code == 200 and r.text == "# run log of r: rl__secret_run\n"
        assert r.headers["content-type"].startswith("text/plain")
        for outside in ("../outside.md", "%2E%2E%2Foutside.md", str(tmp_path / "outside.md")):
            assert get(f"/sweeps/runlog?name={outside}", otto).status_code == 404, outside
