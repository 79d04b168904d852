"""The two sweep DAGs, built by one function from the same operators and task callables: the full
report sweep (``monitor_cron_sweep``) and the light watch (``monitor_cron_watch``, sweep.yaml
``watch:``). The DAG files only call ``build_sweep_dag``.

    report: <cluster>.step0 -> <cluster>.gather -> bucket -> render -> verdict
                                                         render -> handoffs -> handoff_branch -> trigger_* | no_handoff
                                                         render -> history -> notify (after handoffs too)
    watch:  <cluster>.step0 -> <cluster>.gather -> bucket (watch.rules) -> fold -> verdict
                                                         fold -> handoffs (watch.handoffs) -> handoff_branch -> trigger_cancel | no_handoff
                                                         fold -> history (flags, clusters) -> notify (after handoffs too)
"""

from __future__ import annotations

from functools import partial
from typing import Any

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.python import BranchPythonOperator, PythonOperator
from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import DAG, CronDataIntervalTimetable, Param, TaskGroup, TriggerRule

from sweep_core.config.locate import dag_file_config
from sweep_core.config.ops import cluster_names, peek_scheduler
from sweep_core.config.sweep import SweepConfig, load_sweep_config
from sweep_core.rules.registry import check_watch_rules
from sweep_operators import notify_tasks, sweep_tasks
from sweep_operators.approval_notify import sweep_deadline, sweep_outcome, watch_outcome
from sweep_operators.dag_common import START
from sweep_operators.iris_gather import IrisGatherOperator
from sweep_operators.reliability import sweep_limits
from sweep_operators.slurm_gather import SlurmGatherOperator
from sweep_operators.task_ids import HANDOFF_TRIGGERS, DagId, Sweep


def _clusters_param(clusters: list[str]) -> Param:
    """An optional multi-select of the ops.md clusters: the form needs the names as `examples` and
    "null" in the type (else it shows a required one-per-line text box)."""
    return Param(
        [],
        type=["null", "array"],
        items={"type": "string", "enum": clusters} if clusters else {"type": "string"},
        examples=clusters,
        title="Clusters",
        description="Clusters to sweep; empty = every active cluster in include/ops",
    )


def _params(clusters: list[str], watch: bool) -> dict[str, Param]:
    params = {
        "clusters": _clusters_param(clusters),
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
    }
    if not watch:  # a ledger recovery is confirmed on the report sweep (its run log says ACTS HELD)
        params["confirm_ledger_reset"] = Param(
            False,
            type="boolean",
            title="Confirm ledger reset",
            description="After a ledger recovery (the run log says ACTS HELD): I checked the cluster; acts may run again",
        )
    return params


def _kwargs(config: SweepConfig, sweep_yaml: str, watch: bool) -> dict[str, Any]:
    """The DAG(...) arguments that differ between the report sweep and the watch."""
    if not watch:
        return {
            "dag_id": DagId.SWEEP,
            "description": "One comprehensive sweep across all active clusters for the data interval",
            "schedule": CronDataIntervalTimetable(config.schedule, timezone=config.timezone),
            "tags": ["monitoring", "slurm", "iris"],
            # a sweep still running notify.overrun_intervals (default 1, 0 = off) schedule intervals after it
            # was queued is told: its next run cannot start (max_active_runs=1)
            "deadline": sweep_deadline(sweep_yaml, config.schedule, config.notify.overrun_intervals),
            # every run's end is recorded; notify.failed_sweeps failed runs in a row are told (critical)
            "on_success_callback": partial(sweep_outcome, sweep_yaml=sweep_yaml, ok=True),
            "on_failure_callback": partial(sweep_outcome, sweep_yaml=sweep_yaml, ok=False),
        }
    schedule = config.watch.schedule
    return {
        "dag_id": DagId.WATCH,
        "description": "The light watch: gather, the fast rules, edge-triggered alerts and cancel hand-offs",
        "schedule": None if schedule is None else CronDataIntervalTimetable(schedule, timezone=config.timezone),
        "tags": ["monitoring", "watch", "slurm", "iris"],
        # its own failing streak (never the report sweep's): watch.failing_minutes failing is told (critical)
        "on_success_callback": partial(watch_outcome, sweep_yaml=sweep_yaml, ok=True),
        "on_failure_callback": partial(watch_outcome, sweep_yaml=sweep_yaml, ok=False),
    }


def dag_file_paths(dag_file: str) -> tuple[str, str, str]:
    """(ops dir, sweep.yaml, templates dir) of a DAG file: ``include/`` beside its DAGs folder (the
    checkout, the package's deployment, the image), SWEEP_OPS_DIR / SWEEP_CONFIG override
    (sweep_core.config.locate); missing: ConfigNotFound, the DAG file's import error."""
    where = dag_file_config(dag_file)
    return str(where.ops_dir), str(where.sweep_yaml), str(where.templates)


