"""Where the ledger lives: rows of the run-log directory's space in the state database
(sweep_core.state.rows): one per job (its entry's JSON), one per act and per claim of a job, and
one for the rest (windows, clusters, series, relaunch counts, digests told, ...). A transaction
reads the rows and writes back only those that changed. A fold or any whole-ledger change holds
the ledger row's lock; a claim (``update_jobs``: a hand-off given, an act recorded or claimed)
holds only its own jobs' rows (and the ledger row shared), so claims of different jobs never wait
on each other; a change of the ledger row alone (``update_top``) reads no job row. Backfills, runs
by hand and workers on other hosts may fold at once. A read about a few jobs (``read_jobs``,
``read_acted``, ``read_top``, ``acts_by_job``) reads only their rows, the ledger row FOR SHARE.

``before``: what the latest run folded against, so that a re-run of that run folds against it
again: its ledger row, and for each job row written since that fold the body it had before (the
rows nobody wrote since are the same in both), so a fold copies only what it changes.

A damaged ledger (a row not JSON or a bad entry, or the ledger row gone while ``before`` is there)
is moved aside (generation ``corrupt-<stamp>``), never deleted, and recovered: what still reads,
each bad job as it stood before the latest fold when that is kept, with a note naming what was
lost. A ledger recovered so carries ``hold``: every submission and destructive act waits until a
person confirms (sweep_core.ledger.hold). A read that fails for another reason (the database
unreachable, a permission) raises: never read as an empty ledger.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gc
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sweep_core.ledger.entries import Ledger, LedgerEntry, LedgerError, _record, entry_dict
from sweep_core.ledger.given import merge_given
from sweep_core.state.db import engine_for, space_of, state_url
from sweep_core.state.rows import BEFORE, INLINE, LedgerRows, Split
from sweep_core.timing.cadence import same_cadence

T = TypeVar("T")
Bodies = dict[str, str]  # job key -> its row's JSON text as stored


class _Damaged(Exception):
    """A claim met a damaged row: the whole-ledger transaction recovers it."""


def _why(exc: Exception) -> str:
    return str(exc)[:160] if isinstance(exc, LedgerError) else f"{type(exc).__name__}: {str(exc)[:160]}"


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True)


def top_of(ledger: Ledger) -> dict[str, Any]:
    """The ledger's own row: everything but the jobs."""
    top = dataclasses.replace(ledger, jobs={}).to_dict()
    top.pop("jobs")
    return top


def entry_text(e: LedgerEntry) -> str:
    return _dumps(entry_dict(e))


def entry_rows(e: LedgerEntry) -> Split:
    """The entry as its rows (split_body of entry_text, without the round trip)."""
    raw = entry_dict(e)
    core = _dumps({k: v for k, v in raw.items() if k not in INLINE})
    return Split(core, [_dumps(a) for a in e.acts], dict(e.handoffs))


def _top(text: str | None) -> Ledger:
    """The ledger of a ledger row's text, no jobs (LedgerError or ValueError when unusable)."""
    if text is None:
        return Ledger()
    raw = json.loads(text)
    if not isinstance(raw, dict) or "jobs" in raw:
        raise LedgerError("the ledger row is not an object without 'jobs'")
    return Ledger.from_dict({**raw, "jobs": {}})


def _entries(bodies: Bodies) -> tuple[dict[str, LedgerEntry], dict[str, str]]:
    """The entries that read, and each row that does not with why."""
    got, bad = {}, {}
    for key, body in bodies.items():
        try:
            got[key] = _record(LedgerEntry, key, json.loads(body))
        except (ValueError, RecursionError) as exc:  # LedgerError, not JSON, huge number
            bad[key] = _why(exc)
    return got, bad


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for a whole-ledger read or fold: it makes ~100 objects a
    job, none in a cycle, and each collection walks them all again (at 10,000 jobs a fold ran ~20 %
    longer with it: benchmarks/ledger_rows.py)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextmanager
def _txn(run_log_dir: str | Path, *, shared: bool = False) -> Iterator[LedgerRows]:
    """One transaction over the space's ledger rows, the ledger row locked (``shared``: FOR SHARE)."""
    engine = engine_for(state_url(run_log_dir))
    with engine.begin() as conn:  # SQLite: BEGIN IMMEDIATE
        rows = LedgerRows(conn, space_of(run_log_dir))
        rows.lock_top(shared=shared)
        yield rows


