"""The digest of one sweep, from the Parquet history: flags and cluster problems NEW since the
previous sweep, those RESOLVED, those still open that crossed a cooldown boundary (told again), and
the hand-offs this sweep triggered. Everything is derived from the history rows, so nothing is
repeated and nothing needs a second memory: an item open in the previous sweep is not told again.

A flag of a cluster this sweep could not read (UNKNOWN, UNREACHABLE, skipped) is neither resolved
nor new: that sweep does not break its open streak. Likewise a flag of a rule a sweep did not run
(a watch run runs the fast rules only, sweep_core.timing.cadence): the watch and the report sweep share the
history, so what one told the other does not tell again, and neither resolves what only the other
can see.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sweep_core.history.rows import CLUSTER, FLAG, cluster_signature
from sweep_core.safe.text import clean

if TYPE_CHECKING:  # imported where used: a DAG file's parse and most tasks need no pandas
    import pandas as pd

READ = frozenset({"OK", "PARTIAL"})  # a cluster status whose flags are known
PROBLEM = {"UNREACHABLE": "critical", "ERROR": "critical", "UNKNOWN": "warn"}
ORDER = {"critical": 0, "warn": 1, "info": 2}
COLUMNS = (
    "run_id",
    "window_end",
    "cluster",
    "status",
    "notes",
    "signature",
    "rule",
    "severity",
    "bucket",
    "job_id",
    "name",
    "message",
    "action",
)


@dataclass(frozen=True)
class Item:
    """One open thing in one sweep: a flag, or a cluster problem."""

    signature: str
    severity: str
    cluster: str
    text: str
    rule: str = ""  # the flag's rule ("" = a cluster problem)


@dataclass(frozen=True)
class Told:
    """An item as the digest tells it: how many sweeps in a row it has been open, since when."""

    item: Item
    streak: int
    since: dt.datetime

    def line(self) -> str:
        more = f" ({self.streak} sweeps in a row, open since {self.since:%Y-%m-%d %H:%M}Z)" if self.streak > 1 else ""
        return f"{self.item.severity.upper()} {self.item.text}{more}"


@dataclass
class Digest:
    """What one sweep tells people."""

    run_id: str
    window_end: dt.datetime
    first: bool = False
    new: list[Told] = field(default_factory=list)
    reminders: list[Told] = field(default_factory=list)
    resolved: list[Item] = field(default_factory=list)
    handoffs: list[str] = field(default_factory=list)
    off: list[str] = field(default_factory=list)  # "<cluster>: OFF: <handoff> needs <field> in <file>", first only
    backlog: list[str] = field(default_factory=list)  # "N cleanups blocked for > 24 h (…)", when it changed

    def empty(self) -> bool:
        return not (self.new or self.reminders or self.resolved or self.handoffs or self.off or self.backlog)


def _text(row: dict[str, Any]) -> str:
    if row["record"] == CLUSTER:
        notes = f": {row['notes']}" if isinstance(row.get("notes"), str) and row["notes"] else ""
        return clean(f"cluster {row['cluster']} {row['status']}{notes}", newlines=False)
    where = " ".join(str(row[k]) for k in ("cluster", "bucket", "job_id", "name") if isinstance(row.get(k), str))
    act = f" → {row['action']}" if isinstance(row.get("action"), str) and row["action"] else ""
    return clean(f"[{row['rule']}] {' '.join(where.split())}: {row['message']}{act}", newlines=False)


@dataclass
class Sweep:
    """One sweep's open items and which clusters it read."""

    window_end: dt.datetime
    items: dict[str, Item]
    read: set[str]
    seen: set[str]  # clusters it has a row for
    rules: frozenset[str] | None = None  # the rules it ran (None = every rule)


RulesOf = Callable[[str], "frozenset[str] | None"]  # run id -> the rules that run ran (None = every rule)


