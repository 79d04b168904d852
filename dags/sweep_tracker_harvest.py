"""sweep_tracker_harvest: every pending ⏳ row (with an eval job id) of every tracker markdown
grid: sacct -j -> COMPLETED: results JSON to the tracker's <RUN>/ dir, scores filled, ✅;
empty results: stays ⏳, flagged; FAILED: ❌ with the first real traceback. Every other byte of
the tracker is kept. Triggered by monitor_cron_sweep every sweep, or by hand (dry run default).

    harvest (scan trackers, one read-only SSH session per cluster, write) -> record
"""

from __future__ import annotations

from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, TriggerRule

from sweep_operators import harvest_tasks
from sweep_operators.dag_common import config_paths, handoff_dag_kwargs
from sweep_operators.reliability import handoff_limits
from sweep_operators.task_ids import DagId, Harvest

OPS_DIR, SWEEP_YAML = config_paths(__file__)

with DAG(
    **handoff_dag_kwargs(
        DagId.HARVEST,
        "Fill pending eval rows of the tracker grids from finished eval jobs",
        __doc__,
        ["tracker"],
    )
) as dag:
    common = {"ops_dir": OPS_DIR, "sweep_yaml": SWEEP_YAML}
    harvest = PythonOperator(task_id=Harvest.HARVEST, python_callable=harvest_tasks.harvest, op_kwargs=common)
    record = PythonOperator(
        task_id=Harvest.RECORD,
        python_callable=harvest_tasks.record,
        op_kwargs={"sweep_yaml": SWEEP_YAML},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    harvest >> record
    handoff_limits(dag, SWEEP_YAML, OPS_DIR)  # execution_timeout on every task; retries: read-only only
