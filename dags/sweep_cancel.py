"""sweep_cancel: scancel the jobs a sweep flagged (spec §1 LIVENESS kill, §4 RL collapse cancel+salvage,
resume-overshoot chain links, new-untested KILL verdict), only with a human's approval.
Triggered by monitor_cron_sweep with the flagged jobs in ``conf``, or by hand (dry run by default).

    validate (per cluster one squeue, validated: still RUNNING (PENDING for a spurious chain link),
              same job name; squeue UNKNOWN -> nothing on that cluster)
      -> approve (human-in-the-loop Approve/Reject with the evidence; Reject or timeout -> scancel skipped)
      -> scancel (re-checked in the same script, scancel -u -n -t, sacct confirms CANCELLED; dry_run prints)
      -> record (table + the dated run log's actions section)

Every job needs approval, spurious chain links too: see plugins/sweep_core/cancel_plan.py.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, Param, TriggerRule

from sweep_operators import cancel_tasks

PROJECT = Path(__file__).resolve().parents[1]
OPS_DIR = os.environ.get("SWEEP_OPS_DIR", str(PROJECT / "include" / "ops"))
SWEEP_YAML = os.environ.get("SWEEP_CONFIG", str(PROJECT / "include" / "sweep.yaml"))

with DAG(
    dag_id="sweep_cancel",
    description="Validate, ask a human, then scancel flagged jobs and confirm CANCELLED in sacct",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},
    tags=["monitoring", "handoff", "destructive", "approval"],
    doc_md=__doc__,
    params={
        "jobs": Param(
            [],
            type="array",
            items={
                "type": "object",
                "required": ["cluster", "job_id", "name", "action"],
                "properties": {
                    "cluster": {"type": "string"},
                    "job_id": {"type": "string"},
                    "name": {"type": "string"},
                    "action": {"type": "string", "enum": ["cancel", "cancel+salvage", "kill-approval"]},
                    "evidence": {"type": "string"},
                },
            },
            title="Jobs",
            description='Flagged jobs: [{"cluster", "job_id", "name", "action", "evidence"}]',
        ),
        "dry_run": Param(True, type="boolean", title="Dry run", description="Ask, then print the scancels only"),
        "approval_timeout_minutes": Param(
            None,
            type=["null", "number"],
            exclusiveMinimum=0,
            title="Approval timeout (minutes)",
            description="No answer by then = Reject; empty = sweep.yaml cancel.approval_timeout_minutes",
        ),
        "run_log": Param("", type="string", title="Run log", description="The sweep's dated run log to append to"),
    },
) as dag:
    common = {"ops_dir": OPS_DIR, "sweep_yaml": SWEEP_YAML}
    validate = PythonOperator(task_id="validate", python_callable=cancel_tasks.validate, op_kwargs=common)
    approve = cancel_tasks.CancelApprovalOperator(task_id="approve", sweep_yaml=SWEEP_YAML)
    scancel = PythonOperator(task_id="scancel", python_callable=cancel_tasks.scancel, op_kwargs=common)
    record = PythonOperator(
        task_id="record",
        python_callable=cancel_tasks.record,
        op_kwargs={"sweep_yaml": SWEEP_YAML},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    validate >> approve >> scancel >> record
