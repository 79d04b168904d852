"""The sweep window from the Airflow context: the data interval, or a lookback override; the run id;
how far back a cluster's ended jobs are read (the ledger's catch-up)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sweep_core.ledger.catch_up import catch_up_start
from sweep_core.ledger.store import top_for_run
from sweep_core.timing.cadence import watch_run_id
from sweep_core.timing.window import resolve_window
from sweep_operators.task_ids import DagId


def sweep_window(context: Any, lookback_hours: Any) -> tuple[dt.datetime, dt.datetime]:
    """[data_interval_start, data_interval_end), or the lookback_hours before the run's trigger."""
    dag_run = context.get("dag_run")
    return resolve_window(
        context.get("data_interval_start"),
        context.get("data_interval_end") or context.get("logical_date"),
        lookback_hours,
        getattr(dag_run, "run_after", None),
    )


def dag_run_id(context: Any) -> str:
    """This DAG run's id as Airflow knows it ("" when the context has none)."""
    return str(context.get("run_id") or getattr(context.get("dag_run"), "run_id", ""))


def dag_id_of(context: Any) -> str:
    """This run's DAG id ("" when the context has none)."""
    for holder in (context.get("dag_run"), context.get("dag"), context.get("ti")):
        if dag_id := getattr(holder, "dag_id", None):
            return str(dag_id)
    return ""


def run_id_of(context: Any) -> str:
    """This sweep run's name in the ledger, the history and its hand-off run ids: the DAG run id, a
    watch run's with sweep_core.timing.cadence.WATCH_PREFIX before it ("" when the context has none)."""
    run_id = dag_run_id(context)
    return watch_run_id(run_id) if run_id and dag_id_of(context) == DagId.WATCH else run_id


def catch_up_since(
    context: Any, run_log_dir: str, cluster: str, start: dt.datetime, end: dt.datetime, catch_up_hours: float
) -> tuple[dt.datetime, str]:
    """Where ``cluster``'s ended jobs are read from: ``start``, or earlier after sweeps that could not
    read it (sweep_core.ledger.catch_up, against the ledger this run will fold into), with the note."""
    ledger = top_for_run(run_log_dir, run_id_of(context), end.astimezone(dt.UTC).isoformat())  # no job row
    return catch_up_start(ledger, cluster, start, end, dt.timedelta(hours=catch_up_hours))
