"""The ledger's records: one entry per job ever seen (cluster, id, name, series, state, step/max,
last output, first/last seen, hand-offs given, the latest deep-dive verdict, its progress counter and since when it has not moved,
and samples of it for rates), the series' max steps, each cluster's last status, and their JSON
form (validated on load: a wrong shape is a LedgerError, never a guess).
"""

from __future__ import annotations

import functools
from dataclasses import Field, asdict, dataclass, field, fields
from typing import Any

LEDGER_VERSION = 1


class LedgerError(ValueError):
    """A stored ledger that cannot be used, with the reason."""


@dataclass
class LedgerEntry:
    """One job as the sweeps that knew its cluster last saw it."""

    cluster: str
    job_id: str
    name: str
    bucket: str = ""
    series: str = ""  # RL run series (earlier chain links share it); "" for other buckets
    state: str = ""  # base state (RUNNING, PENDING, COMPLETED, TIMEOUT, WEDGED, ...), or VANISHED / GONE / LEFT
    source: str = ""  # squeue | sacct | iris: where the last state came from
    step: int | None = None
    max_steps: int | None = None
    last_output: float | None = None  # log mtime, epoch seconds (remote clock)
    stale: bool = False
    first_seen: str = ""  # ISO window end of the first sweep that saw it
    last_seen: str = ""  # ISO window end of the latest sweep that saw it (a VANISHED job: listed it)
    since: str = ""  # ISO window end of the first sweep that saw its current state (WEDGED since when)
    last_run: str = ""  # run id of that sweep
    handoffs: dict[str, str] = field(default_factory=dict)  # hand-off kind -> run id that gave it
    # the cancel hand-off as the run that gave it wrote it (sweep_core.handoffs.cancel.authority):
    # run, flag_run, rule, action, flag_action, name, evidence, dry_run; sweep_cancel trusts only this
    cancel_handoff: dict[str, str] = field(default_factory=dict)
    deep_dive: str = ""  # the latest RL deep-dive verdict: "2026-12-03 14:05Z NO-KILL, watch reward_mean < 0.05"
    counter: str = ""  # the progress counter last read (step, chunks_done, results, done)
    counter_value: int | None = None
    counter_since: float | None = None  # remote clock of the sweep that first read that value (it last moved)
    counter_sweeps: int = 0  # consecutive sweeps that read that value (a new chain link continues its series')
    counter_from: str = ""  # "cluster|job_id" of the earlier link whose counter this link continued
    samples: list[list[float]] = field(default_factory=list)  # [remote clock, counter value] per sweep, oldest first
    acts: list[dict[str, str]] = field(default_factory=list)  # what was done/answered (sweep_core.ledger.acts)
    relaunch_series: str = ""  # the relaunch series it counts against (set on a relaunch's new id, across renames)
    # Its log read cursor (sweep_core.fanin.cursor): offset, ino, dev of the StdOut read up to there;
    # iris: ms, seq (the newest entry's time and the controller's entry id), sub, attempt, bytes
    cursor: dict[str, int | str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)  # the latest value of every numeric metric read
    log_lines: str = ""  # the last lines of its log read (the digest's excerpt)
    # Its metric streams' cursors (sweep_core.slurm.streams): path -> offset, ino, dev, mtime, head, step
    streams: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.cluster}|{self.job_id}"


_ENTRY_FIELDS = tuple(f.name for f in fields(LedgerEntry))


def _json_copy(v: Any) -> Any:
    """A copy of JSON-like data (dicts, lists, scalars): what deepcopy gives, a few times faster."""
    if isinstance(v, dict):
        return {k: _json_copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_copy(x) for x in v]
    return v


def entry_dict(e: LedgerEntry) -> dict[str, Any]:
    """The entry's JSON object (asdict's result: its fields are JSON data; not copied)."""
    return {name: getattr(e, name) for name in _ENTRY_FIELDS}


def clone_entry(e: LedgerEntry) -> LedgerEntry:
    """A copy of the entry sharing nothing mutable with it (deepcopy's result)."""
    return LedgerEntry(**{name: _json_copy(getattr(e, name)) for name in _ENTRY_FIELDS})


@dataclass
class SeriesMax:
    """The max steps of an RL series, from whichever link printed it, and whether a link COMPLETED at it."""

    max_steps: int
    source_job: str  # "cluster|job_id" of the link that printed it
    completed_at_max: str = ""  # "cluster|job_id" of a link that COMPLETED at max steps


@dataclass
class SeriesRelaunches:
    """A relaunch series' own count (never a sliding list): relaunches done, the last one's time,
    step ("" = no readable step) and job, and when "cap reached" was escalated ("" = not yet)."""

    count: int = 0
    last_at: str = ""
    last_step: str = ""
    last_job: str = ""
    escalated: str = ""


