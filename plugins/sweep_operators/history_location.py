"""Where the Parquet history of every sweep lives (an ObjectStoragePath: a local directory by
default, s3://… or gs://… through a Connection): one answer for the rules, history and notify tasks.
"""

from __future__ import annotations

import os

from airflow.sdk import ObjectStoragePath

from sweep_core.config.sweep import SweepConfig
from sweep_core.history.store import HistoryStore
from sweep_operators.handoff_record import run_log_dir


def history_store(config: SweepConfig) -> HistoryStore:
    """SWEEP_HISTORY, else sweep.yaml ``history.location``, else ``<run_log_dir>/history``."""
    where = os.environ.get("SWEEP_HISTORY") or config.history.location or os.path.join(run_log_dir(config), "history")
    root = (
        ObjectStoragePath(where, conn_id=config.history.conn_id) if config.history.conn_id else ObjectStoragePath(where)
    )
    return HistoryStore(root, config.history.retention_days)
