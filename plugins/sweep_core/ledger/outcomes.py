"""How the sweep runs end: the failed runs since the last success (a re-run of a failed run that
fails again counts once; a success clears them), so that a sweep that keeps failing (and so tells
nobody anything) is itself told: every ``every`` failed runs in a row. The watch keeps its own
streak (``Ledger.watch_streak``), counted in time: a run every 5 minutes that fails for N minutes is
told once, and again after a cooldown while it keeps failing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from sweep_core.ledger.entries import Ledger, WatchStreak
from sweep_core.ledger.store import update_top


def note_outcome(ledger: Ledger, run_id: str, ok: bool, when: str) -> int:
    """Record run ``run_id``'s end at ``when`` (ISO UTC) in place; the failed runs in a row now."""
    if ok:
        ledger.failing, ledger.last_success = [], f"{run_id} {when}"
    elif run_id not in ledger.failing:
        ledger.failing.append(run_id)
    return len(ledger.failing)


def record_outcome(run_log_dir: str | Path, run_id: str, ok: bool, when: str) -> tuple[int, str]:
    """(failed runs in a row, the last success "<run id> <time>" or "") after recording this end."""

    def change(ledger: Ledger) -> tuple[Ledger, tuple[int, str]]:
        return ledger, (note_outcome(ledger, run_id, ok, when), ledger.last_success)

    return update_top(run_log_dir, change)


def tells_failing(streak: int, every: int | None) -> bool:
    """Whether ``streak`` failed runs in a row are told: at ``every``, 2×``every``, …; never when None."""
    return bool(every) and streak >= every and streak % every == 0  # type: ignore[operator]


@dataclass(frozen=True)
class WatchFailing:
    """The watch's failing streak, to be told: its failed runs in a row, since when (the first failed
    run's window start, ISO UTC), the latest failed run's window end, and its last success."""

    runs: int
    since: str
    latest: str
    last_success: str


def _minutes(a: str, b: str) -> float:
    """Minutes from ISO time ``a`` to ``b``."""
    return (dt.datetime.fromisoformat(b) - dt.datetime.fromisoformat(a)).total_seconds() / 60


def note_watch_outcome(
    ledger: Ledger, run_id: str, ok: bool, *, start: str, end: str, after_minutes: int | None, repeat_minutes: int
) -> WatchFailing | None:
    """Record watch run ``run_id`` (window [``start``, ``end``), ISO UTC) in place; the streak to tell
    now, or None. A success clears the streak; a failure joins it (a re-run of a failed run counts
    once). The streak is told once it has lasted ``after_minutes`` (first failed window's start to
    this one's end; None = never), then again when ``repeat_minutes`` have passed since it was told."""
    w = ledger.watch_streak
    if ok:
        ledger.watch_streak = WatchStreak(last_success=f"{run_id} {end}")
        return None
    if run_id not in w.failing:
        w.failing.append(run_id)
    w.since = min(w.since or start, start)
    if after_minutes is None or _minutes(w.since, end) < after_minutes:
        return None
    if w.told and _minutes(w.told, end) < repeat_minutes:
        return None
    w.told = end
    return WatchFailing(len(w.failing), w.since, end, w.last_success)


def record_watch_outcome(
    run_log_dir: str | Path,
    run_id: str,
    ok: bool,
    *,
    start: str,
    end: str,
    after_minutes: int | None,
    repeat_minutes: int,
) -> WatchFailing | None:
    """``note_watch_outcome`` on the stored ledger, under its lock (recorded as told before it is sent)."""

    def change(ledger: Ledger) -> tuple[Ledger, WatchFailing | None]:
        told = note_watch_outcome(
            ledger, run_id, ok, start=start, end=end, after_minutes=after_minutes, repeat_minutes=repeat_minutes
        )
        return ledger, told

    return update_top(run_log_dir, change)
