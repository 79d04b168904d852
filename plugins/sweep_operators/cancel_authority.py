"""sweep_cancel's authority wiring: the ledger and the Parquet history the sweep wrote, read for
the requested jobs, against this run's id and triggering user. Airflow-facing only; the rules are
sweep_core.handoffs.cancel.authority (whose request a job is) and sweep_core.alerts.approvals (who
may answer it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.cancel.authority import FLAG_COLUMNS, authorize, flag_runs
from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.history.rows import FLAG
from sweep_core.history.store import read_run
from sweep_core.ledger.cancel_handoff import HandoffRun
from sweep_core.ledger.store import read_jobs
from sweep_operators.handoff_record import run_log_dir
from sweep_operators.history_location import store_of

log = logging.getLogger(__name__)
HISTORY_WAIT_S = 120.0  # the sweep writes its history beside its hand-offs: a hand-off run may start first


def _flags(config: Any, runs: Sequence[str], wait_s: float) -> dict[str, list[dict[str, Any]] | None]:
    """run id -> its history flag rows (None = no history of it after waiting up to ``wait_s``)."""
    out: dict[str, list[dict[str, Any]] | None] = {}
    end = time.monotonic() + wait_s
    for run in runs:
        store = store_of(config, run)  # a watch run's history is the watch's
        while True:
            frame = read_run(store, run, records=[FLAG], columns=list(FLAG_COLUMNS))
            if frame is not None or time.monotonic() >= end:
                break
            time.sleep(2)
        out[run] = None if frame is None else frame.to_dict("records")
        log.info("history of sweep %s: %s", run, "none" if frame is None else f"{len(frame)} flag row(s)")
    return out


def authorize_decisions(
    decisions: list[CancelDecision],
    sweep_yaml: str,
    run_id: str,
    run_user: str,
    *,
    dry_run: bool,
    wait_s: float = HISTORY_WAIT_S,
) -> None:
    """Mark each decision a sweep or a by-hand request, with the sweep's evidence (in place):
    ``run_id`` and ``run_user`` (its triggering user, "" = none) are this run's, as Airflow has them."""
    config = load_sweep_config(sweep_yaml)
    keys = [(d.request.cluster, d.request.job_id) for d in decisions]
    ledger = read_jobs(run_log_dir(config), {f"{c}|{j}" for c, j in keys})  # these jobs' rows alone
    flags = _flags(config, flag_runs(ledger, keys), wait_s)
    authorize(decisions, ledger, flags, dry_run=dry_run, run=HandoffRun(run_id, run_user))
