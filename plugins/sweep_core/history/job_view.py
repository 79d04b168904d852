"""What one job page shows, read-only from the history (a page view never moves a file aside): the
job's rows across sweeps (state, liveness, its metric columns, its flags), its metric series over
steps (history.series, merged by step over every sweep), each downsampled for drawing, and the marks
on the same STEP axis: a restart (the log's own resume line, kept in the row's ``restart_line`` at the
step it names, or the step read went back between two sweeps), a relaunch (the row's
``m.relaunched`` changed, or a relaunch act), each flag raised and each act taken (the ledger's, read
by the caller). A mark is put at the step the job was at when it happened: the step of the latest
sweep of the job at or before that time (its first sweep's for an earlier act). One step axis
because that is how a person reads a training curve ("it collapsed at step 300, right after the
relaunch"); the table of rows gives each sweep's time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sweep_core.history.job_cache import FilePart, JobCache
from sweep_core.history.rows import FLAG, JOB, METRIC_PREFIX, POINT, RESTART_LINE, RESTART_STEP
from sweep_core.history.series import HISTORY_POINTS, SENT_POINTS, downsample, log_refusal, loss_like
from sweep_core.history.store import HistoryStore, SweepFile, file_stamps, read_table
from sweep_core.ledger.acts import act_line
from sweep_core.safe.text import clean

ROW_COLUMNS = (
    "run_id",
    "window_end",
    "cluster",
    "job_id",
    "name",
    "bucket",
    "state",
    "elapsed",
    "minutes_since_output",
    "stale",
    "job_flags",
    "run_series",
    RESTART_LINE,
    RESTART_STEP,
)
FLAG_COLUMNS = ("run_id", "window_end", "cluster", "job_id", "rule", "severity", "message", "action")
POINT_COLUMNS = ("run_id", "window_end", "cluster", "job_id", "metric", "step", "value")
MAX_ROWS = 500  # sweeps of the job the table shows (the newest)
FIRST = ("reward", "loss", "pass_rate", "result_count")  # the main columns' curves come first
NOT_DRAWN = frozenset({"max_steps"})  # a total, not a curve (the table shows it)


@dataclass(frozen=True)
class Mark:
    """One thing on the step axis: ``kind`` restart | relaunch | flag | act, at ``step`` (None: no
    step known for it), when ``at`` (ISO), what ``label`` says."""

    kind: str
    step: int | None
    at: str
    label: str


@dataclass
class Curve:
    """One metric's series: every point the history holds (``points``), those sent for drawing
    (``sent``, downsampled), whether it opens on a log scale and, when it cannot, why."""

    metric: str
    points: list[tuple[int, float]]
    sent: list[tuple[int, float]]
    log: bool = False
    log_refusal: str = ""


@dataclass
class JobView:
    """One job's page: its rows across sweeps (oldest first), curves, marks, liveness, notes."""

    cluster: str
    job_id: str
    name: str = ""
    bucket: str = ""
    rows: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)  # the m.<name> columns the rows hold (numbers)
    curves: list[Curve] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.rows)

    def latest(self, metric: str) -> float | None:
        """The newest sweep's value of ``metric`` (its row's ``m.<metric>``), None when not read."""
        for row in reversed(self.rows):
            v = row.get(METRIC_PREFIX + metric)
            if isinstance(v, int | float) and not isinstance(v, bool) and not math.isnan(v):
                return float(v)
        return None

    def liveness(self) -> tuple[float | None, str]:
        """The last output's age in minutes as the newest sweep read it, and that sweep's window end."""
        if not self.rows:
            return None, ""
        row = self.rows[-1]
        mins = row.get("minutes_since_output")
        ok = isinstance(mins, int | float) and not isinstance(mins, bool) and not math.isnan(mins)
        return (float(mins) if ok else None), str(row.get("window_end") or "")