@dataclass
class WatchStreak:
    """The watch's own failed runs in a row (apart from the report sweep's ``failing``): their run
    ids, since when (the first failed run's window start, ISO UTC), when it was last told ("" = not
    yet this streak) and the watch's last success ("<run id> <time>")."""

    failing: list[str] = field(default_factory=list)
    since: str = ""
    told: str = ""
    last_success: str = ""


@dataclass
class Ledger:
    jobs: dict[str, LedgerEntry] = field(default_factory=dict)  # "cluster|job_id" -> entry
    series: dict[str, SeriesMax] = field(default_factory=dict)
    clusters: dict[str, str] = field(default_factory=dict)  # cluster -> status at the last sweep
    known: set[str] = field(default_factory=set)  # clusters some sweep KNEW (squeue validated)
    read_until: dict[str, str] = field(default_factory=dict)  # cluster -> latest window end whose sacct was read
    window_end: str = ""  # the latest window folded in (ISO)
    windows: list[str] = field(default_factory=list)  # every window end folded (ISO, sorted): backfills
    run_id: str = ""  # the run that folded last (a re-run of it folds against the ledger before it)
    told: dict[str, dict[str, str]] = field(default_factory=dict)  # run id -> channel -> hash of the digest sent
    failing: list[str] = field(default_factory=list)  # run ids of the sweep runs failed since the last success
    last_success: str = ""  # "<run id> <UTC time>" of the last sweep run that succeeded
    relaunches: dict[str, SeriesRelaunches] = field(default_factory=dict)  # relaunch series -> its count
    hold: str = ""  # set when the ledger was recovered with loss: why; acts wait for a person (ledger.hold)
    watch_streak: WatchStreak = field(default_factory=WatchStreak)  # the watch's failed runs (ledger.outcomes)
    # the changes the watch runs told since the last report sweep, for its run log (ledger.since_report):
    # {"at": window end ISO, "kind", "cluster", "line"}, oldest first
    since_report: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": LEDGER_VERSION,
            "window_end": self.window_end,
            "windows": list(self.windows),
            "run_id": self.run_id,
            "clusters": dict(self.clusters),
            "known": sorted(self.known),
            "read_until": dict(self.read_until),
            "series": {k: asdict(v) for k, v in self.series.items()},
            "jobs": {k: _json_copy(entry_dict(v)) for k, v in self.jobs.items()},
            "told": {k: dict(v) for k, v in self.told.items()},
            "failing": list(self.failing),
            "last_success": self.last_success,
            "relaunches": {k: asdict(v) for k, v in self.relaunches.items()},
            "hold": self.hold,
            "watch_streak": asdict(self.watch_streak),
            "since_report": [dict(r) for r in self.since_report],
        }

    @classmethod
    def from_dict(cls, raw: Any, lost: list[str] | None = None) -> Ledger:
        """The ledger in ``raw`` (decoded JSON); LedgerError naming the first bad part. With ``lost``,
        a bad job or series entry is left out and named there instead (the rest is kept)."""
        if not isinstance(raw, dict):
            raise LedgerError(f"top level is {type(raw).__name__}, not an object")
        if raw.get("version") != LEDGER_VERSION:
            raise LedgerError(f"version {str(raw.get('version'))[:20]!r} is not {LEDGER_VERSION}")
        for key in ("window_end", "run_id", "last_success", "hold"):
            if not isinstance(raw.get(key, ""), str):
                raise LedgerError(f"'{key}' is not a string")
        clusters = raw.get("clusters", {})
        if not isinstance(clusters, dict) or not all(isinstance(v, str) for v in clusters.values()):
            raise LedgerError("'clusters' is not an object of strings")
        read_until = raw.get("read_until", {})
        if not isinstance(read_until, dict) or not all(isinstance(v, str) for v in read_until.values()):
            raise LedgerError("'read_until' is not an object of strings")
        known, failing, windows = raw.get("known", []), raw.get("failing", []), raw.get("windows", [])
        for key, value in (("known", known), ("failing", failing), ("windows", windows)):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise LedgerError(f"'{key}' is not a list of strings")
        since_report = raw.get("since_report", [])
        if not isinstance(since_report, list) or not all(_strings(r) for r in since_report):
            raise LedgerError("'since_report' is not a list of objects of strings")
        told = _obj(raw, "told")
        if not all(isinstance(v, dict) and all(isinstance(x, str) for x in (*v, *v.values())) for v in told.values()):
            raise LedgerError("'told' is not an object of run id -> channel -> string")
        return cls(
            told={k: dict(v) for k, v in told.items()},
            failing=list(failing),
            last_success=raw.get("last_success", ""),
            known=set(known),
            jobs=_records(LedgerEntry, _obj(raw, "jobs"), lost, "job"),
            series=_records(SeriesMax, _obj(raw, "series"), lost, "series"),
            relaunches=_records(SeriesRelaunches, _obj(raw, "relaunches"), lost, "relaunch series"),
            clusters=dict(clusters),
            read_until=dict(read_until),
            window_end=raw.get("window_end", ""),
            windows=sorted(windows),
            run_id=raw.get("run_id", ""),
            hold=raw.get("hold", ""),
            watch_streak=_record(WatchStreak, "watch_streak", raw.get("watch_streak", {})),
            since_report=[dict(r) for r in since_report],
        )


