"""A sweep run's use of the ledger: fold what it knew in (a re-run of the same run id tells the same
changes) and give each per-job hand-off once (cleanup, cancel request); the tracker harvest and the
HF chain are not per job: their DAGs are idempotent on the tracker and on the chain Variable.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.fold import Change, fold_sweep
from sweep_core.ledger.given import mark_given, split_given
from sweep_core.ledger.store import fold_run, update_ledger
from sweep_core.models import ClusterSnapshot
from sweep_core.rules.context import base_state

PER_JOB = ("cleanup", "cancel")  # hand-offs given once per job (conf key "jobs")


def fold_sweep_run(
    run_log_dir: str | Path,
    snaps: Sequence[ClusterSnapshot],
    *,
    run_id: str,
    window_end: dt.datetime,
    notes: list[str] | None = None,
) -> list[Change]:
    """Fold this sweep into the stored ledger; the changes since the last sweep that knew each cluster."""

    def fold(ledger: Ledger) -> tuple[Ledger, list[Change]]:
        return fold_sweep(ledger, snaps, run_id=run_id, window_end=window_end, base_state=base_state)

    return fold_run(run_log_dir, run_id, window_end.astimezone(dt.UTC).isoformat(), fold, notes)


def give_once(
    run_log_dir: str | Path, confs: dict[str, dict[str, Any] | None], *, run_id: str, dry_run: bool
) -> tuple[dict[str, dict[str, Any] | None], list[str]]:
    """``confs`` without the jobs another run already handed off (per kind), and one note for each;
    the jobs left are recorded as given by ``run_id`` (not on a dry run: it acts on nothing)."""

    def change(ledger: Ledger) -> tuple[Ledger, tuple[dict[str, dict[str, Any] | None], list[str]]]:
        out, notes = dict(confs), []
        for kind in PER_JOB:
            conf = confs.get(kind)
            if not conf or not conf.get("jobs"):
                continue
            todo, given = split_given(ledger, kind, conf["jobs"], run_id)
            notes += given
            if not dry_run:
                mark_given(ledger, kind, todo, run_id)
            rest = {**conf, "jobs": list(todo)}
            out[kind] = rest if todo or rest.get("reclaim_clusters") else None
        return ledger, (out, notes)

    if not any((confs.get(k) or {}).get("jobs") for k in PER_JOB):
        return dict(confs), []  # nothing per job: the ledger is not touched
    return update_ledger(run_log_dir, change)
