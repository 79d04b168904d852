r"""monitor_cron_sweep: one DAG run = one sweep over the data interval, across every cluster in
include/ops. Thin wiring only; logic lives in plugins/sweep_core, operators in
plugins/sweep_operators.

    <cluster>.step0 -> <cluster>.gather  (one group per include/ops/<cluster>/ops.md)
        -> bucket (bucket, liveness, metrics, rules) -> render (tables, run log, note) -> verdict
                                                                                 \-> handoffs -> handoff_branch
                                                      render -> history -> notify (after handoffs too)
            -> trigger_cleanup | trigger_cancel | trigger_hf_chain | trigger_tracker_harvest | trigger_deep_dive | no_handoff
"""

from __future__ import annotations

import datetime as dt
import os
from functools import partial
from pathlib import Path

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.python import BranchPythonOperator, PythonOperator
from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import DAG, CronDataIntervalTimetable, Param, TaskGroup, TriggerRule

from sweep_core.config.ops import cluster_names, peek_scheduler
from sweep_core.config.sweep import load_sweep_config
from sweep_operators import notify_tasks, sweep_tasks
from sweep_operators.approval_notify import sweep_deadline, sweep_outcome
from sweep_operators.iris_gather import IrisGatherOperator
from sweep_operators.reliability import sweep_limits
from sweep_operators.slurm_gather import SlurmGatherOperator
from sweep_operators.task_ids import HANDOFF_TRIGGERS, DagId, Sweep

PROJECT = Path(__file__).resolve().parents[1]
OPS_DIR = os.environ.get("SWEEP_OPS_DIR", str(PROJECT / "include" / "ops"))
SWEEP_YAML = os.environ.get("SWEEP_CONFIG", str(PROJECT / "include" / "sweep.yaml"))
TEMPLATE_DIR = str(PROJECT / "include" / "templates")

CONFIG = load_sweep_config(SWEEP_YAML)
CLUSTERS = cluster_names(OPS_DIR)

with DAG(
    dag_id=DagId.SWEEP,
    description="One comprehensive sweep across all active clusters for the data interval",
    schedule=CronDataIntervalTimetable(CONFIG.schedule, timezone=CONFIG.timezone),
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},
    tags=["monitoring", "slurm", "iris"],
    doc_md=__doc__,
    # a sweep still running notify.overrun_intervals (default 1, 0 = off) schedule intervals after it
    # was queued is told: its next run cannot start (max_active_runs=1)
    deadline=sweep_deadline(SWEEP_YAML, CONFIG.schedule, CONFIG.notify.overrun_intervals),
    # every run's end is recorded; notify.failed_sweeps failed runs in a row are told (critical)
    on_success_callback=partial(sweep_outcome, sweep_yaml=SWEEP_YAML, ok=True),
    on_failure_callback=partial(sweep_outcome, sweep_yaml=SWEEP_YAML, ok=False),
    params={
        # optional multi-select of the ops.md clusters: the form needs the names as `examples` and
        # "null" in the type (else it shows a required one-per-line text box)
        "clusters": Param(
            [],
            type=["null", "array"],
            items={"type": "string", "enum": CLUSTERS} if CLUSTERS else {"type": "string"},
            examples=CLUSTERS,
            title="Clusters",
            description="Clusters to sweep; empty = every active cluster in include/ops",
        ),
        "lookback_hours": Param(
            None,
            type=["null", "number"],
            minimum=0.1,
            maximum=744,
            title="Lookback hours",
            description="sacct window = [end - N hours, end); empty = the run's data interval",
        ),
        "dry_run": Param(
            False,
            type="boolean",
            title="Dry run",
            description="Hand-offs print their plan only; nothing destructive runs",
        ),
        "confirm_ledger_reset": Param(
            False,
            type="boolean",
            title="Confirm ledger reset",
            description="After a ledger recovery (the run log says ACTS HELD): I checked the cluster; acts may run again",
        ),
    },
) as dag:
    gathers = []
    for name in CLUSTERS:
        scheduler = peek_scheduler(OPS_DIR, name)
        with TaskGroup(group_id=name, tooltip=f"{name} ({scheduler})"):
            step0 = PythonOperator(
                task_id=Sweep.STEP0,
                python_callable=sweep_tasks.step0,
                op_kwargs={"cluster": name, "ops_dir": OPS_DIR, "parsed_scheduler": scheduler},
            )
            if scheduler == "iris":
                gather = IrisGatherOperator(
                    task_id=Sweep.GATHER, cluster=name, ops_dir=OPS_DIR, sweep_config_path=SWEEP_YAML
                )
            else:
                gather = SlurmGatherOperator(
                    task_id=Sweep.GATHER,
                    cluster=name,
                    ops_dir=OPS_DIR,
                    sweep_config_path=SWEEP_YAML,
                )
            step0 >> gather
        gathers.append(gather)

    bucket = PythonOperator(
        task_id=Sweep.BUCKET,
        python_callable=sweep_tasks.bucket,
        op_kwargs={"clusters": CLUSTERS, "ops_dir": OPS_DIR, "sweep_yaml": SWEEP_YAML},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    render = PythonOperator(
        task_id=Sweep.RENDER,
        python_callable=sweep_tasks.render,
        op_kwargs={"ops_dir": OPS_DIR, "sweep_yaml": SWEEP_YAML, "template_dir": TEMPLATE_DIR},
    )
    verdict = PythonOperator(task_id=Sweep.VERDICT, python_callable=sweep_tasks.verdict)
    gathers >> bucket >> render >> verdict

    # Hand-offs (spec §4): the branch follows only the triggers with work; each hand-off DAG
    # re-validates before anything destructive. A re-run of the same sweep triggers nothing twice: jobs only it found go to a follow-up run (`…__2`).
    handoffs = PythonOperator(
        task_id=Sweep.HANDOFFS,
        python_callable=sweep_tasks.handoffs,
        op_kwargs={"sweep_yaml": SWEEP_YAML},
        multiple_outputs=True,
    )
    branch = BranchPythonOperator(task_id=Sweep.HANDOFF_BRANCH, python_callable=sweep_tasks.handoff_branch)
    render >> handoffs >> branch

    # Tell people (issue 13): the sweep's rows into the Parquet history, then one digest per channel.
    history = PythonOperator(
        task_id=Sweep.HISTORY, python_callable=notify_tasks.record_history, op_kwargs={"sweep_yaml": SWEEP_YAML}
    )
    notify = PythonOperator(
        task_id=Sweep.NOTIFY,
        python_callable=notify_tasks.notify,
        op_kwargs={"sweep_yaml": SWEEP_YAML},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    render >> history >> notify
    handoffs >> notify
    branch >> EmptyOperator(task_id=Sweep.NO_HANDOFF)
    for handoff, (task_id, target) in HANDOFF_TRIGGERS.items():
        branch >> TriggerDagRunOperator(
            task_id=task_id,
            trigger_dag_id=target,
            trigger_run_id=f"{{{{ ti.xcom_pull(task_ids='{Sweep.HANDOFFS}', key='{handoff.value}_run_id') }}}}",
            conf=handoffs.output[handoff.value],
            skip_when_already_exists=True,
            wait_for_completion=False,
        )
    # every task's execution_timeout, and retries for the read-only ones (sweep.yaml tasks:)
    sweep_limits(dag, CONFIG, OPS_DIR)
