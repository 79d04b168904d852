"""The catch-up window: a sweep after sweeps that could not read a cluster's sacct asks sacct from
the end of the last window that was read, so a job that ended meanwhile is told with its end state
(not "gone"). Bounded, and never for a backfill of an earlier window.
"""

from __future__ import annotations

import datetime as dt

from sweep_core.ledger.entries import Ledger


def catch_up_start(
    ledger: Ledger, cluster: str, start: dt.datetime, end: dt.datetime, max_back: dt.timedelta
) -> tuple[dt.datetime, str]:
    """The sacct start for ``cluster`` in the window [start, end), and a note when it was widened."""
    read = ledger.read_until.get(cluster, "")
    end_iso = end.astimezone(dt.UTC).isoformat()
    if not read or (ledger.window_end and end_iso < ledger.window_end):
        return start, ""  # never read (its first sweep lists no history), or a backfill of an earlier window
    since = dt.datetime.fromisoformat(read)
    if since >= start:
        return start, ""
    floor = start - max_back
    widened = max(since, floor)
    note = f"sacct window widened back to {widened.astimezone(dt.UTC):%Y-%m-%d %H:%M:%S}Z: the sweeps since did not read it"
    if since < floor:
        note += f" (capped at gather.catch_up_hours; it was last read up to {read})"
    return widened, note
