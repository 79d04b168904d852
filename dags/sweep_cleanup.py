"""sweep_cleanup: completion -> cleanup by flavor (spec §4). Triggered by monitor_cron_sweep with
the completed jobs in ``conf``, or by hand from the UI (dry run by default).

    plan (probe: squeue validated, sacct done-signal, realpath of every tree; hub check; guards)
      -> delete (detached rm, only what plan allowed; skipped on dry_run)
      -> verify (trees gone, df -i / quota again: inodes freed)
      -> record (table + the dated run log's actions section)

Thin wiring only: guards live in plugins/sweep_core/cleanup_plan.py.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, Param, TriggerRule

from sweep_operators import cleanup_tasks

PROJECT = Path(__file__).resolve().parents[1]
OPS_DIR = os.environ.get("SWEEP_OPS_DIR", str(PROJECT / "include" / "ops"))
SWEEP_YAML = os.environ.get("SWEEP_CONFIG", str(PROJECT / "include" / "sweep.yaml"))

with DAG(
    dag_id="sweep_cleanup",
    description="Confirm artifacts on the HF hub, then rm the on-disk trees and verify the inode reclaim",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},
    tags=["monitoring", "handoff", "destructive"],
    doc_md=__doc__,
    params={
        "jobs": Param(
            [],
            type="array",
            items={
                "type": "object",
                "required": ["cluster", "job_id", "name", "flavor"],
                "properties": {
                    "cluster": {"type": "string"},
                    "job_id": {"type": "string"},
                    "name": {"type": "string"},
                    "flavor": {"type": "string"},
                },
            },
            title="Jobs",
            description='Completed jobs: [{"cluster", "job_id", "name", "flavor": "rl-agentic-job-cleanup" ...}]',
        ),
        "reclaim_clusters": Param(
            [],
            type="array",
            items={"type": "string"},
            title="Reclaim clusters",
            description="Also clean the completed-but-not-removed backlog of these clusters (inode reclaim)",
        ),
        "dry_run": Param(True, type="boolean", title="Dry run", description="Print the plan only; delete nothing"),
        "run_log": Param("", type="string", title="Run log", description="The sweep's dated run log to append to"),
    },
) as dag:
    common = {"ops_dir": OPS_DIR, "sweep_yaml": SWEEP_YAML}
    plan = PythonOperator(task_id="plan", python_callable=cleanup_tasks.plan, op_kwargs=common)
    delete = PythonOperator(task_id="delete", python_callable=cleanup_tasks.delete, op_kwargs=common)
    verify = PythonOperator(task_id="verify", python_callable=cleanup_tasks.verify, op_kwargs=common)
    record = PythonOperator(
        task_id="record",
        python_callable=cleanup_tasks.record,
        op_kwargs={"sweep_yaml": SWEEP_YAML},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    plan >> delete >> verify >> record
