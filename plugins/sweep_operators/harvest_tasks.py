"""Task callables of the sweep_tracker_harvest DAG: harvest and record.

Airflow-facing wiring only: params and XCom in, ops.md and SSH wired into the use-case
(sweep_core.handoffs.harvest.usecase; the decisions are sweep_core.handoffs.harvest.plan), log lines out.
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.harvest.plan import tracker_settings
from sweep_core.handoffs.harvest.usecase import harvest_record, harvest_trackers
from sweep_operators.handoff_io import ops_loader, ssh_runner
from sweep_operators.handoff_record import append_record
from sweep_operators.task_ids import DagId, Harvest

log = logging.getLogger(__name__)


def harvest(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Every pending ⏳ row of every tracker: poll its eval job, fill / flag / fail it (dry_run: print)."""
    config = load_sweep_config(sweep_yaml)
    settings = tracker_settings(config.trackers)
    if settings is None:
        raise AirflowSkipException("no tracker repo configured (trackers.repo / SWEEP_TRACKER_REPO)")
    got = harvest_trackers(
        settings,
        dry_run=bool(context["params"].get("dry_run", True)),
        tail_bytes=config.gather.tail_bytes,
        load_cluster=ops_loader(ops_dir),
        run_script=ssh_runner(config.gather, log),
        say=print,
    )
    for o in got["outcomes"]:
        log.info("%s:%s %s -> %s (%s)", o["path"], o["line"], o["job"], o["outcome"], o["note"])
    return got


def record(sweep_yaml: str, **context: Any) -> str:
    """The harvest table, printed and appended to the dated run log."""
    text = harvest_record(context["ti"].xcom_pull(task_ids=Harvest.HARVEST) or {})
    print(text)
    return str(append_record(context, sweep_yaml, DagId.HARVEST, text))
