"""The sweep window from the Airflow context: the data interval, or a lookback override."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sweep_core.window import resolve_window


def sweep_window(context: Any, lookback_hours: Any) -> tuple[dt.datetime, dt.datetime]:
    """[data_interval_start, data_interval_end), or the lookback_hours before the run's trigger."""
    dag_run = context.get("dag_run")
    return resolve_window(
        context.get("data_interval_start"),
        context.get("data_interval_end") or context.get("logical_date"),
        lookback_hours,
        getattr(dag_run, "run_after", None),
    )
