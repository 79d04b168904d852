"""The metadata DB's clean-up (sweep.yaml db_clean): Airflow's own ``airflow db clean``, run by the
deployment (no DAG: an Airflow 3 task has no metadata-DB access). Against a real SQLite metadata DB
in the test's own AIRFLOW_HOME, holding watch and report runs made through Airflow's models (their
task instances, an XCom and an audit-log row each): the watch's runs older than a day go, every
DAG's older than 30 days go, the recent ones stay, and no archive table is left behind."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sweep_core.admin.db_clean import WATCH_DAG_ID, clean_commands, failed_tables
from sweep_core.config.db_clean_schema import DbCleanSection

ROOT = Path(__file__).resolve().parents[2]

# (dag id, run id, age in hours): made in the test's metadata DB by MAKE below
RUNS = [
    ("monitor_cron_watch", "scheduled__old", 72),  # 3 days: past the watch's 1 day
    ("monitor_cron_watch", "scheduled__recent", 1),
    ("monitor_cron_sweep", "scheduled__old", 24 * 40),  # 40 days: past every DAG's 30
    ("monitor_cron_sweep", "scheduled__recent", 72),  # 3 days: a report run is kept 30
]

MAKE = """
import datetime as dt, sys
from airflow.dag_processing.bundles.manager import DagBundlesManager
from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
from airflow.models.log import Log
from airflow.models.serialized_dag import SerializedDagModel
from airflow.models.taskinstance import TaskInstance
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
from airflow.utils.state import DagRunState
from airflow.utils.types import DagRunTriggeredByType, DagRunType
from sqlalchemy import select, update

dags, runs = sys.argv[1], [(d, r, int(h)) for d, r, h in (a.split(":") for a in sys.argv[2:])]
DagBundlesManager().sync_bundles_to_db()
for dag_id in sorted({d for d, _, _ in runs}):
    bag = DagBag(dag_folder=f"{dags}/{dag_id}.py")
    assert not bag.import_errors, bag.import_errors
    sync_bag_to_db(bag, bundle_name="dags-folder", bundle_version=None)
now = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
with create_session() as s:
    for dag_id, run_id, hours in runs:
        dag = SerializedDagModel.get(dag_id, session=s).dag
        end = now - dt.timedelta(hours=hours)
        run = dag.create_dagrun(run_id=run_id, logical_date=end - dt.timedelta(minutes=5),
            data_interval=(end - dt.timedelta(minutes=5), end), run_after=end, run_type=DagRunType.SCHEDULED,
            triggered_by=DagRunTriggeredByType.TIMETABLE, state=DagRunState.SUCCESS, start_date=end, session=s)
        s.flush()
        for ti in s.scalars(select(TaskInstance).where(TaskInstance.dag_id == dag_id, TaskInstance.run_id == run_id)):
            ti.start_date = ti.end_date = end
        XComModel.set(key="return_value", value={"run": run_id}, dag_id=dag_id, task_id="bucket", run_id=run_id,
                      session=s)
        s.add(Log(event="sweep-test", dag_id=dag_id, run_id=run_id))
        s.flush()
        s.execute(update(XComModel).where(XComModel.dag_id == dag_id, XComModel.run_id == run_id).values(timestamp=end))
        s.execute(update(Log).where(Log.dag_id == dag_id, Log.run_id == run_id).values(dttm=end))