def _iso(value: object) -> str:
    """A time as ISO text in UTC (``Z`` or an offset alike); "" when it is none or not a time."""
    import pandas as pd

    try:
        ts = pd.Timestamp(value) if value is not None and value != "" else pd.NaT
    except (TypeError, ValueError):
        return ""
    if pd.isna(ts):
        return ""
    return (ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")).isoformat()


def _num(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


NOTE_COLUMNS = ("m.relaunched",)  # text columns the marks read (the other m.* text, e.g. m.series, is not read)


PART_DROPPED = frozenset({"record", "rule", "severity", "message", "action", "metric", "step", "value"})


def _pick(schema: Any) -> list[str]:
    """The columns a job page reads of one file, from its own schema: its rows', flags', points' and
    NUMBER m.* columns (no log tail, no series JSON)."""
    import pyarrow as pa

    wanted = {*ROW_COLUMNS, *FLAG_COLUMNS, *POINT_COLUMNS, *NOTE_COLUMNS}
    number = lambda t: pa.types.is_floating(t) or pa.types.is_integer(t)  # noqa: E731
    return [f.name for f in schema if f.name in wanted or (f.name.startswith(METRIC_PREFIX) and number(f.type))]


def file_part(sweep: SweepFile, cluster: str, job_id: str) -> FilePart:
    """What the file of ``sweep`` holds of the job, read-only (only its rows, filtered before any
    pandas, in Arrow; no log tails; ONE read of the file): its job rows, flag rows and points per
    metric (a step that is not a finite number dropped, as series_of does); the note when the file
    cannot be used."""
    import numpy as np
    import pyarrow.compute as pc

    notes: list[str] = []
    mine = read_table(sweep.path, pick=_pick, notes=notes, where={"cluster": cluster, "job_id": job_id})
    if mine is None or mine.num_rows == 0:
        return FilePart(note="; ".join(notes))
    kind = mine["record"]
    jobs = mine.filter(pc.equal(kind, JOB))
    jobs = jobs.select([c for c in jobs.column_names if c not in PART_DROPPED]).to_pylist()
    flags = mine.filter(pc.equal(kind, FLAG))
    flags = flags.select([c for c in FLAG_COLUMNS if c in flags.column_names]).to_pylist()
    pts = mine.filter(pc.equal(kind, POINT))
    points = []
    if pts.num_rows and {"metric", "step", "value"} <= set(pts.column_names):
        steps = pts["step"].cast("float64").to_numpy()  # a null step as NaN: dropped below
        values = pts["value"].cast("float64").to_numpy()
        metrics = np.array(pts["metric"].cast("string").fill_null("").to_pylist(), dtype=object)
        ok = np.isfinite(steps)
        for metric in sorted(set(metrics[ok])):
            at = ok & (metrics == metric)
            points.append((str(metric), steps[at].astype(np.int64), values[at].copy()))
    return FilePart(tuple(jobs), tuple(flags), tuple(points), "; ".join(notes))


def merged_series(parts: Sequence[FilePart], bound: int) -> dict[str, list[tuple[int, float]]]:
    """metric -> [(step, value)] over ``parts`` (oldest sweep first): a step read again keeps the
    latest read's value (history.series.series_of), sorted by step, the last ``bound`` each."""
    import numpy as np

    by: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for part in parts:
        for metric, steps, values in part.points:
            by.setdefault(metric, []).append((steps, values))
    out: dict[str, list[tuple[int, float]]] = {}
    for metric in sorted(by):
        steps = np.concatenate([s for s, _ in by[metric]])[::-1]  # newest read first: unique keeps it
        values = np.concatenate([v for _, v in by[metric]])[::-1]
        uniq, first = np.unique(steps, return_index=True)
        out[metric] = list(zip(uniq[-bound:].tolist(), values[first][-bound:].tolist(), strict=True))
    return out


def read_parts(
    store: HistoryStore,
    cluster: str,
    job_id: str,
    notes: list[str],
    cache: JobCache | None = None,
    budget: float | None = None,
) -> list[FilePart]:
    """What every sweep file holds of the job, oldest first, read-only: from ``cache`` the files it
    has already read at their current stamp, the others read now, newest first, for at most about
    ``budget`` seconds (None: all); each unusable file noted, and the files left unread said."""
    files = store.files(notes, read_only=True)
    cache = cache if cache is not None else JobCache(bound=0)  # nothing kept: every file read
    parts, unread = cache.parts(
        (cluster, job_id), files, file_stamps(store, files), lambda f: file_part(f, cluster, job_id), budget
    )
    notes.extend(p.note for p in parts if p.note)
    if unread:
        notes.append(
            f"{len(unread)} of the {len(files)} sweep files of the history are not read yet (this "
            f"request's {budget:g} s of reading spent, newest first; the oldest left unread ends "
            f"{unread[0][:16]}, the newest {unread[-1][:16]}): its curves and rows before them are "
            "missing; reload the page to read on"
        )
    return parts


def _step_at(rows: Sequence[dict[str, Any]], at: str) -> int | None:
    """The step of the latest row at or before ``at`` (ISO), else the first row's; None: no step read."""
    steps = [(str(r["window_end"]), _num(r.get(METRIC_PREFIX + "step"))) for r in rows]
    known = [(w, s) for w, s in steps if s is not None]
    if not known:
        return None
    before = [s for w, s in known if w <= at]
    return int(before[-1] if before else known[0][1])


def _marks(rows: list[dict[str, Any]], flags: Sequence[dict[str, Any]], acts: Sequence[dict[str, str]]) -> list[Mark]:
    """Restarts and relaunches from the rows, flags from the flag rows, acts from the ledger."""
    out: list[Mark] = []
    last_step: float | None = None
    last_relaunch = last_line = ""
    for r in rows:
        step, at = _num(r.get(METRIC_PREFIX + "step")), str(r["window_end"])
        went_back = step is not None and last_step is not None and step < last_step
        line = r.get(RESTART_LINE)
        said_now = isinstance(line, str) and bool(line) and line != last_line
        back = f"the step went back from {int(last_step)} to {int(step)}" if went_back else ""  # type: ignore[arg-type]
        if said_now:  # the log's own word: at the step its line names, else where the job was this sweep
            named = _num(r.get(RESTART_STEP))
            at_step = named if named is not None else step
            where = "" if named is not None else " (the line names no step: marked at this sweep's)"
            label = clean(f"restart: {back + '; ' if back else ''}the log says: {line}{where}", newlines=False)
            out.append(Mark("restart", None if at_step is None else int(at_step), at, label[:300]))
            last_line = str(line)
        elif went_back:
            out.append(Mark("restart", int(step), at, f"restart: {back}"))  # type: ignore[arg-type]
        last_step = step if step is not None else last_step
        said = r.get(METRIC_PREFIX + "relaunched")
        if isinstance(said, str) and said and said != last_relaunch:
            out.append(Mark("relaunch", None if step is None else int(step), at, clean(said, newlines=False)))
            last_relaunch = said
    for f in flags:
        at = _iso(f.get("window_end"))
        act = f" → {f['action']}" if isinstance(f.get("action"), str) and f["action"] else ""
        label = f"[{f.get('rule')}] {f.get('severity')}: {f.get('message')}{act}"
        out.append(Mark("flag", _step_at(rows, at), at, clean(label, newlines=False)[:300]))
    for a in acts:
        at, kind = _iso(a.get("at")), str(a.get("kind") or "act")
        said = " ".join(str(a.get(k) or "") for k in ("by", "result", "why") if a.get(k))
        when = "" if at else f" (its time {str(a.get('at') or '')[:40]!r} is not a time: at no step)"
        label = clean(f"{act_line(a) or f'{kind} {said}'}{when}".strip(), newlines=False)[:300]
        out.append(Mark("relaunch" if kind == "relaunch" else "act", _step_at(rows, at) if at else None, at, label))
    return sorted(out, key=lambda m: (m.at, m.kind))


def load_job_view(
    store: HistoryStore,
    cluster: str,
    job_id: str,
    *,
    acts: Sequence[dict[str, str]] = (),
    sent: int = SENT_POINTS,
    bound: int = HISTORY_POINTS * 10,
    cache: JobCache | None = None,
    budget: float | None = None,
) -> JobView:
    """The page of job ``job_id`` of ``cluster``: read-only; ``acts`` the ledger's acts of the job
    (ledger.acts.acts_of); each curve holds at most ``bound`` points and sends at most ``sent``;
    ``cache`` keeps what each file holds of the job across requests (None: every file read);
    ``budget``: about how many seconds this request may spend reading files (None: all of them)."""
    import pandas as pd

    view = JobView(cluster, job_id)
    parts = read_parts(store, cluster, job_id, view.notes, cache, budget)
    jobs = pd.DataFrame.from_records([r for p in parts for r in p.jobs])
    if jobs.empty:
        return view
    jobs = jobs.assign(window_end=jobs["window_end"].map(_iso)).sort_values("window_end", kind="stable")
    view.rows = jobs.tail(MAX_ROWS).to_dict("records")
    latest = view.rows[-1]
    view.name, view.bucket = str(latest.get("name") or ""), str(latest.get("bucket") or "")
    view.metrics = [
        c[len(METRIC_PREFIX) :]
        for c in jobs.columns
        if c.startswith(METRIC_PREFIX) and any(_num(v) is not None for v in jobs[c])
    ]
    got = merged_series(parts, bound)
    order = sorted(got, key=lambda m: (FIRST.index(m) if m in FIRST else len(FIRST), m))
    for metric, pts in ((m, got[m]) for m in order if m not in NOT_DRAWN):
        curve = Curve(metric, pts, downsample(pts, sent))
        curve.log_refusal = log_refusal(pts) if loss_like(metric) else ""
        curve.log = loss_like(metric) and not curve.log_refusal
        view.curves.append(curve)
    view.marks = _marks(view.rows, [f for p in parts for f in p.flags], acts)
    return view
