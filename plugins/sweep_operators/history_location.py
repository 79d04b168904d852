"""Where the Parquet history of every sweep lives (an ObjectStoragePath: a local directory by
default, s3://… or gs://… through a Connection): one answer for the rules, history and notify tasks.
"""

from __future__ import annotations

import os
import posixpath

from airflow.sdk import ObjectStoragePath

from sweep_core.config.sweep import SweepConfig
from sweep_core.history.store import HistoryStore
from sweep_core.timing.cadence import is_watch_run
from sweep_operators.handoff_record import run_log_dir


def history_store(config: SweepConfig) -> HistoryStore:
    """SWEEP_HISTORY, else sweep.yaml ``history.location``, else ``<run_log_dir>/history`` (then opened
    with ``run_log_conn_id`` unless ``history.conn_id`` names another Connection)."""
    where = os.environ.get("SWEEP_HISTORY") or config.history.location
    conn_id = config.history.conn_id
    if not where:
        where, conn_id = posixpath.join(run_log_dir(config), "history"), conn_id or config.run_log_conn_id
    root = ObjectStoragePath(where, conn_id=conn_id) if conn_id else ObjectStoragePath(where)
    return HistoryStore(root, config.history.retention_days)


def watch_history_store(config: SweepConfig) -> HistoryStore:
    """The watch runs' history (flag and cluster rows only): ``watch/`` under the history's root,
    kept ``watch.history_days``. Apart, so the report sweep's rules history (its last sweeps' job
    rows) and the Sweeps page read the report sweeps only."""
    return HistoryStore(history_store(config).root / "watch", config.watch.history_days)


def store_of(config: SweepConfig, run_id: str) -> HistoryStore:
    """The history store run ``run_id`` wrote: the watch's for a watch run (sweep_core.timing.cadence)."""
    return watch_history_store(config) if is_watch_run(run_id) else history_store(config)
