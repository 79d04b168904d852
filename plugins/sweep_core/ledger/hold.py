"""A ledger recovered with loss (sweep_core.ledger.store) may have forgotten a claim, a reservation
or a hand-off: until a person confirms, every submission and destructive act is held (the hand-offs'
runner refuses act scripts, sweep_operators.handoff_io), each run log says so, and read-only work
goes on. A person confirms by triggering ``monitor_cron_sweep`` with ``confirm_ledger_reset: true``
once they have checked the cluster (squeue/sacct) against what the note says was lost.
"""

from __future__ import annotations

from pathlib import Path

from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.store import read_top, update_top

CONFIRM_PARAM = "confirm_ledger_reset"


def held(run_log_dir: str | Path) -> str:
    """Why acts are held ('' = not held): the ledger row alone is read (ledger.store.read_top)."""
    return read_top(run_log_dir).hold


def held_problem(hold: str) -> str:
    """What a held act says instead of running."""
    return (
        f"held: the ledger was recovered with loss ({hold[:300]}); no submission or destructive act runs "
        f"until a person confirms (trigger monitor_cron_sweep with {CONFIRM_PARAM}=true)"
    )


def held_line(hold: str) -> str:
    """The run log's line while acts are held."""
    return f"ACTS HELD: {held_problem(hold)[len('held: ') :]}"


def confirm_reset(run_log_dir: str | Path, by: str) -> str:
    """Clear the hold (a person confirmed, ``by`` says who/which run); the hold it cleared ('' = none)."""

    def change(ledger: Ledger) -> tuple[Ledger, str]:
        old, ledger.hold = ledger.hold, ""
        return ledger, old

    cleared = update_top(run_log_dir, change)
    return f"ledger hold cleared by {by}: was {cleared}" if cleared else ""
