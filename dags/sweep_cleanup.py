"""sweep_cleanup: completion -> cleanup by flavor (spec §4). Triggered by monitor_cron_sweep with
the completed jobs in ``conf``, or by hand from the UI (dry run by default).

    consolidate (datagen arrays, sweep.yaml consolidate:): every chunk COMPLETED (squeue validated)
      -> submit the consolidate job once; track it; COMPLETED + on the hub -> tracker row ✅
      -> plan (probe: squeue validated, sacct done-signal, realpath of every tree; hub check; guards)
      -> upload (hub lacks it, or a salvage: the flavor's upload job submitted once, tracked, retried)
      -> db_register (the hub holds it, not an HF-only series: the flavor's db_register argv run once)
      -> delete (detached rm, only what plan allowed; skipped on dry_run)
      -> verify (trees gone, df -i / quota again: inodes freed)
      -> record (table + the dated run log's actions section)

Thin wiring only: the guards live in plugins/sweep_core/handoffs/cleanup/plan.py, applied by
its plan use-case (usecase.py); rm, verify and the table are execute.py; the upload is
plugins/sweep_core/handoffs/upload/; DB registration plugins/sweep_core/handoffs/db_register/; consolidate is plugins/sweep_core/handoffs/consolidate/ (an
array's trees stay until it released them).
"""

from __future__ import annotations

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, Param, TriggerRule

from sweep_operators import cleanup_tasks, consolidate_tasks
from sweep_operators.dag_common import config_paths, handoff_dag_kwargs
from sweep_operators.reliability import handoff_limits
from sweep_operators.task_ids import Cleanup, DagId

OPS_DIR, SWEEP_YAML = config_paths(__file__)

with DAG(
    **handoff_dag_kwargs(
        DagId.CLEANUP,
        "Confirm artifacts on the HF hub, then rm the on-disk trees and verify the inode reclaim",
        __doc__,
        ["destructive"],
        jobs=Param(
            [],
            type="array",
            items={
                "type": "object",
                "required": ["cluster", "job_id", "name", "flavor"],
                "properties": {k: {"type": "string"} for k in ("cluster", "job_id", "name", "flavor")},
            },
            title="Jobs",
            description='Completed jobs: [{"cluster", "job_id", "name", "flavor": "rl-agentic-job-cleanup" ...}]',
        ),
        reclaim_clusters=Param(
            [],
            type="array",
            items={"type": "string"},
            title="Reclaim clusters",
            description="Also clean the completed-but-not-removed backlog of these clusters (inode reclaim)",
        ),
    )
) as dag:
    common = {"ops_dir": OPS_DIR, "sweep_yaml": SWEEP_YAML}
    consolidate = PythonOperator(
        task_id=Cleanup.CONSOLIDATE, python_callable=consolidate_tasks.consolidate, op_kwargs=common
    )
    plan = PythonOperator(
        task_id=Cleanup.PLAN,
        python_callable=cleanup_tasks.plan,
        op_kwargs=common,
        trigger_rule=TriggerRule.ALL_DONE,  # a failed consolidate step holds only its flavors (hold_of)
    )
    delete = PythonOperator(task_id=Cleanup.DELETE, python_callable=cleanup_tasks.delete, op_kwargs=common)
    upload = PythonOperator(task_id=Cleanup.UPLOAD, python_callable=cleanup_tasks.upload, op_kwargs=common)
    register = PythonOperator(task_id=Cleanup.REGISTER, python_callable=cleanup_tasks.register, op_kwargs=common)
    verify = PythonOperator(task_id=Cleanup.VERIFY, python_callable=cleanup_tasks.verify, op_kwargs=common)
    record = PythonOperator(
        task_id=Cleanup.RECORD,
        python_callable=cleanup_tasks.record,
        op_kwargs={"sweep_yaml": SWEEP_YAML},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    consolidate >> plan >> [upload, register, delete]
    delete >> verify >> record
    [upload, register] >> record
    handoff_limits(dag, SWEEP_YAML, OPS_DIR)  # execution_timeout on every task; retries: read-only only
