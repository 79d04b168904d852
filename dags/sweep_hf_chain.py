"""sweep_hf_chain: the HF-only SFT chain (series with enable_db_registration: false), 3 legs per
cell, advanced every sweep and catching up backlog: SFT COMPLETED -> HF upload (no DB); upload on
the hub -> the standard eval (its job id into the cell's tracker row, ⏳); the harvest fills the
row -> done. Idempotent: Variable ``sweep_hf_chain`` + the tracker + the cluster's job names.

    advance (one probe + at most one submit session per series) -> record
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, Param, TriggerRule

from sweep_operators import chain_tasks

PROJECT = Path(__file__).resolve().parents[1]
OPS_DIR = os.environ.get("SWEEP_OPS_DIR", str(PROJECT / "include" / "ops"))
SWEEP_YAML = os.environ.get("SWEEP_CONFIG", str(PROJECT / "include" / "sweep.yaml"))

with DAG(
    dag_id="sweep_hf_chain",
    description="HF-only SFT chain: upload -> standard eval -> tracker scores, one leg at a time",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},
    tags=["monitoring", "handoff", "hf"],
    doc_md=__doc__,
    params={
        "dry_run": Param(True, type="boolean", title="Dry run", description="Print the legs it would advance"),
        "run_log": Param("", type="string", title="Run log", description="The sweep's dated run log to append to"),
    },
) as dag:
    common = {"ops_dir": OPS_DIR, "sweep_yaml": SWEEP_YAML}
    advance = PythonOperator(task_id="advance", python_callable=chain_tasks.advance_chain, op_kwargs=common)
    record = PythonOperator(
        task_id="record",
        python_callable=chain_tasks.record,
        op_kwargs={"sweep_yaml": SWEEP_YAML},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    advance >> record
