"""Where the ledger lives: the document ``ledger.json`` of the run-log directory's space in the state
database (sweep_core.state), read and rewritten in one transaction under its lock (backfills, a run
by hand and workers on other hosts may fold at once), with ``ledger.before.json``: the ledger as it
stood before the latest run folded, so that a re-run of that run folds against it again.

A damaged ledger (not JSON, truncated, a bad entry, or gone while ``ledger.before.json`` is there)
is moved aside (``ledger.json.corrupt-<stamp>``), never deleted, and recovered: ``ledger.before.json``
plus every entry of the damaged document that still reads, with a note naming what was lost. A
ledger recovered so carries ``hold``: every submission and destructive act waits until a person
confirms (sweep_core.ledger.hold). A read that fails for another reason (the database unreachable,
a permission) raises: never read as an empty ledger.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

from sweep_core.cadence import same_cadence
from sweep_core.ledger.entries import Ledger, LedgerEntry, LedgerError, SeriesMax, _record
from sweep_core.ledger.given import merge_given
from sweep_core.state.documents import Documents, locked, read_document

LEDGER_FILE = "ledger.json"
BEFORE_FILE = "ledger.before.json"
T = TypeVar("T")


def _why(exc: Exception) -> str:
    return str(exc)[:160] if isinstance(exc, LedgerError) else f"{type(exc).__name__}: {str(exc)[:160]}"


def _read(docs: Documents, name: str, notes: list[str] | None, parse: Callable[[Any], T]) -> T | None:
    """``parse`` of the JSON document ``name``; None when absent or unusable (then moved aside, noted)."""
    text = docs.read(name)
    if text is None:
        return None
    try:
        return parse(json.loads(text))
    except (ValueError, RecursionError) as exc:  # LedgerError, not JSON, huge number
        docs.move_aside(name, _why(exc), notes)
        return None


def _write(docs: Documents, name: str, obj: Any) -> None:
    """Replace document ``name``: a reader never sees half of it (the transaction commits or not)."""
    docs.write(name, json.dumps(obj, sort_keys=True))


def _load(docs: Documents, notes: list[str] | None) -> Ledger:
    """The stored ledger (call under the lock): empty when none was ever written; recovered (and
    saved, with ``hold``) when damaged; a database error raises."""
    data = docs.read(LEDGER_FILE)
    if data is None:
        if docs.read(BEFORE_FILE) is not None:
            return _recover(docs, notes, None, "missing while ledger.before.json is there")
        return Ledger()
    lost: list[str] = []
    try:
        ledger = Ledger.from_dict(json.loads(data), lost)
    except (ValueError, RecursionError) as exc:  # LedgerError, not JSON, huge number
        return _recover(docs, notes, data, _why(exc))
    if lost:
        return _recover(docs, notes, data, f"{len(lost)} bad entr{'y' if len(lost) == 1 else 'ies'} ({lost[0][:160]})",
                        partial=ledger, lost=lost)  # fmt: skip
    return ledger


def _salvage(text: str) -> tuple[Ledger, list[str]]:
    """The job and series entries that still read in a damaged ledger's text (a truncated one
    keeps every entry before the cut), and what was not read."""
    dec = json.JSONDecoder()
    got, lost = Ledger(), []
    for section, cls, into in (("jobs", LedgerEntry, got.jobs), ("series", SeriesMax, got.series)):
        head = f'"{section}": {{'
        at = text.find(head)
        if at < 0:
            lost.append(f"the '{section}' object (not found)")
            continue
        i, last = at + len(head), ""
        while i < len(text) and text[i] != "}":
            try:
                key, i = dec.raw_decode(text, i)
                i = text.index(":", i) + 1
                while text[i] == " ":
                    i += 1
                value, i = dec.raw_decode(text, i)
                into[key] = _record(cls, str(key), value)
                last = str(key)
            except (ValueError, IndexError, RecursionError) as exc:  # LedgerError is a ValueError
                lost.append(
                    f"'{section}' after entry {last[:80]!r}: {len(text) - i} characters unreadable ({str(exc)[:80]})"
                )
                break
            while i < len(text) and text[i] in ", ":
                i += 1
    return got, lost


def _recover(
    docs: Documents,
    notes: list[str] | None,
    data: str | None,
    why: str,
    partial: Ledger | None = None,
    lost: list[str] | None = None,
) -> Ledger:
    """``ledger.before.json`` plus the entries of the damaged file that read (they are newer), the
    damaged file moved aside, the result saved with ``hold``; a note names what was lost."""
    lost = list(lost or [])
    kept = _read(docs, BEFORE_FILE, notes, _before)
    before = kept[2] if kept is not None else Ledger()
    if partial is not None:  # it parsed but for some entries: it is the ledger, the one before fills gaps
        ledger, salvaged = partial, len(partial.jobs)
        for key, entry in before.jobs.items():
            ledger.jobs.setdefault(key, entry)
        for key, smax in before.series.items():
            ledger.series.setdefault(key, smax)
    else:  # not JSON (truncated) or gone: the one before, then every entry of the file that still reads
        ledger, salvaged = before, 0
        if data is not None:
            got, more = _salvage(data)
            lost += more
            ledger.jobs.update(got.jobs)
            ledger.series.update(got.series)
            salvaged = len(got.jobs)
    ledger.run_id = ""  # no re-run folds against a ledger before this recovery
    base = (
        f"ledger.before.json (the ledger before run {kept[0]})"
        if kept is not None
        else "nothing (no ledger.before.json)"
    )
    lost_text = "; ".join(lost) or "entries the damaged file alone held are unknown"
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    ledger.hold = (
        f"{stamp}: ledger.json unusable ({why}): recovered from {base} and {salvaged} job entries of the damaged file; "
        f"lost: {lost_text}"
    )
    if data is not None:
        docs.move_aside(LEDGER_FILE, why, notes)
    _save(docs, ledger)
    if notes is not None:
        notes.append(f"LEDGER RECOVERED WITH LOSS: {ledger.hold}. Every submission and destructive act is held "
                     "until a person confirms (trigger monitor_cron_sweep with confirm_ledger_reset=true)")  # fmt: skip
    return ledger


def load_ledger(run_log_dir: str | Path, notes: list[str] | None = None) -> Ledger:
    """The stored ledger: empty when none was ever written, recovered when damaged (module docstring)."""
    with _locked(run_log_dir) as docs:
        return _load(docs, notes)


def _save(docs: Documents, ledger: Ledger) -> None:
    _write(docs, LEDGER_FILE, ledger.to_dict())


def save_ledger(run_log_dir: str | Path, ledger: Ledger) -> None:
    """Replace the stored ledger in one transaction (a reader never sees half a ledger)."""
    with _locked(run_log_dir) as docs:
        _save(docs, ledger)


def _before(raw: Any) -> tuple[str, str, Ledger]:
    """(run id, window end, ledger) of a ``ledger.before.json``."""
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in ("run_id", "window_end")):
        raise LedgerError("not an object with 'run_id' and 'window_end' strings")
    return raw["run_id"], raw["window_end"], Ledger.from_dict(raw.get("ledger"))


def _locked(run_log_dir: str | Path) -> AbstractContextManager[Documents]:
    """The ledger's transaction: the lock of ``ledger.json`` guards ``ledger.before.json`` too."""
    return locked(run_log_dir, LEDGER_FILE)


