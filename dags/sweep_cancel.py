"""sweep_cancel: scancel the jobs a sweep flagged (spec §1 LIVENESS kill, §4 RL collapse cancel+salvage,
resume-overshoot chain links, new-untested KILL verdict), only with a human's approval.
Triggered by monitor_cron_sweep with the flagged jobs in ``conf``, or by hand (dry run by default).

    validate (per cluster one squeue, validated: still RUNNING (PENDING for a spurious chain link),
              same job name; squeue UNKNOWN -> nothing on that cluster; RUNNING jobs' evidence and
              the relaunch policy: offered or not, RECURRING, a standing permission, a remembered Reject)
      -> standing (beside approve: jobs a sweep.yaml cancel.standing permission covers, acted on
                   now, no human asked)
      -> approve (mapped: ONE human-in-the-loop task per job, Cancel / Cancel and relaunch / Reject
                  with the evidence; only sweep.yaml notify.approver_users of its cluster may answer,
                  never the user who triggered a by-hand request; Reject or timeout -> nothing done)
      -> scancel (re-checked in the same script: scancel + sacct confirms CANCELLED, or the evidence
                  saved in the ledger and run log, then scontrol requeue; dry_run prints)
      -> record (table + the dated run log's actions section + the ledger's acts)

Without a standing permission every job needs approval: see plugins/sweep_core/handoffs/cancel/plan.py.
The conf only names jobs: a job is the sweep's request only when the ledger's hand-off record, this
run's id and the sweep's history flag row agree (its evidence is the ledger's); anything else is a
BY-HAND request, which always asks (plugins/sweep_core/handoffs/cancel/authority.py).
"""

from __future__ import annotations

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, Param, TriggerRule

from sweep_core.config.handoffs_schema import MAX_APPROVAL_MINUTES
from sweep_core.records.vocab import CANCEL_ACTIONS
from sweep_operators import cancel_tasks
from sweep_operators.approval_notify import ApprovalNotifier
from sweep_operators.dag_common import config_paths, handoff_dag_kwargs
from sweep_operators.reliability import handoff_limits
from sweep_operators.task_ids import Cancel, DagId

OPS_DIR, SWEEP_YAML = config_paths(__file__)

with DAG(
    **handoff_dag_kwargs(
        DagId.CANCEL,
        "Validate, ask a human (or act under a standing permission), then scancel or requeue flagged jobs",
        __doc__,
        ["destructive", "approval"],
        jobs=Param(
            [],
            type="array",
            items={
                "type": "object",
                "required": ["cluster", "job_id", "name", "action"],
                "properties": {
                    "cluster": {"type": "string"},
                    "job_id": {"type": "string"},
                    "name": {"type": "string"},
                    "action": {"type": "string", "enum": [a.value for a in CANCEL_ACTIONS]},
                    "evidence": {"type": "string"},
                },
            },
            title="Jobs",
            description='Jobs: [{"cluster", "job_id", "name", "action", "evidence"}]. A job the sweep did not '
            "hand off to this run is a by-hand request: a human is always asked, never by you, and "
            "the evidence you type is shown as such, never used",
        ),
        approval_timeout_minutes=Param(
            None,
            type=["null", "number"],
            exclusiveMinimum=0,
            maximum=MAX_APPROVAL_MINUTES,
            title="Approval timeout (minutes)",
            description="No answer by then = Reject; empty = sweep.yaml cancel.approval_timeout_minutes",
        ),
    )
) as dag:
    common = {"ops_dir": OPS_DIR, "sweep_yaml": SWEEP_YAML}
    validate = PythonOperator(task_id=Cancel.VALIDATE, python_callable=cancel_tasks.validate, op_kwargs=common)
    to_ask = PythonOperator(task_id=Cancel.TO_ASK, python_callable=cancel_tasks.to_ask)
    standing = PythonOperator(task_id=Cancel.STANDING, python_callable=cancel_tasks.standing, op_kwargs=common)
    approve = cancel_tasks.CancelApprovalOperator.partial(
        task_id=Cancel.APPROVE,
        sweep_yaml=SWEEP_YAML,
        notifiers=[ApprovalNotifier(sweep_yaml=SWEEP_YAML)],
        map_index_template="{{ task.job_key }}",
    ).expand(job_key=to_ask.output)  # one answer per job
    scancel = PythonOperator(
        task_id=Cancel.SCANCEL,
        python_callable=cancel_tasks.scancel,
        op_kwargs=common,
        trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS,  # the jobs approved, whatever the others got
    )
    record = PythonOperator(
        task_id=Cancel.RECORD,
        python_callable=cancel_tasks.record,
        op_kwargs={"sweep_yaml": SWEEP_YAML},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    validate >> standing >> record  # a standing permission waits for no human
    validate >> to_ask >> approve >> scancel >> record
    handoff_limits(dag, SWEEP_YAML, OPS_DIR)  # execution_timeout on every task; retries: read-only only
