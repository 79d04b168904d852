"""sweep_hf_chain: the HF-only SFT chain (series with enable_db_registration: false), 3 legs per
cell, advanced every sweep and catching up backlog: SFT COMPLETED -> HF upload (no DB); upload on
the hub -> the standard eval (its job id into the cell's tracker row, ⏳); the harvest fills the
row -> done. Idempotent: Variable ``sweep_hf_chain`` + the tracker + the cluster's job names.
An SFT completion whose launch YAML says enable_db_registration: false and that no series names (the
sweep's conf ``found``) is a cell of its cluster's found series: uploaded (hf_chain.found), no DB.

    advance (one probe + at most one submit session per series) -> record
"""

from __future__ import annotations

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, Param, TriggerRule

from sweep_operators import chain_tasks
from sweep_operators.dag_common import config_paths, handoff_dag_kwargs
from sweep_operators.reliability import handoff_limits
from sweep_operators.task_ids import Chain, DagId

OPS_DIR, SWEEP_YAML = config_paths(__file__)

with DAG(
    **handoff_dag_kwargs(
        DagId.HF_CHAIN,
        "HF-only SFT chain: upload -> standard eval -> tracker scores, one leg at a time",
        __doc__,
        ["hf"],
        found=Param(
            [],
            type="array",
            title="Found",
            description="the sweep's: {cluster, job_id, name} per HF-only completion no series names (upload only)",
        ),
    )
) as dag:
    common = {"ops_dir": OPS_DIR, "sweep_yaml": SWEEP_YAML}
    advance = PythonOperator(task_id=Chain.ADVANCE, python_callable=chain_tasks.advance_chain, op_kwargs=common)
    record = PythonOperator(
        task_id=Chain.RECORD,
        python_callable=chain_tasks.record,
        op_kwargs={"sweep_yaml": SWEEP_YAML},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    advance >> record
    handoff_limits(dag, SWEEP_YAML, OPS_DIR)  # execution_timeout on every task; retries: read-only only