def build_sweep_dag(dag_file: str, doc: str | None, *, watch: bool = False) -> DAG:
    """The report sweep's DAG, or (``watch``) the watch's: the same gathers, fan-in, hand-offs and
    digest; the watch runs only sweep.yaml ``watch.rules`` and ``watch.handoffs``, folds the ledger
    instead of rendering (no tables, run log, cleanup, harvest, chain or deep-dive) and writes its
    flag and cluster rows to the watch history. Both use one ledger: nothing is told or handed off twice."""
    ops_dir, sweep_yaml, template_dir = dag_file_paths(dag_file)
    config = load_sweep_config(sweep_yaml)
    if watch:
        check_watch_rules(config.watch.rules, f"{sweep_yaml}: watch.rules")
    clusters = cluster_names(ops_dir)
    with DAG(
        start_date=START,
        catchup=False,
        max_active_runs=1,
        default_args={"retries": 0},
        doc_md=doc,
        params=_params(clusters, watch),
        **_kwargs(config, sweep_yaml, watch),
    ) as dag:
        gathers = [_gather_group(name, ops_dir, sweep_yaml) for name in clusters]
        report = _fan_in(gathers, clusters, ops_dir, sweep_yaml, template_dir, watch)
        kinds = list(config.watch.handoffs) if watch else None
        handoffs = _handoffs(report, ops_dir, sweep_yaml, kinds)
        _tell(report, handoffs, sweep_yaml)
        # every task's execution_timeout, and retries for the read-only ones (sweep.yaml tasks:)
        sweep_limits(dag, config, ops_dir)
    return dag


def _tell(report: Any, handoffs: Any, sweep_yaml: str) -> None:
    """Tell people: the sweep's rows into the Parquet history, then one digest per channel (after
    the hand-offs too, whatever became of them)."""
    history = PythonOperator(
        task_id=Sweep.HISTORY, python_callable=notify_tasks.record_history, op_kwargs={"sweep_yaml": sweep_yaml}
    )
    notify = PythonOperator(
        task_id=Sweep.NOTIFY,
        python_callable=notify_tasks.notify,
        op_kwargs={"sweep_yaml": sweep_yaml},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    report >> history >> notify
    handoffs >> notify


def _gather_group(name: str, ops_dir: str, sweep_yaml: str) -> Any:
    """One cluster's task group: STEP 0 (its ops.md at run time), then its gather."""
    scheduler = peek_scheduler(ops_dir, name)
    with TaskGroup(group_id=name, tooltip=f"{name} ({scheduler})"):
        step0 = PythonOperator(
            task_id=Sweep.STEP0,
            python_callable=sweep_tasks.step0,
            op_kwargs={"cluster": name, "ops_dir": ops_dir, "parsed_scheduler": scheduler},
        )
        gather_cls = IrisGatherOperator if scheduler == "iris" else SlurmGatherOperator
        gather = gather_cls(task_id=Sweep.GATHER, cluster=name, ops_dir=ops_dir, sweep_config_path=sweep_yaml)
        step0 >> gather
    return gather


def _fan_in(
    gathers: list[Any], clusters: list[str], ops_dir: str, sweep_yaml: str, template_dir: str, watch: bool
) -> Any:
    """bucket, then render (the watch: the ledger fold only, no tables, no run log), then verdict."""
    bucket = PythonOperator(
        task_id=Sweep.BUCKET,
        python_callable=sweep_tasks.bucket,
        op_kwargs={"clusters": clusters, "ops_dir": ops_dir, "sweep_yaml": sweep_yaml, "watch": watch},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    if watch:
        report = PythonOperator(
            task_id=Sweep.FOLD, python_callable=sweep_tasks.fold, op_kwargs={"sweep_yaml": sweep_yaml}
        )
    else:
        report = PythonOperator(
            task_id=Sweep.RENDER,
            python_callable=sweep_tasks.render,
            op_kwargs={"ops_dir": ops_dir, "sweep_yaml": sweep_yaml, "template_dir": template_dir},
        )
    gathers >> bucket >> report >> PythonOperator(task_id=Sweep.VERDICT, python_callable=sweep_tasks.verdict)
    return report


def _handoffs(report: Any, ops_dir: str, sweep_yaml: str, kinds: list[str] | None) -> Any:
    """The hand-offs: the branch follows only the triggers with work; each hand-off DAG re-validates
    before anything destructive. A re-run of the same sweep triggers nothing twice: jobs only it
    found go to a follow-up run (`…__2`)."""
    handoffs = PythonOperator(
        task_id=Sweep.HANDOFFS,
        python_callable=sweep_tasks.handoffs,
        op_kwargs={"sweep_yaml": sweep_yaml, "kinds": kinds, "ops_dir": ops_dir},
        multiple_outputs=True,
    )
    branch = BranchPythonOperator(task_id=Sweep.HANDOFF_BRANCH, python_callable=sweep_tasks.handoff_branch)
    report >> handoffs >> branch
    branch >> EmptyOperator(task_id=Sweep.NO_HANDOFF)
    for handoff, (task_id, target) in HANDOFF_TRIGGERS.items():
        if kinds is not None and handoff.value not in kinds:
            continue
        branch >> TriggerDagRunOperator(
            task_id=task_id,
            trigger_dag_id=target,
            trigger_run_id=f"{{{{ ti.xcom_pull(task_ids='{Sweep.HANDOFFS}', key='{handoff.value}_run_id') }}}}",
            conf=handoffs.output[handoff.value],
            skip_when_already_exists=True,
            wait_for_completion=False,
        )
    return handoffs
