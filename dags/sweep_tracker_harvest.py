"""sweep_tracker_harvest: every pending ⏳ row (with an eval job id) of every tracker markdown
grid: sacct -j -> COMPLETED: results JSON to the tracker's <RUN>/ dir, scores filled, ✅;
empty results: stays ⏳, flagged; FAILED: ❌ with the first real traceback. Every other byte of
the tracker is kept. Triggered by monitor_cron_sweep every sweep, or by hand (dry run default).

    harvest (scan trackers, one read-only SSH session per cluster, write) -> record
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, Param, TriggerRule

from sweep_operators import harvest_tasks

PROJECT = Path(__file__).resolve().parents[1]
OPS_DIR = os.environ.get("SWEEP_OPS_DIR", str(PROJECT / "include" / "ops"))
SWEEP_YAML = os.environ.get("SWEEP_CONFIG", str(PROJECT / "include" / "sweep.yaml"))

with DAG(
    dag_id="sweep_tracker_harvest",
    description="Fill pending eval rows of the tracker grids from finished eval jobs",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},
    tags=["monitoring", "handoff", "tracker"],
    doc_md=__doc__,
    params={
        "dry_run": Param(True, type="boolean", title="Dry run", description="Print what would change; write nothing"),
        "run_log": Param("", type="string", title="Run log", description="The sweep's dated run log to append to"),
    },
) as dag:
    common = {"ops_dir": OPS_DIR, "sweep_yaml": SWEEP_YAML}
    harvest = PythonOperator(task_id="harvest", python_callable=harvest_tasks.harvest, op_kwargs=common)
    record = PythonOperator(
        task_id="record",
        python_callable=harvest_tasks.record,
        op_kwargs={"sweep_yaml": SWEEP_YAML},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    harvest >> record