"""


def _env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "SWEEP_OVERRUN_ALERT": "off",
        "SWEEP_CONFIG": str(ROOT / "include" / "sweep.yaml"),
    }


def _rows(db: Path) -> dict[str, set[tuple[str, str]]]:
    with sqlite3.connect(db) as c:
        out = {t: set(c.execute(f"SELECT DISTINCT dag_id, run_id FROM {t} WHERE dag_id LIKE 'monitor_cron_%'"))
               for t in ("dag_run", "task_instance", "xcom", "log")}  # fmt: skip
        out["archives"] = {
            (r[0], "") for r in c.execute("SELECT name FROM sqlite_master WHERE name LIKE '_airflow_deleted%'")
        }
    return out


@pytest.mark.dagrun  # a real DAG run / airflow db clean: every run, not --fast
def test_the_scheduled_clean_up_deletes_old_watch_and_report_runs_and_keeps_recent_ones(tmp_path) -> None:
    home = tmp_path / "airflow"
    home.mkdir()
    with (
        sqlite3.connect(Path(os.environ["AIRFLOW_HOME"]) / "airflow.db") as src,
        sqlite3.connect(home / "airflow.db") as dst,
    ):
        src.backup(dst)  # the migrated metadata DB, copied (a fresh `airflow db migrate` takes ~30 s)
    with sqlite3.connect(home / "airflow.db") as c:  # runs other tests left in the copy are not this test's
        for t in ("xcom", "task_instance", "log", "dag_run"):
            c.execute(f"DELETE FROM {t} WHERE dag_id LIKE 'monitor_cron_%'")
    args = [f"{d}:{r}:{h}" for d, r, h in RUNS]
    made = subprocess.run([sys.executable, "-c", MAKE, str(ROOT / "dags"), *args], env=_env(home),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    before = _rows(home / "airflow.db")
    every = {(d, r) for d, r, _ in RUNS}
    for table in ("dag_run", "task_instance", "xcom", "log"):
        assert before[table] == every, table

    done = subprocess.run(
        [sys.executable, "-m", "sweep_core.admin.db_clean"], env=_env(home), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "db clean (--dag-ids monitor_cron_watch): " in done.stdout and "db clean (every DAG): " in done.stdout
    after = _rows(home / "airflow.db")
    kept = {("monitor_cron_watch", "scheduled__recent"), ("monitor_cron_sweep", "scheduled__recent")}
    for table in ("dag_run", "task_instance", "xcom", "log"):
        assert after[table] == kept, table
    assert after["archives"] == set()  # --skip-archive: nothing kept aside in the same database


def test_the_commands_follow_the_config() -> None:
    now = dt.datetime(2026, 12, 5, 3, 17, tzinfo=dt.UTC)
    cfg = DbCleanSection(retention_days=14, watch_retention_days=2, tables=("xcom", "dag_run"), skip_archive=False)
    (watch_ids, watch), (all_ids, every) = clean_commands(cfg, now)
    assert (watch_ids, all_ids) == (WATCH_DAG_ID, "")
    assert watch == ["airflow", "db", "clean", "--clean-before-timestamp", "2026-12-03T03:17:00+00:00",
                     "--tables", "xcom,dag_run", "--yes", "--dag-ids", WATCH_DAG_ID]  # fmt: skip
    assert every[4] == "2026-11-21T03:17:00+00:00" and "--dag-ids" not in every and "--skip-archive" not in every
    assert "--skip-archive" in clean_commands(DbCleanSection(), now)[1][1]


def test_a_table_left_uncleaned_fails_but_deadline_under_dag_ids_is_airflows_own() -> None:
    line = "The following tables were not cleaned due to errors: ['deadline']. Check the logs above for details."
    assert failed_tables(line, WATCH_DAG_ID) == []
    assert failed_tables(line) == ["deadline"]
    assert failed_tables(line.replace("'deadline'", "'deadline', 'xcom'"), WATCH_DAG_ID) == ["xcom"]


def test_the_deployments_run_this_clean_up_at_the_configured_time() -> None:
    import yaml

    from sweep_core.admin.db_clean import next_run

    svc = yaml.safe_load((ROOT / "docker-compose.yaml").read_text())["services"]["airflow-db-clean"]
    assert svc["command"] == "python -m sweep_core.admin.db_clean --loop"
    assert svc["environment"]["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://")
    # the image's installed package (no plugins/ on a path); sweep.yaml found beside the DAGs folder
    assert "PYTHONPATH" not in svc["environment"] and svc["restart"] == "on-failure"
    assert "python -m sweep_core.admin.db_clean --loop" in (ROOT / "scripts" / "deploy_local.sh").read_text()
    at = dt.datetime(2026, 12, 5, 3, 17, tzinfo=dt.UTC)
    assert next_run("17 3 * * *", at) == at + dt.timedelta(days=1)
    assert next_run("17 3 * * *", at - dt.timedelta(minutes=1)) == at
