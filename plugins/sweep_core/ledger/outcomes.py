"""How the sweep runs end: the failed runs since the last success (a re-run of a failed run that
fails again counts once; a success clears them), so that a sweep that keeps failing (and so tells
nobody anything) is itself told: every ``every`` failed runs in a row.
"""

from __future__ import annotations

from pathlib import Path

from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.store import update_ledger


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

    return update_ledger(run_log_dir, change)


def tells_failing(streak: int, every: int | None) -> bool:
    """Whether ``streak`` failed runs in a row are told: at ``every``, 2×``every``, …; never when None."""
    return bool(every) and streak >= every and streak % every == 0  # type: ignore[operator]
