"""The digest's cleanup-backlog line: "N cleanups blocked for > 24 h (reasons)".

The cleanup backlog (sweep_core.handoffs.cleanup.backlog) holds every completed job whose trees are
not yet confirmed removed, with ``since`` and the latest cleanup run's ``reason``. A job in it for
longer than ``BLOCKED_HOURS`` is blocked; the line counts them by kind of reason. It is told as a
change: when it first appears, and again only when its text (N or the reasons) changes, never every
sweep; the text told last is kept (``BACKLOG_TOLD``, a state document) and cleared when N falls to 0,
so that the same backlog coming back is told again.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

BLOCKED_HOURS = 24
BACKLOG_TOLD = "cleanup_backlog_told.json"  # {"line": the text told last, "run_id": the run that told it}

# (words found in a reason, what the line calls it): the first that matches names the kind
KINDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("cleanup.hub_org is empty",), "no hub org configured"),
    (("HF-only or not cannot be told",), "launch YAML unreadable (HF-only or not)"),
    (("awaiting its cleanup run",), "handed off again, its cleanup run pending"),
    (("own upload has not landed",), "its upload has not landed"),
    (("hub check UNKNOWN",), "hub answer UNKNOWN"),
    (("hub check failed", "no hub evidence"), "not on the hub"),
    (("of the same name maps to the same artifact dir",), "held back for a live same-name job"),
    (("consolidate not finished",), "consolidate not finished"),
    (("in squeue: a live job",), "still live in squeue"),
    (("squeue UNKNOWN", "unreachable", "no destructive step"), "cluster unreadable"),
    (("sacct", "not COMPLETED", "done-signal"), "no positive done-signal"),
    (("rm started, not gone yet",), "rm not confirmed"),
    (("refused on the cluster",), "rm refused on the cluster"),
)


def reason_kind(reason: str) -> str:
    """The kind of one backlog reason, as the digest line names it."""
    if not reason:
        return "not judged yet"
    for words, kind in KINDS:
        if any(w in reason for w in words):
            return kind
    return "another guard"


def _since(entry: Mapping[str, Any]) -> dt.datetime | None:
    try:
        t = dt.datetime.fromisoformat(str(entry.get("since") or ""))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def blocked_line(backlog: Iterable[Mapping[str, Any]], now: dt.datetime, hours: float = BLOCKED_HOURS) -> str:
    """The line "N cleanups blocked for > 24 h (k kind, …)" for the entries older than ``hours``; ""
    when N is 0.
    An entry without a readable ``since`` is not counted (its age is unknown until a run stamps it)."""
    cutoff = now - dt.timedelta(hours=hours)
    kinds = Counter(reason_kind(str(e.get("reason") or "")) for e in backlog if (t := _since(e)) and t < cutoff)
    n = sum(kinds.values())
    if not n:
        return ""
    why = ", ".join(f"{k} {kind}" for kind, k in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{n} cleanup{'s' if n != 1 else ''} blocked for > {hours:g} h ({why})"


def to_tell(line: str, told: str | None, run_id: str) -> tuple[bool, str | None]:
    """Whether this sweep tells ``line``, and the told document to write (None: leave it).
    ``told``: the document's text (None when there is none). Told when the line differs from the one
    told last, or when this very run told it (a re-run sends the same digest, deduplicated per channel
    by ledger.told); an empty line tells nothing and clears what was told."""
    try:
        last = json.loads(told) if told else {}
    except ValueError:
        last = {}
    last = last if isinstance(last, dict) else {}
    if not line:
        return False, (json.dumps({"line": "", "run_id": run_id}) if last.get("line") else None)
    if line != last.get("line") or last.get("run_id") == run_id:
        return True, json.dumps({"line": line, "run_id": run_id})
    return False, None