def _records(cls: type, raw: dict[str, Any], lost: list[str] | None, what: str) -> dict[str, Any]:
    """Each entry of ``raw`` as ``cls``; a bad one raises, or with ``lost`` is left out and named."""
    out = {}
    for k, v in raw.items():
        try:
            out[k] = _record(cls, k, v)
        except LedgerError as exc:
            if lost is None:
                raise
            lost.append(f"{what} {exc}")
    return out


def _obj(raw: dict[str, Any], key: str) -> dict[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise LedgerError(f"'{key}' is not an object")
    return value


_TYPES: dict[str, tuple[type, ...]] = {
    "int | None": (int, type(None)),
    "float | None": (int, float, type(None)),
    "int": (int,),
    "bool": (bool,),
    "str": (str,),
    "list[str]": (list,),
    "dict[str, str]": (dict,),
    "list[list[float]]": (list,),
    "list[dict[str, str]]": (list,),
    "dict[str, int]": (dict,),
    "dict[str, float]": (dict,),
    "dict[str, int | str]": (dict,),
    "dict[str, dict[str, int]]": (dict,),
}


def _sample(x: Any) -> bool:
    number = lambda n: isinstance(n, int | float) and not isinstance(n, bool)  # noqa: E731
    return isinstance(x, list) and len(x) == 2 and all(map(number, x))


def _strings(x: Any) -> bool:
    return isinstance(x, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in x.items())


@functools.cache
def _checks(cls: type) -> tuple[tuple[Field[Any], tuple[type, ...], bool], ...]:
    """Each field of ``cls`` with the JSON types it may hold and whether its items are checked
    too (a list or an object; read once per class)."""
    return tuple((f, _TYPES[str(f.type)], _TYPES[str(f.type)] in ((list,), (dict,))) for f in fields(cls))


def _record(cls: type, key: str, value: Any) -> Any:
    """One entry of ``cls`` from its JSON object, every field type-checked."""
    if not isinstance(value, dict):
        raise LedgerError(f"entry {key[:80]!r} is not an object")
    kwargs = {}
    for f, ok, deep in _checks(cls):
        if f.name not in value:
            continue
        v = value[f.name]
        if not isinstance(v, ok) or (isinstance(v, bool) and bool not in ok):
            raise LedgerError(f"entry {key[:80]!r}: {f.name!r} is not {f.type}")
        if not (deep and v):  # a scalar, or an empty list or object: nothing inside to check
            kwargs[f.name] = v
            continue
        if f.type == "dict[str, str]" and not all(isinstance(x, str) for x in (*v, *v.values())):
            raise LedgerError(f"entry {key[:80]!r}: {f.name!r} is not an object of strings")
        if f.type in ("dict[str, int]", "dict[str, float]") and not all(
            isinstance(k, str)
            and isinstance(x, int if f.type == "dict[str, int]" else int | float)
            and not isinstance(x, bool)
            for k, x in v.items()
        ):
            raise LedgerError(f"entry {key[:80]!r}: {f.name!r} is not an object of numbers")
        if f.type == "list[str]" and not all(isinstance(x, str) for x in v):
            raise LedgerError(f"entry {key[:80]!r}: {f.name!r} is not a list of strings")
        if f.type == "dict[str, int | str]" and not all(
            isinstance(k, str) and isinstance(x, int | str) and not isinstance(x, bool) for k, x in v.items()
        ):
            raise LedgerError(f"entry {key[:80]!r}: {f.name!r} is not an object of numbers and strings")
        if f.type == "dict[str, dict[str, int]]" and not all(
            isinstance(k, str)
            and isinstance(x, dict)
            and all(isinstance(a, str) and isinstance(b, int) and not isinstance(b, bool) for a, b in x.items())
            for k, x in v.items()
        ):
            raise LedgerError(f"entry {key[:80]!r}: {f.name!r} is not an object of path -> cursor numbers")
        if f.type == "list[list[float]]" and not all(_sample(x) for x in v):
            raise LedgerError(f"entry {key[:80]!r}: {f.name!r} is not a list of [time, value] pairs")
        if f.type == "list[dict[str, str]]" and not all(_strings(x) for x in v):
            raise LedgerError(f"entry {key[:80]!r}: {f.name!r} is not a list of objects of strings")
        kwargs[f.name] = v
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field missing
        raise LedgerError(f"entry {key[:80]!r}: {exc}") from None
