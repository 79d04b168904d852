"""A sweep run's use of the ledger: fold what it knew in (a re-run of the same run id tells the same
changes) and give each per-job hand-off once (cleanup, cancel request, RL deep-dive); the tracker harvest and the
HF chain are not per job: their DAGs are idempotent on the tracker and on the chain Variable.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweep_core.ledger.cancel_handoff import KIND as CANCEL
from sweep_core.ledger.cancel_handoff import HandoffRun, record_handoffs
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.fold import Change, fold_sweep
from sweep_core.ledger.given import given_by, mark_given, split_given
from sweep_core.ledger.hold import CONFIRM_PARAM, confirm_reset, held, held_line
from sweep_core.ledger.since_report import carry
from sweep_core.ledger.store import fold_run, update_jobs
from sweep_core.records.models import ClusterSnapshot

# given once per job (conf key "jobs"; hygiene: per tree found; snapshots: per STALE set offered)
PER_JOB = ("cleanup", "cancel", "deep_dive", "hygiene", "snapshots")


def fold_sweep_run(
    run_log_dir: str | Path,
    snaps: Sequence[ClusterSnapshot],
    *,
    run_id: str,
    window_end: dt.datetime,
    notes: list[str] | None = None,
) -> list[Change]:
    """Fold this sweep into the stored ledger; the changes since the last sweep that knew each cluster
    (a report sweep: since the last report sweep, the watch runs' between them included)."""
    end = window_end.astimezone(dt.UTC).isoformat()

    def fold(ledger: Ledger) -> tuple[Ledger, list[Change]]:
        new, changes = fold_sweep(ledger, snaps, run_id=run_id, window_end=window_end)
        return new, carry(ledger, new, changes, run_id=run_id, window_end=end)

    return fold_run(run_log_dir, run_id, end, fold, notes)


def give_once(
    run_log_dir: str | Path,
    confs: dict[str, dict[str, Any] | None],
    *,
    run_id: str,
    dry_run: bool,
    handed: Mapping[str, bool] | None = None,
    cancel_run: HandoffRun | None = None,
) -> tuple[dict[str, dict[str, Any] | None], list[str]]:
    """``confs`` without the jobs another run already handed off (per kind), and one note for each;
    the jobs left are recorded as given by ``run_id`` (not on a dry run: it acts on nothing).

    ``handed[kind]``: this run's hand-off run of that kind already exists (a re-run of the same run
    id). Its jobs are in that run; the conf then holds only the jobs no run gave yet (found by the
    re-run alone, e.g. after a config fix), for a follow-up hand-off run, and None when there are none.
    ``cancel_run``: the sweep_cancel run this run triggers, recorded with each cancel hand-off (None:
    none, and no sweep_cancel run is then the sweep's).
    """
    handed = handed or {}

    def change(ledger: Ledger) -> tuple[Ledger, tuple[dict[str, dict[str, Any] | None], list[str]]]:
        out, notes = dict(confs), []
        for kind in PER_JOB:
            conf = confs.get(kind)
            if not conf or not conf.get("jobs"):
                continue
            todo, given = split_given(ledger, kind, conf["jobs"], run_id)
            notes += given
            if handed.get(kind):
                mine = [j for j in todo if given_by(ledger, kind, j) == run_id]
                todo = [j for j in todo if given_by(ledger, kind, j) != run_id]
                notes += [
                    f"{kind}: {j['cluster']} {j['job_id']} {_name(j)} in this run's hand-off run already" for j in mine
                ]
            if not dry_run:
                mark_given(ledger, kind, todo, run_id)
            if kind == CANCEL:  # what sweep_cancel trusts: this run's own flag line, not its conf
                record_handoffs(ledger, todo, run_id, dry_run=dry_run, cancel_run=cancel_run)
            rest = {**conf, "jobs": list(todo)}
            keep = todo or (rest.get("reclaim_clusters") and not handed.get(kind))
            out[kind] = rest if keep else None
        return ledger, (out, notes)

    keys = {f"{j['cluster']}|{j['job_id']}" for k in PER_JOB for j in (confs.get(k) or {}).get("jobs") or []}
    if not keys:
        return dict(confs), []  # nothing per job: the ledger is not touched
    return update_jobs(run_log_dir, keys, change)  # a claim: these jobs' rows alone


def _name(item: Mapping[str, Any]) -> str:
    return str(item.get("name") or item.get("job_name") or "")


@dataclass(frozen=True)
class RunChanges:
    """What a sweep run tells first: its lines (a hold and a confirmation first, the notes, then
    each change), why acts are held ("" = not held) and how many changes the fold found."""

    lines: list[str]
    held: str
    count: int


def sweep_changes(
    run_log_dir: str | Path,
    snaps: Sequence[ClusterSnapshot],
    *,
    run_id: str,
    window_end: dt.datetime,
    notes: list[str],
    confirm: bool = False,
) -> RunChanges:
    """Fold this sweep in (fold_sweep_run) and say what changed; ``confirm``: a person checked the
    cluster after a ledger recovery (the ``confirm_ledger_reset`` param): the hold is cleared."""
    changes = fold_sweep_run(run_log_dir, snaps, run_id=run_id, window_end=window_end, notes=notes)
    lines = list(notes) + [c.line for c in changes]
    if confirm:
        cleared = confirm_reset(run_log_dir, f"run {run_id}")
        lines.insert(0, cleared or f"{CONFIRM_PARAM}: the ledger held no acts: nothing to confirm")
    hold = held(run_log_dir)
    if hold:
        lines.insert(0, held_line(hold))
    return RunChanges(lines, held_line(hold) if hold else "", len(changes))
