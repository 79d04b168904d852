"""Acted on once: a hand-off (cleanup, cancel request, ...) is given once per job and kind, whatever
windows overlap (a run by hand, a backfill); a re-run of the SAME run gives again only what its
hand-off run does not exist for yet (Airflow triggers nothing twice under one trigger run id).
"""

from __future__ import annotations

import copy
from collections.abc import Container, Mapping, Sequence
from typing import Any

from sweep_core.ledger.entries import Ledger, LedgerEntry


def _key(item: Mapping[str, Any]) -> str:
    return f"{item['cluster']}|{item['job_id']}"


def given_by(ledger: Ledger, kind: str, item: Mapping[str, Any]) -> str:
    """The run id that handed ``item`` off as ``kind`` ("" when none did)."""
    e = ledger.jobs.get(_key(item))
    return e.handoffs.get(kind, "") if e else ""


def split_given(
    ledger: Ledger, kind: str, items: Sequence[Mapping[str, Any]], run_id: str
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """(items still to hand off, one note per item another run already handed off)."""
    todo: list[Mapping[str, Any]] = []
    notes: list[str] = []
    for item in items:
        by = given_by(ledger, kind, item)
        if by and by != run_id:
            e = ledger.jobs.get(_key(item))
            name = item.get("name") or item.get("job_name") or (e.name if e else "")
            notes.append(f"{kind}: {item['cluster']} {item['job_id']} {name} already handed off by {by}")
        else:
            todo.append(item)
    return todo, notes


def mark_given(ledger: Ledger, kind: str, items: Sequence[Mapping[str, Any]], run_id: str) -> Ledger:
    """The ledger with ``kind`` recorded as given by ``run_id`` for every item (modified in place).
    An item no sweep lists as a job (a clone's tree, ``seen``: its sweep's window end) is kept as
    long as an ended job last seen then (ledger.fold's prune)."""
    for item in items:
        key = _key(item)
        e = ledger.jobs.get(key)
        if e is None:
            name = str(item.get("name") or item.get("job_name") or "")
            e = ledger.jobs[key] = LedgerEntry(str(item["cluster"]), str(item["job_id"]), name)
        e.last_seen = e.last_seen or str(item.get("seen") or "")
        e.handoffs.setdefault(kind, run_id)
    return ledger


def merge_given(ledger: Ledger, source: Ledger, dropped: Container[str] = ()) -> Ledger:
    """``ledger`` with every hand-off and act ``source`` records added (the earliest giver kept; in
    place), except for the jobs in ``dropped`` (pruned from ``ledger`` on purpose); every digest it
    told, its record of the sweep runs' outcomes, each relaunch series' count and each job's latest deep-dive verdict (not a
    fold's business: a re-run's fold keeps them)."""
    for run_id, channels in source.told.items():
        ledger.told.setdefault(run_id, {}).update(channels)
    ledger.failing, ledger.last_success = list(source.failing), source.last_success
    ledger.watch_streak = copy.deepcopy(source.watch_streak)
    ledger.relaunches = {**ledger.relaunches, **source.relaunches}  # each series' own count (acts may be pruned)
    for key, src in source.jobs.items():
        if not (src.handoffs or src.cancel_handoff or src.deep_dive or src.acts) or key in dropped:
            continue
        e = ledger.jobs.get(key)
        if e is None:
            e = ledger.jobs[key] = LedgerEntry(src.cluster, src.job_id, src.name)
        for kind, by in src.handoffs.items():
            e.handoffs.setdefault(kind, by)
        e.cancel_handoff = e.cancel_handoff or dict(src.cancel_handoff)
        e.deep_dive = src.deep_dive or e.deep_dive
        e.relaunch_series = src.relaunch_series or e.relaunch_series
        e.acts += [a for a in src.acts if a not in e.acts]
    return ledger


def release_given(ledger: Ledger, kind: str, items: Sequence[Mapping[str, Any]]) -> Ledger:
    """``kind`` no longer recorded as given for these items (in place): the next sweep may hand
    them off again (a request left unanswered or rejected, a job relaunched under its id)."""
    for item in items:
        e = ledger.jobs.get(_key(item))
        if e is not None:
            e.handoffs.pop(kind, None)
            if kind == "cancel":
                e.cancel_handoff = {}
    return ledger
