"""Where the ledger lives: ``<run_log_dir>/.sweep-state/ledger.json`` beside the per-sweep history,
written atomically under an exclusive lock (backfills and a run by hand may fold at once). A
ledger that cannot be used is moved aside with a note, never deleted, and the sweep starts afresh.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from sweep_core.fanin.history import STATE_DIR, move_aside
from sweep_core.ledger.entries import Ledger, LedgerError

LEDGER_FILE = "ledger.json"
T = TypeVar("T")


def ledger_path(run_log_dir: str | Path) -> Path:
    return Path(run_log_dir) / STATE_DIR / LEDGER_FILE


def load_ledger(run_log_dir: str | Path, notes: list[str] | None = None) -> Ledger:
    """The stored ledger, or an empty one (none yet, or unusable: moved aside, noted)."""
    path = ledger_path(run_log_dir)
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
        return Ledger.from_dict(raw)
    except FileNotFoundError:
        return Ledger()
    except (ValueError, RecursionError) as exc:  # LedgerError, not UTF-8, not JSON, huge number
        why = str(exc)[:160] if isinstance(exc, LedgerError) else f"{type(exc).__name__}: {str(exc)[:160]}"
        move_aside(path, why, notes)
        return Ledger()


def save_ledger(run_log_dir: str | Path, ledger: Ledger) -> Path:
    """Write atomically (a reader never sees half a ledger)."""
    path = ledger_path(run_log_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(ledger.to_dict(), sort_keys=True), encoding="utf-8")
    tmp.replace(path)
    return path


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
