"""Where the ledger lives: ``<run_log_dir>/.sweep-state/ledger.json`` beside the per-sweep history,
written atomically under an exclusive lock (backfills and a run by hand may fold at once), with
``ledger.before.json``: the ledger as it stood before the latest run folded, so that a re-run of
that run folds against it again. A file that cannot be used is moved aside with a note, never deleted.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sweep_core.ledger.entries import Ledger, LedgerError
from sweep_core.ledger.given import merge_given
from sweep_core.state_dir import STATE_DIR, move_aside

LEDGER_FILE = "ledger.json"
BEFORE_FILE = "ledger.before.json"
T = TypeVar("T")


def ledger_path(run_log_dir: str | Path) -> Path:
    return Path(run_log_dir) / STATE_DIR / LEDGER_FILE


def _read(path: Path, notes: list[str] | None, parse: Callable[[Any], T]) -> T | None:
    """``parse`` of the JSON at ``path``; None when absent or unusable (then moved aside, noted)."""
    try:
        return parse(json.loads(path.read_bytes().decode("utf-8")))
    except FileNotFoundError:
        return None
    except (ValueError, RecursionError) as exc:  # LedgerError, not UTF-8, not JSON, huge number
        why = str(exc)[:160] if isinstance(exc, LedgerError) else f"{type(exc).__name__}: {str(exc)[:160]}"
        move_aside(path, why, notes)
        return None


def _write(path: Path, obj: Any) -> Path:
    """Write atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, sort_keys=True), encoding="utf-8")
    tmp.replace(path)
    return path


def load_ledger(run_log_dir: str | Path, notes: list[str] | None = None) -> Ledger:
    """The stored ledger, or an empty one (none yet, or unusable: moved aside, noted)."""
    return _read(ledger_path(run_log_dir), notes, Ledger.from_dict) or Ledger()


def save_ledger(run_log_dir: str | Path, ledger: Ledger) -> Path:
    """Write atomically (a reader never sees half a ledger)."""
    return _write(ledger_path(run_log_dir), ledger.to_dict())


def _before(raw: Any) -> tuple[str, str, Ledger]:
    """(run id, window end, ledger) of a ``ledger.before.json``."""
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), str) for k in ("run_id", "window_end")):
        raise LedgerError("not an object with 'run_id' and 'window_end' strings")
    return raw["run_id"], raw["window_end"], Ledger.from_dict(raw.get("ledger"))


@contextmanager
def _locked(run_log_dir: str | Path) -> Iterator[None]:
    lock = ledger_path(run_log_dir).with_name(".ledger.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def update_ledger(
    run_log_dir: str | Path, change: Callable[[Ledger], tuple[Ledger, T]], notes: list[str] | None = None
) -> T:
    """Load, apply ``change`` (returns the new ledger and a result), save — under one lock."""
    with _locked(run_log_dir):
        ledger, result = change(load_ledger(run_log_dir, notes))
        save_ledger(run_log_dir, ledger)
    return result


def _before_path(run_log_dir: str | Path) -> Path:
    return ledger_path(run_log_dir).with_name(BEFORE_FILE)


def _base(run_log_dir: str | Path, current: Ledger, run_id: str, window_end: str, notes: list[str] | None) -> Ledger:
    """What run ``run_id`` folds against: the ledger before the latest fold when it re-runs that run
    (the same run id, or the same window), else ``current``."""
    kept = _read(_before_path(run_log_dir), notes, _before) if current.run_id else None
    latest = kept if kept is not None and kept[0] == current.run_id else None  # before the latest fold
    rerun = latest is not None and (run_id == latest[0] or window_end == latest[1])
    return latest[2] if latest is not None and rerun else current


def _fold_into_before(
    run_log_dir: str | Path, latest: str, fold: Callable[[Ledger], tuple[Ledger, Any]], notes: list[str] | None
) -> None:
    """A backfill's fold also goes into the ledger kept for a re-run of the latest run, so that
    re-run does not lose what the backfill learned (the jobs only it saw, when they were first seen)."""
    kept = _read(_before_path(run_log_dir), notes, _before)
    if kept is None or kept[0] != latest:
        return
    run, end, before = kept
    folded, _ = fold(before)
    folded.run_id = before.run_id
    _write(_before_path(run_log_dir), {"run_id": run, "window_end": end, "ledger": folded.to_dict()})


def ledger_for_run(run_log_dir: str | Path, run_id: str, window_end: str, notes: list[str] | None = None) -> Ledger:
    """The ledger run ``run_id`` (window ending ``window_end``, ISO UTC) will fold against, read-only."""
    with _locked(run_log_dir):
        return _base(run_log_dir, load_ledger(run_log_dir, notes), run_id, window_end, notes)


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
    with _locked(run_log_dir):
        current = load_ledger(run_log_dir, notes)
        base = _base(run_log_dir, current, run_id, window_end, notes)
        older = bool(current.window_end) and window_end < current.window_end and base is current
        if not older:
            _write(_before_path(run_log_dir), {"run_id": run_id, "window_end": window_end, "ledger": base.to_dict()})
        else:
            _fold_into_before(run_log_dir, current.run_id, fold, notes)
        ledger, result = fold(base)
        ledger.run_id = current.run_id if older else run_id
        save_ledger(run_log_dir, merge_given(ledger, current, dropped=base.jobs.keys() - ledger.jobs.keys()))
    return result
