"""What one job page shows, read-only from the history (a page view never moves a file aside): the
job's rows across sweeps (state, liveness, its metric columns, its flags), its metric series over
steps (history.series, merged by step over every sweep), each downsampled for drawing, and the marks
on the same STEP axis: a restart (the step read went back between two sweeps), a relaunch (the row's
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
from typing import TYPE_CHECKING, Any

from sweep_core.history.rows import FLAG, JOB, METRIC_PREFIX, POINT
from sweep_core.history.series import HISTORY_POINTS, SENT_POINTS, downsample, log_refusal, loss_like, series_of
from sweep_core.history.store import HistoryStore, read_file
from sweep_core.safe.text import clean

if TYPE_CHECKING:  # imported where used: Airflow loads this plugin's modules in every task process
    import pandas as pd

ROW_COLUMNS = ("run_id", "window_end", "cluster", "job_id", "name", "bucket", "state", "elapsed",
               "minutes_since_output", "stale", "job_flags", "run_series")  # fmt: skip
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


def _job_columns(path: object) -> list[str] | None:
    """The columns a job page reads of one file: its rows', flags', points' and NUMBER m.* columns
    (no log tail, no series JSON); None when the schema cannot be read (read_file says why)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    wanted = {*ROW_COLUMNS, *FLAG_COLUMNS, *POINT_COLUMNS, *NOTE_COLUMNS}
    try:
        with path.open("rb") as fh:  # type: ignore[attr-defined]
            schema = pq.read_schema(fh)
    except Exception:  # noqa: BLE001 (unreadable: read_file says why, read-only)
        return None
    number = lambda t: pa.types.is_floating(t) or pa.types.is_integer(t)  # noqa: E731
    return [f.name for f in schema if f.name in wanted or (f.name.startswith(METRIC_PREFIX) and number(f.type))]


def read_job(store: HistoryStore, cluster: str, job_id: str, notes: list[str]) -> tuple[pd.DataFrame, ...]:
    """The job's job, flag and point rows of every sweep, oldest first, read-only (only its rows,
    filtered before pandas; no log tails)."""
    import pandas as pd

    parts = []
    for f in store.files(notes, read_only=True):
        mine = read_file(f.path, records=(JOB, FLAG, POINT), columns=_job_columns(f.path), notes=notes,
                         read_only=True, where={"cluster": cluster, "job_id": job_id})  # fmt: skip
        if mine is not None and not mine.empty:
            parts.append(mine)
    if not parts:
        return pd.DataFrame(), pd.DataFrame(), pd.DataFrame()
    rows = pd.concat(parts, ignore_index=True)
    return tuple(rows[rows["record"] == kind] for kind in (JOB, FLAG, POINT))


def _step_at(rows: Sequence[dict[str, Any]], at: str) -> int | None:
    """The step of the latest row at or before ``at`` (ISO), else the first row's; None: no step read."""
    steps = [(str(r["window_end"]), _num(r.get(METRIC_PREFIX + "step"))) for r in rows]
    known = [(w, s) for w, s in steps if s is not None]
    if not known:
        return None
    before = [s for w, s in known if w <= at]
    return int(before[-1] if before else known[0][1])


def _marks(rows: list[dict[str, Any]], flags: pd.DataFrame, acts: Sequence[dict[str, str]]) -> list[Mark]:
    """Restarts and relaunches from the rows, flags from the flag rows, acts from the ledger."""
    out: list[Mark] = []
    last_step: float | None = None
    last_relaunch = ""
    for r in rows:
        step, at = _num(r.get(METRIC_PREFIX + "step")), str(r["window_end"])
        if step is not None and last_step is not None and step < last_step:
            out.append(
                Mark("restart", int(step), at, f"restart: the step went back from {int(last_step)} to {int(step)}")
            )
        last_step = step if step is not None else last_step
        said = r.get(METRIC_PREFIX + "relaunched")
        if isinstance(said, str) and said and said != last_relaunch:
            out.append(Mark("relaunch", None if step is None else int(step), at, clean(said, newlines=False)))
            last_relaunch = said
    for f in flags.to_dict("records") if not flags.empty else []:
        at = _iso(f.get("window_end"))
        act = f" → {f['action']}" if isinstance(f.get("action"), str) and f["action"] else ""
        label = f"[{f.get('rule')}] {f.get('severity')}: {f.get('message')}{act}"
        out.append(Mark("flag", _step_at(rows, at), at, clean(label, newlines=False)[:300]))
    for a in acts:
        at, kind = _iso(a.get("at")), str(a.get("kind") or "act")
        said = " ".join(str(a.get(k) or "") for k in ("by", "result", "why") if a.get(k))
        when = "" if at else f" (its time {str(a.get('at') or '')[:40]!r} is not a time: at no step)"
        label = clean(f"{kind} {said}{when}".strip(), newlines=False)[:300]
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
) -> JobView:
    """The page of job ``job_id`` of ``cluster``: read-only; ``acts`` the ledger's acts of the job
    (ledger.acts.acts_of); each curve holds at most ``bound`` points and sends at most ``sent``."""
    view = JobView(cluster, job_id)
    jobs, flags, points = read_job(store, cluster, job_id, view.notes)
    if jobs.empty:
        return view
    jobs = jobs.assign(window_end=jobs["window_end"].map(_iso)).sort_values("window_end", kind="stable")
    view.rows = jobs.tail(MAX_ROWS).to_dict("records")
    latest = view.rows[-1]
    view.name, view.bucket = str(latest.get("name") or ""), str(latest.get("bucket") or "")
    view.metrics = [c[len(METRIC_PREFIX) :] for c in jobs.columns if c.startswith(METRIC_PREFIX)
                    and any(_num(v) is not None for v in jobs[c])]  # fmt: skip
    got = series_of(points, cluster, job_id, bound)
    order = sorted(got, key=lambda m: (FIRST.index(m) if m in FIRST else len(FIRST), m))
    for metric, pts in ((m, got[m]) for m in order if m not in NOT_DRAWN):
        curve = Curve(metric, pts, downsample(pts, sent))
        curve.log_refusal = log_refusal(pts) if loss_like(metric) else ""
        curve.log = loss_like(metric) and not curve.log_refusal
        view.curves.append(curve)
    view.marks = _marks(view.rows, flags, acts)
    return view