def sweeps_of(frame: pd.DataFrame, rules_of: RulesOf | None = None) -> list[Sweep]:
    """The history's flag and cluster rows, one Sweep per run (window end, run id), oldest first."""
    import pandas as pd

    out = []
    if frame.empty:
        return out
    for (end, run_id), rows in frame.groupby(["window_end", "run_id"], sort=True):
        items: dict[str, Item] = {}
        read, seen = set(), set()
        for row in rows.to_dict("records"):
            if row["record"] == CLUSTER:
                seen.add(row["cluster"])
                if row["status"] in READ:
                    read.add(row["cluster"])
                if row["status"] in PROBLEM:
                    sig = cluster_signature(row["cluster"], row["status"])
                    items[sig] = Item(sig, PROBLEM[row["status"]], row["cluster"], _text(row))
            elif row["record"] == FLAG and row["signature"] not in items:
                items[row["signature"]] = Item(
                    row["signature"], str(row["severity"]), row["cluster"], _text(row), str(row.get("rule") or "")
                )
        rules = rules_of(str(run_id)) if rules_of else None
        out.append(Sweep(pd.Timestamp(end).to_pydatetime(), items, read, seen, rules))
    return out


def _open_in(s: Sweep, item: Item) -> bool | None:
    """True/False: open or not in sweep ``s``; None: ``s`` could not tell (its cluster unread)."""
    if item.signature in s.items:
        return True
    if item.signature.startswith("cluster-"):
        return False if item.cluster in s.seen else None
    if s.rules is not None and item.rule not in s.rules:
        return None  # a rule that sweep did not run cannot have resolved it
    return False if item.cluster in s.read else None


def _streak(item: Item, cur: Sweep, earlier: Sequence[Sweep]) -> tuple[int, dt.datetime]:
    n, since = 1, cur.window_end
    for s in reversed(earlier):
        state = _open_in(s, item)
        if state is False:
            break
        if state:
            n, since = n + 1, s.window_end
    return n, since


def _tells_again(since: dt.datetime, prev: dt.datetime, cur: dt.datetime, cooldown: dt.timedelta) -> bool:
    """Whether a cooldown boundary (since + k * cooldown, k >= 1) falls in (prev, cur]."""
    step = cooldown.total_seconds()
    return math.floor((cur - since).total_seconds() / step) > math.floor((prev - since).total_seconds() / step)


def build_digest(
    current: pd.DataFrame,
    earlier: pd.DataFrame,
    *,
    run_id: str,
    cooldown_hours: float,
    handoffs: Iterable[str] = (),
    off: Mapping[str, Sequence[str]] | None = None,
    rules_of: RulesOf | None = None,
) -> Digest:
    """The digest of the sweep whose rows are ``current``, against the ``earlier`` sweeps' rows
    (``rules_of``: which rules each run ran, by its run id; None = every run ran every rule).
    ``off`` (cluster -> its ``OFF: <handoff> needs <field> in <file>`` lines) is told by the first
    sweep on record only: the run log's head and the Clusters table say it every sweep."""
    cur_sweeps, past = sweeps_of(current, rules_of), sweeps_of(earlier, rules_of)
    end = cur_sweeps[-1].window_end if cur_sweeps else dt.datetime.now(dt.UTC)
    cur = cur_sweeps[-1] if cur_sweeps else Sweep(end, {}, set(), set())
    digest = Digest(run_id, end, first=not past, handoffs=list(handoffs))
    if digest.first:
        digest.off = [clean(f"{c}: {line}", newlines=False) for c, lines in (off or {}).items() for line in lines]
    prev = past[-1] if past else None
    cooldown = dt.timedelta(hours=cooldown_hours)
    for item in sorted(cur.items.values(), key=lambda i: (ORDER.get(i.severity, 3), i.signature)):
        n, since = _streak(item, cur, past)
        if n == 1:
            digest.new.append(Told(item, n, since))
        elif prev is not None and _tells_again(since, prev.window_end, cur.window_end, cooldown):
            digest.reminders.append(Told(item, n, since))
    for item in _last_known_open(past):
        if item.signature not in cur.items and _open_in(cur, item) is False:
            digest.resolved.append(item)
    return digest


def _last_known_open(past: Sequence[Sweep]) -> list[Item]:
    """The items open in the latest earlier sweep that could tell (a sweep that could not read the
    cluster in between does not hide that a flag was open before it)."""
    latest: dict[str, Item] = {}
    for s in past:
        latest.update(s.items)
    out = []
    for _, item in sorted(latest.items()):
        for s in reversed(past):
            state = _open_in(s, item)
            if state is not None:
                if state:
                    out.append(item)
                break
    return out
