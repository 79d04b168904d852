"""sweep_rl_deep_dive: the RL deep-dive probe (runbook: a NEW/UNTESTED RL run needs more than a
table row). Triggered by monitor_cron_sweep for every rl_new_untested job, or by hand with a job id.

    probe (ONE read-only SSH session per cluster: the job's log and chain logs, bounded, the newest
           rollout files of its trace dir, log signatures) -> verdict (KILL / NO-KILL / UNKNOWN settled
           in the ledger: a KILL is a deep_dive_kill cancel hand-off, an UNKNOWN over the cap escalated)
      -> kill_branch -> trigger_cancel (sweep_cancel with the evidence: a human approves, or a
           standing permission naming deep_dive_kill acts) | no_kill
      -> record (table + the dated run log's section)
"""

from __future__ import annotations

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.python import BranchPythonOperator, PythonOperator
from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import DAG, Param, TriggerRule

from sweep_operators import deep_dive_tasks
from sweep_operators.dag_common import config_paths, handoff_dag_kwargs
from sweep_operators.reliability import handoff_limits
from sweep_operators.task_ids import DagId, DeepDive

OPS_DIR, SWEEP_YAML = config_paths(__file__)

with DAG(
    **handoff_dag_kwargs(
        DagId.DEEP_DIVE,
        "RL deep-dive: metric history, rollouts, signatures -> KILL (sweep_cancel asks) / NO-KILL",
        __doc__,
        ["rl"],
        jobs=Param(
            [],
            type="array",
            items={
                "type": "object",
                "required": ["cluster", "job_id", "name"],
                "properties": {
                    "cluster": {"type": "string"},
                    "job_id": {"type": "string"},
                    "name": {"type": "string"},
                },
            },
            title="Jobs",
            description='RL jobs to look at: [{"cluster", "job_id", "name"}]',
        ),
    )
) as dag:
    probe = PythonOperator(
        task_id=DeepDive.PROBE,
        python_callable=deep_dive_tasks.probe,
        op_kwargs={"ops_dir": OPS_DIR, "sweep_yaml": SWEEP_YAML},
    )
    verdict = PythonOperator(
        task_id=DeepDive.VERDICT,
        python_callable=deep_dive_tasks.verdict,
        op_kwargs={"sweep_yaml": SWEEP_YAML},
        multiple_outputs=True,
    )
    branch = BranchPythonOperator(task_id=DeepDive.BRANCH, python_callable=deep_dive_tasks.kill_branch)
    trigger = TriggerDagRunOperator(
        task_id=DeepDive.TRIGGER_CANCEL,
        trigger_dag_id=DagId.CANCEL,
        trigger_run_id=f"{{{{ ti.xcom_pull(task_ids='{DeepDive.VERDICT}', key='cancel_run_id') }}}}",
        conf=verdict.output["cancel"],
        skip_when_already_exists=True,
        wait_for_completion=False,
    )
    no_kill = EmptyOperator(task_id=DeepDive.NO_KILL)
    record = PythonOperator(
        task_id=DeepDive.RECORD,
        python_callable=deep_dive_tasks.record,
        op_kwargs={"sweep_yaml": SWEEP_YAML},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    probe >> verdict >> branch >> [trigger, no_kill]
    [trigger, no_kill] >> record
    handoff_limits(dag, SWEEP_YAML, OPS_DIR)  # execution_timeout on every task; retries: read-only only
