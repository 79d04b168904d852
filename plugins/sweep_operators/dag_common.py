"""What every DAG file of the package shares: where its config lives, the hand-off DAGs' common
arguments and params (dry run, the sweep's run log), and the approval hand-offs' task chain."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from typing import Any

from airflow.sdk import Param

from sweep_core.config.locate import ConfigPaths, dag_file_config, locate

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def config_paths(dag_file: str | None = None) -> tuple[str, str]:
    """(ops dir, sweep.yaml): SWEEP_OPS_DIR / SWEEP_CONFIG, else ``include/`` beside the DAGs folder
    (``dag_file``'s folder at parse time, Airflow's ``[core] dags_folder`` in a task or the page;
    sweep_core.config.locate). Not there: ConfigNotFound, the DAG file's import error."""
    return config_location(dag_file).as_strings()


def config_location(dag_file: str | None = None) -> ConfigPaths:
    """The located config (paths and how they were found); raises ConfigNotFound when it is missing."""
    if dag_file is not None:
        return dag_file_config(dag_file)
    return locate(os.environ, airflow_dags_folder()).require()


def airflow_dags_folder() -> str:
    """Airflow's own ``[core] dags_folder`` (its config file and environment, as Airflow reads them)."""
    from airflow.configuration import conf

    return conf.get("core", "dags_folder")


def handoff_dag_kwargs(
    dag_id: str, description: str, doc: str | None, tags: list[str], **params: Any
) -> dict[str, Any]:
    """DAG(...) kwargs of a hand-off DAG: triggered (no schedule), one run at a time, no retries,
    ``dry_run`` (default true: a person trying it from the UI changes nothing) and ``run_log``.
    Not paused when first seen: a run the sweep triggers runs (its guards re-validate first;
    cancel still waits for a human) instead of sitting queued until someone unpauses the DAG."""
    return {
        "dag_id": dag_id,
        "is_paused_upon_creation": False,
        "description": description,
        "schedule": None,
        "start_date": START,
        "catchup": False,
        "max_active_runs": 1,
        "default_args": {"retries": 0},
        "tags": ["monitoring", "handoff", *tags],
        "doc_md": doc,
        "params": {
            **params,
            "dry_run": Param(True, type="boolean", title="Dry run", description="Print the plan only; change nothing"),
            "run_log": Param("", type="string", title="Run log", description="The sweep's dated run log to append to"),
        },
    }


def approval_chain(
    ids: Any, act_id: str, tasks: Any, act: Callable[..., Any], approval: type, ops_dir: str, sweep_yaml: str
) -> None:
    """Inside ``with DAG``: validate -> approve (``approval``: HITL, the approvers told by the
    ApprovalNotifier) -> ``act`` -> record (ALL_DONE); ``ids``: the DAG's task ids (task_ids.py),
    ``tasks``: its module of callables (``validate``, ``record``)."""
    from airflow.providers.standard.operators.python import PythonOperator
    from airflow.sdk import TriggerRule

    from sweep_operators.approval_notify import ApprovalNotifier

    common = {"ops_dir": ops_dir, "sweep_yaml": sweep_yaml}
    validate = PythonOperator(task_id=ids.VALIDATE, python_callable=tasks.validate, op_kwargs=common)
    notify = [ApprovalNotifier(sweep_yaml=sweep_yaml)]
    approve = approval(task_id=ids.APPROVE, sweep_yaml=sweep_yaml, notifiers=notify)
    acting = PythonOperator(task_id=act_id, python_callable=act, op_kwargs=common)
    record = PythonOperator(
        task_id=ids.RECORD,
        python_callable=tasks.record,
        op_kwargs={"sweep_yaml": sweep_yaml},
        trigger_rule=TriggerRule.ALL_DONE,
    )
    validate >> approve >> acting >> record
