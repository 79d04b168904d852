"""The report sweep's "changes since the previous sweep" count from the previous REPORT sweep. The
watch folds every few minutes and tells each change once, against the fold before it (whichever
cadence made it); a report sweep folding on top of the latest watch would tell only that watch's last
minutes. So the ledger keeps every change a watch run told since the last report sweep, and the next
report sweep tells them (each marked with its watch's time) before its own, then drops them.
"""

from __future__ import annotations

import datetime as dt

from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.fold import Change
from sweep_core.timing.cadence import is_watch_run

KEEP = 2000  # changes kept for the next report sweep; past it the oldest are counted, not kept
DROPPED = "dropped"


def _stamp(at: str, report_end: str) -> str:
    """A watch window's end as the report reads it: ``HH:MMZ``, with the date when another day's."""
    when, end = dt.datetime.fromisoformat(at), dt.datetime.fromisoformat(report_end)
    return when.strftime("%H:%MZ" if when.date() == end.date() else "%Y-%m-%d %H:%MZ")


def _kept(records: list[dict[str, str]]) -> list[dict[str, str]]:
    """``records`` cut to the newest KEEP, the cut ones counted in one "dropped" record before them."""
    if len(records) <= KEEP:
        return records
    cut, rest = records[: len(records) - KEEP + 1], records[len(records) - KEEP + 1 :]
    n = sum(int(r.get("count", "1")) for r in cut)
    line = f"{n} earlier change(s) found by the watch not kept (the ledger keeps the newest {KEEP})"
    return [{"at": cut[-1]["at"], "kind": DROPPED, "cluster": "", "line": line, "count": str(n)}, *rest]


def carry(base: Ledger, new: Ledger, changes: list[Change], *, run_id: str, window_end: str) -> list[Change]:
    """What run ``run_id`` (window ending ``window_end``, ISO UTC) tells, ``new.since_report`` set.

    ``base`` is the ledger it folded against, ``new`` the fold's result, ``changes`` what the fold
    found. A watch run tells its own changes and keeps them for the report (not a run of an earlier
    window than ``base``'s: that backfill's changes are not since the last report). A report run tells
    the kept changes of the watch windows that ended by its own window's end, then its own, and drops
    those it told (a backfilled report leaves the later watches' changes to the next report)."""
    if is_watch_run(run_id):
        if not (base.window_end and window_end < base.window_end):
            told = [
                {"at": window_end, "kind": c.kind, "cluster": c.cluster, "line": c.line}
                for c in changes
                if c.kind != "none"
            ]
            new.since_report = _kept([*base.since_report, *told])
        return changes
    due = [r for r in base.since_report if r["at"] <= window_end]
    new.since_report = [r for r in base.since_report if r["at"] > window_end]
    earlier = [Change(r["kind"], r["cluster"], f"watch {_stamp(r['at'], window_end)}: {r['line']}") for r in due]
    if earlier and [c.kind for c in changes] == ["none"]:
        changes = []  # "no change since the previous sweep" is the latest watch's news, not the report's
    return [*earlier, *changes]