def _load(rows: LedgerRows, notes: list[str] | None) -> tuple[Ledger, Bodies]:
    """The stored ledger and its job rows' texts (call under the lock): empty when none was ever
    written; recovered (and saved, with ``hold``) when damaged; a database error raises."""
    text, bodies = rows.top(), rows.jobs()
    if text is None and rows.top(BEFORE) is not None:
        return _recover(rows, notes, None, bodies, {}, "the ledger row missing while the one before is there")
    try:
        ledger = _top(text)
    except (ValueError, RecursionError) as exc:
        return _recover(rows, notes, text, bodies, {}, f"the ledger row: {_why(exc)}")
    ledger.jobs, bad = _entries(bodies)
    if bad:
        first = next(iter(bad.items()))
        why = f"{len(bad)} bad entr{'y' if len(bad) == 1 else 'ies'} ({first[0][:80]}: {first[1]})"
        return _recover(rows, notes, None, bodies, bad, why, partial=ledger)
    return ledger, bodies


def _before_top(rows: LedgerRows, notes: list[str] | None) -> tuple[str, str, Any] | None:
    """(run id, window end, ledger row) of the ledger before the latest fold; None when none is
    kept (or its row is unusable: moved aside, noted)."""
    text = rows.top(BEFORE)
    if text is None:
        return None
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in ("run_id", "window_end")):
            raise LedgerError("not an object with 'run_id' and 'window_end' strings")
        _top(_dumps(raw.get("ledger")))
    except (ValueError, RecursionError) as exc:
        _aside(rows, notes, "the ledger row before the latest fold", _why(exc), text, {}, BEFORE)
        rows.start_before(None)
        return None
    return raw["run_id"], raw["window_end"], raw.get("ledger")


def _before(
    rows: LedgerRows, notes: list[str] | None, now: Bodies, top: tuple[str, str, Any] | None = None
) -> tuple[str, str, Ledger, Bodies] | None:
    """(run id, window end, ledger, its job texts) of the ledger before the latest fold: its ledger
    row and, over the job rows ``now``, each job's body before it (None when none is kept)."""
    top = top or _before_top(rows, notes)
    if top is None:
        return None
    ledger = _top(_dumps(top[2]))
    bodies = {**now}
    for key, body in rows.jobs(BEFORE, nulls=True).items():
        if body is None:
            bodies.pop(key, None)
        else:
            bodies[key] = body
    ledger.jobs, _bad = _entries(bodies)  # a bad one is left out: it is the damaged row's own business
    return top[0], top[1], ledger, bodies


def _aside(
    rows: LedgerRows, notes: list[str] | None, what: str, why: str, top: str | None, bad: Bodies, gen: str = ""
) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    aside = rows.move_aside(stamp, top, bad) if not gen else rows.move_aside(f"{gen}-{stamp}", top, bad)
    note = f"sweep history {what} (state of {rows.space}) is unusable ({why}): moved aside to {aside}, not used"
    if notes is not None:
        notes.append(note)
    return aside


def _recover(
    rows: LedgerRows,
    notes: list[str] | None,
    top_text: str | None,
    bodies: Bodies,
    bad: dict[str, str],
    why: str,
    partial: Ledger | None = None,
) -> tuple[Ledger, Bodies]:
    """What still reads, the ledger row from the one before when it is damaged or gone, each bad job
    as it stood before the latest fold when kept; damaged rows moved aside; saved with ``hold``."""
    kept = _before(rows, notes, {k: b for k, b in bodies.items() if k not in bad})
    if partial is not None:
        ledger = partial
    else:
        ledger = dataclasses.replace(kept[2], jobs={}) if kept is not None else Ledger()
        ledger.jobs, more = _entries(bodies)
        bad = {**bad, **more}
    lost = []
    for key, reason in bad.items():
        if kept is not None and key in kept[2].jobs:
            ledger.jobs[key] = kept[2].jobs[key]
        else:
            ledger.jobs.pop(key, None)
            lost.append(f"job {key[:80]} ({reason})")
    ledger.run_id = ""  # no re-run folds against a ledger before this recovery
    base = f"the ledger before run {kept[0]}" if kept is not None else "nothing (no ledger before the latest fold)"
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    ledger.hold = (
        f"{stamp}: ledger unusable ({why}): recovered from what still reads and {base}; "
        f"lost: {'; '.join(lost) or 'nothing known'}"
    )
    if top_text is not None or bad:
        _aside(rows, notes, "ledger", why, top_text, {k: bodies[k] for k in bad if k in bodies})
    _save(rows, ledger, {k: b for k, b in bodies.items() if k not in bad}, force=set(bad))
    if notes is not None:
        notes.append(
            f"LEDGER RECOVERED WITH LOSS: {ledger.hold}. Every submission and destructive act is held "
            "until a person confirms (trigger monitor_cron_sweep with confirm_ledger_reset=true)"
        )
    return ledger, {k: entry_text(e) for k, e in ledger.jobs.items()}


