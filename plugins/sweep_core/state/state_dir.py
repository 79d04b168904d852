"""The run-log directory's state folder (``.sweep-state``: the default state database, sweep_core.state)
and the one way an unusable history file is handled: moved aside as ``<name>.corrupt-<UTC stamp>`` with a
warning and a note for the report, never deleted, never failing this sweep nor any later one.
(The sweeps' own record is the Parquet history, sweep_core.history.)
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

STATE_DIR = ".sweep-state"
log = logging.getLogger(__name__)


def move_aside(path: Path, why: str, notes: list[str] | None) -> None:
    """Move an unusable state file aside as ``<name>.corrupt-<stamp>`` (never deleted), with a warning and a note."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    try:
        path.rename(aside)
        note = f"sweep history {path} is unusable ({why}): moved aside to {aside.name}, not used"
    except OSError as exc:
        note = f"sweep history {path} is unusable ({why}) and could not be moved aside ({exc}): not used"
    log.warning("%s", note)
    if notes is not None:
        notes.append(note)