def peek_ledger(run_log_dir: str | Path) -> Ledger:
    """The stored ledger read only (no recovery, nothing written: a page's read); empty when none was
    ever written; a damaged one raises LedgerError (ValueError)."""
    text = read_document(run_log_dir, LEDGER_FILE)
    return Ledger() if text is None else Ledger.from_dict(json.loads(text))


def update_ledger(
    run_log_dir: str | Path, change: Callable[[Ledger], tuple[Ledger, T]], notes: list[str] | None = None
) -> T:
    """Load, apply ``change`` (returns the new ledger and a result), save — under one lock."""
    with _locked(run_log_dir) as docs:
        ledger, result = change(_load(docs, notes))
        _save(docs, ledger)
    return result


def _base(docs: Documents, current: Ledger, run_id: str, window_end: str, notes: list[str] | None) -> Ledger:
    """What run ``run_id`` folds against: the ledger before the latest fold when it re-runs that run
    (the same run id, or the same window of the same cadence), else ``current``. A report sweep and
    a watch run whose windows end together are two runs (sweep_core.cadence): the second folds on top."""
    kept = _read(docs, BEFORE_FILE, notes, _before) if current.run_id else None
    latest = kept if kept is not None and kept[0] == current.run_id else None  # before the latest fold
    rerun = latest is not None and (
        run_id == latest[0] or (window_end == latest[1] and same_cadence(run_id, latest[0]))
    )
    return latest[2] if latest is not None and rerun else current


def _fold_into_before(
    docs: Documents, latest: str, fold: Callable[[Ledger], tuple[Ledger, Any]], notes: list[str] | None
) -> None:
    """A backfill's fold also goes into the ledger kept for a re-run of the latest run, so that
    re-run does not lose what the backfill learned (the jobs only it saw, when they were first seen)."""
    kept = _read(docs, BEFORE_FILE, notes, _before)
    if kept is None or kept[0] != latest:
        return
    run, end, before = kept
    folded, _ = fold(before)
    folded.run_id = before.run_id
    _write(docs, BEFORE_FILE, {"run_id": run, "window_end": end, "ledger": folded.to_dict()})


def ledger_for_run(run_log_dir: str | Path, run_id: str, window_end: str, notes: list[str] | None = None) -> Ledger:
    """The ledger run ``run_id`` (window ending ``window_end``, ISO UTC) will fold against, read-only."""
    with _locked(run_log_dir) as docs:
        return _base(docs, _load(docs, notes), run_id, window_end, notes)


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
    what the backfill learned (nothing the backfill saw is lost to the re-run)."""
    with _locked(run_log_dir) as docs:
        current = _load(docs, notes)
        base = _base(docs, current, run_id, window_end, notes)
        older = bool(current.window_end) and window_end < current.window_end and base is current
        if not older:
            _write(docs, BEFORE_FILE, {"run_id": run_id, "window_end": window_end, "ledger": base.to_dict()})
        else:
            _fold_into_before(docs, current.run_id, fold, notes)
        ledger, result = fold(base)
        ledger.run_id = current.run_id if older else run_id
        _save(docs, merge_given(ledger, current, dropped=base.jobs.keys() - ledger.jobs.keys()))
    return result