def _changed(rows: LedgerRows, ledger: Ledger, stored: Bodies, force: Iterable[str] = ()) -> dict[str, Split | None]:
    """The jobs to write: each entry whose rows differ from the stored ones (a job whose body,
    acts and claims are as stored is not written), None for a job gone."""
    out: dict[str, Split | None] = {}
    for key, e in ledger.jobs.items():
        new, was = entry_rows(e), stored.get(key)
        if was is None or rows.split(was) != new:
            out[key] = new
    out.update({k: None for k in stored.keys() - ledger.jobs.keys()})
    out.update({k: None for k in force if k not in ledger.jobs})
    return out


def _save(rows: LedgerRows, ledger: Ledger, stored: Bodies, force: Iterable[str] = ()) -> None:
    """Write the ledger row when it changed and the job rows that changed (one transaction)."""
    text = _dumps(top_of(ledger))
    if rows.top() != text:
        rows.write_top(text)
    rows.write_jobs(_changed(rows, ledger, stored, force), stored)


def load_ledger(run_log_dir: str | Path, notes: list[str] | None = None) -> Ledger:
    """The stored ledger: empty when none was ever written, recovered when damaged (module docstring)."""
    with _gc_paused(), _txn(run_log_dir) as rows:
        return _load(rows, notes)[0]


def _keyed(rows: LedgerRows, keys: Iterable[str] | None, kinds: Iterable[str] = ()) -> Ledger:
    """The ledger row and the jobs ``keys`` (or those holding an act of one of ``kinds``), as
    stored; _Damaged when one of them (or the ledger row) does not read."""
    text = rows.top()
    if text is None and rows.top(BEFORE) is not None:
        raise _Damaged
    try:
        ledger = _top(text)
    except (ValueError, RecursionError):
        raise _Damaged from None
    wanted = set(keys) if keys is not None else rows.acted(kinds)
    if wanted:
        got, bad = _entries(rows.jobs(keys=wanted))
        if bad:
            raise _Damaged
        ledger.jobs = dict(sorted(got.items()))  # one order, whatever the database's
    return ledger


def _read_or_recover(
    run_log_dir: str | Path, keys: set[str] | None, kinds: set[str], notes: list[str] | None
) -> Ledger:
    """_keyed read-only; a damaged one: the whole ledger is loaded (and recovered, module docstring)
    and the same jobs of it returned (``keys``, or those holding an act of one of ``kinds``)."""
    try:
        with _txn(run_log_dir, shared=True) as rows:
            return _keyed(rows, keys, kinds)
    except _Damaged:
        ledger = load_ledger(run_log_dir, notes)
        ledger.jobs = {
            k: e
            for k, e in ledger.jobs.items()
            if (k in keys if keys is not None else any(a.get("kind") in kinds for a in e.acts))
        }
        return ledger


def read_jobs(run_log_dir: str | Path, keys: Iterable[str], notes: list[str] | None = None) -> Ledger:
    """The ledger row and the jobs ``keys`` ("cluster|job_id", those stored), read-only: only their
    rows are read (a hand-off about a few jobs never reads the whole ledger). A damaged one: the
    whole ledger is loaded (and recovered, module docstring), these jobs of it returned."""
    return _read_or_recover(run_log_dir, set(keys), set(), notes)


def read_acted(run_log_dir: str | Path, kinds: Iterable[str], notes: list[str] | None = None) -> Ledger:
    """The ledger row and every job holding an act of one of ``kinds``, read-only: the act rows say
    which, only those jobs' rows are read. A damaged one: as read_jobs."""
    return _read_or_recover(run_log_dir, None, set(kinds), notes)


def read_top(run_log_dir: str | Path, notes: list[str] | None = None) -> Ledger:
    """The ledger row alone (no job: windows, digests told, the hold), read-only; no job row is read,
    so a damaged job row is found by the next read of it (or the fold) and not here. A damaged
    ledger row: the whole ledger is loaded and recovered."""
    return read_jobs(run_log_dir, (), notes)


def acts_by_job(run_log_dir: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Job key -> its acts, every job that has one: the act rows alone, read-only (no job row, no
    recovery: a page's or a scrape's read); an act row not JSON reads as ``{"kind": "?"}``."""
    with _txn(run_log_dir, shared=True) as rows:
        texts = rows.act_texts()
    out: dict[str, list[dict[str, Any]]] = {}
    for key, got in texts.items():
        for t in got:
            try:
                act = json.loads(t)
            except (ValueError, RecursionError):
                act = None
            out.setdefault(key, []).append(act if isinstance(act, dict) else {"kind": "?"})
    return out


def save_ledger(run_log_dir: str | Path, ledger: Ledger) -> None:
    """Replace the stored ledger in one transaction (a reader never sees half a ledger)."""
    with _txn(run_log_dir) as rows:
        _save(rows, ledger, rows.jobs())


def peek_ledger(run_log_dir: str | Path) -> Ledger:
    """The stored ledger read only (no recovery, no row written: a page's read); empty when none was
    ever written; a damaged one raises LedgerError (ValueError)."""
    with _txn(run_log_dir, shared=True) as rows:
        ledger = _top(rows.top())
        ledger.jobs, bad = _entries(rows.jobs())
    if bad:
        raise LedgerError(f"{len(bad)} damaged job row(s), e.g. {next(iter(bad))[:80]}")
    return ledger


def update_ledger(
    run_log_dir: str | Path, change: Callable[[Ledger], tuple[Ledger, T]], notes: list[str] | None = None
) -> T:
    """Load, apply ``change`` (returns the new ledger and a result), save what changed — under the
    ledger row's lock."""
    with _txn(run_log_dir) as rows:
        ledger, stored = _load(rows, notes)
        ledger, result = change(ledger)
        _save(rows, ledger, stored)
    return result


def update_jobs(
    run_log_dir: str | Path,
    keys: Iterable[str],
    change: Callable[[Ledger], tuple[Ledger, T]],
    *,
    top: bool = False,
    notes: list[str] | None = None,
) -> T:
    """A claim: ``change`` given a ledger that holds only the jobs ``keys`` (those stored) and the
    ledger row as read, under the lock of those jobs' rows alone (module docstring). ``change`` may
    add or alter entries of ``keys`` only and must leave the rest of the ledger as it was
    (ValueError otherwise: use update_ledger). ``top``: it may change the ledger row too (a
    relaunch's series count, a digest told), which it then holds FOR UPDATE (a fold and the other
    claims wait for it). Only the rows that changed are written. A damaged row falls back to
    update_ledger, which recovers it."""
    wanted = set(keys)
    try:
        with _txn(run_log_dir, shared=not top) as rows:
            text = rows.top()
            try:
                ledger = _top(text)
            except (ValueError, RecursionError):
                raise _Damaged from None
            stored, placeholders = rows.lock_jobs(wanted)
            ledger.jobs, bad = _entries(stored)
            if bad or (text is None and rows.top(BEFORE) is not None):
                raise _Damaged
            before = _dumps(top_of(ledger))
            ledger, result = change(ledger)
            after = _dumps(top_of(ledger))
            if (after != before and not top) or not ledger.jobs.keys() <= wanted:
                raise ValueError("update_jobs: the change touched more than its jobs' rows: use update_ledger")
            if after != before:
                rows.write_top(after)
            rows.write_jobs(_changed(rows, ledger, stored, placeholders), stored)
            return result
    except _Damaged:
        return update_ledger(run_log_dir, change, notes)


def update_top(
    run_log_dir: str | Path, change: Callable[[Ledger], tuple[Ledger, T]], notes: list[str] | None = None
) -> T:
    """A change of the ledger row alone (digests told, run outcomes, the hold): ``change`` is given
    the ledger without its jobs, under the ledger row's lock; no job row is read or written."""
    return update_jobs(run_log_dir, (), change, top=True, notes=notes)


def _rerun_of(
    rows: LedgerRows, current: Ledger, run_id: str, window_end: str, notes: list[str] | None
) -> tuple[str, str, Any] | None:
    """The ledger row before the latest fold (_before_top) when run ``run_id`` re-runs that run (the
    same run id, or the same window of the same cadence), else None."""
    kept = _before_top(rows, notes) if current.run_id else None
    latest = kept if kept is not None and kept[0] == current.run_id else None  # before the latest fold
    if latest is not None and (run_id == latest[0] or (window_end == latest[1] and same_cadence(run_id, latest[0]))):
        return latest
    return None


def _base(
    rows: LedgerRows, current: Ledger, stored: Bodies, run_id: str, window_end: str, notes: list[str] | None
) -> tuple[Ledger, Bodies]:
    """What run ``run_id`` folds against: the ledger before the latest fold when it re-runs that run
    (the same run id, or the same window of the same cadence), else ``current``. A report sweep and
    a watch run whose windows end together are two runs (sweep_core.timing.cadence): the second folds on top."""
    latest = _rerun_of(rows, current, run_id, window_end, notes)
    if latest is None:
        return current, stored
    full = _before(rows, notes, stored, latest)
    assert full is not None
    return full[2], full[3]


def _fold_into_before(
    rows: LedgerRows, latest: str, stored: Bodies, fold: Callable[[Ledger], tuple[Ledger, Any]], notes: list[str] | None
) -> None:
    """A backfill's fold also goes into the ledger kept for a re-run of the latest run, so that
    re-run does not lose what the backfill learned (the jobs only it saw, when they were first seen)."""
    kept = _before(rows, notes, stored)
    if kept is None or kept[0] != latest:
        return
    run, end, before, texts = kept
    folded, _ = fold(before)
    folded.run_id = before.run_id
    rows.write_top(_dumps({"run_id": run, "window_end": end, "ledger": top_of(folded)}), BEFORE)
    rows.put_jobs(_changed(rows, folded, texts), BEFORE)


def ledger_for_run(run_log_dir: str | Path, run_id: str, window_end: str, notes: list[str] | None = None) -> Ledger:
    """The ledger run ``run_id`` (window ending ``window_end``, ISO UTC) will fold against, read-only."""
    with _txn(run_log_dir) as rows:
        current, stored = _load(rows, notes)
        return _base(rows, current, stored, run_id, window_end, notes)[0]


def top_for_run(run_log_dir: str | Path, run_id: str, window_end: str, notes: list[str] | None = None) -> Ledger:
    """ledger_for_run's ledger row alone, no job row read (windows, clusters read until when: a
    gather task's catch-up window). A damaged ledger row: the whole ledger is loaded and recovered."""
    try:
        with _txn(run_log_dir) as rows:
            current = _keyed(rows, ())
            latest = _rerun_of(rows, current, run_id, window_end, notes)
            return current if latest is None else _top(_dumps(latest[2]))
    except _Damaged:
        return dataclasses.replace(ledger_for_run(run_log_dir, run_id, window_end, notes), jobs={})


def peek_jobs(run_log_dir: str | Path, keys: Iterable[str]) -> Ledger:
    """peek_ledger of the jobs ``keys`` alone (read only, no recovery: a page's read of one job);
    a damaged one raises LedgerError (ValueError)."""
    try:
        with _txn(run_log_dir, shared=True) as rows:
            return _keyed(rows, set(keys))
    except _Damaged:
        raise LedgerError("the ledger row or a job row asked for is damaged (the next sweep recovers it)") from None


def fold_run(
    run_log_dir: str | Path,
    run_id: str,
    window_end: str,
    fold: Callable[[Ledger], tuple[Ledger, T]],
    notes: list[str] | None = None,
) -> T:
    """Fold run ``run_id`` (window ending ``window_end``) in under the lock. The first fold of a run
    keeps the ledger as it stood before it; a re-run of the run that folded last (the same run id,
    or the same window: ``dags test`` again at the same logical date) folds against that again and
    tells the same changes, keeping every hand-off given since. Any other run folds on top; a run
    of an OLDER window (a backfill) leaves the latest run as it was and is folded into that run's
    ledger before too, so a re-run of the latest run folds against what it folded against plus
    what the backfill learned (nothing the backfill saw is lost to the re-run). Only the rows the
    fold changed are written."""
    with _gc_paused(), _txn(run_log_dir) as rows:
        current, stored = _load(rows, notes)
        base, _texts = _base(rows, current, stored, run_id, window_end, notes)
        older = bool(current.window_end) and window_end < current.window_end and base is current
        if not older:
            body = _dumps({"run_id": run_id, "window_end": window_end, "ledger": top_of(base)})
            if base is current:
                rows.start_before(body)  # a new fold: the job rows' copies start again
            else:
                rows.write_top(body, BEFORE)  # a re-run: the copies are still those of before it
        else:
            _fold_into_before(rows, current.run_id, stored, fold, notes)
        ledger, result = fold(base)
        ledger.run_id = current.run_id if older else run_id
        _save(rows, merge_given(ledger, current, dropped=base.jobs.keys() - ledger.jobs.keys()), stored)
    return result
