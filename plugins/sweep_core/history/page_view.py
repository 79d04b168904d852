"""What one request of the Sweeps page reads from the history, read-only (a page view never moves a
file aside): the latest sweep's cluster rows and one page of its job rows (filtered by text, flagged
jobs first in each bucket) with their flags, but not their log tails (:func:`job_tail` reads one
job's tail, on demand), narrowed to one cluster or one bucket (the cluster and bucket pages), with
each shown job's curve of its main column over the sweeps (history.sparkline, never a read per job);
and the earlier sweeps' plot summaries and reduced curve rows, each file read once and kept across
requests in a :class:`PageCache` that concurrent requests share under a lock. A sweep's run log is read from the
run-log store by its name (:func:`run_log_text`), never from a path a worker wrote down.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sweep_core.fanin.run_logs import RunLogStore, safe_name
from sweep_core.history.plots import PLOT_COLUMNS, Summary, summarize
from sweep_core.history.rows import CLUSTER, FLAG, JOB
from sweep_core.history.sparkline import SPARK_SWEEPS, Key, Points, file_curves, spark_columns, spark_points
from sweep_core.history.store import HistoryStore, SweepFile, read_file
from sweep_core.safe.text import clean

if TYPE_CHECKING:  # imported where used: Airflow loads this plugin's modules in every task process
    import pandas as pd

PER_PAGE, MAX_PER_PAGE = 200, 1000
TAIL_COLUMN = "tail"
SEARCHED = ("cluster", "bucket", "job_id", "name", "state", "job_flags")


@dataclass(frozen=True)
class Kept:
    """What the page keeps of one earlier sweep: its plot summary and, for the last SPARK_SWEEPS
    sweeps, its rows reduced for the job curves (history.sparkline.file_curves; None: not kept)."""

    summary: Summary | None
    curves: pd.DataFrame | None = None


class PageCache:
    """The earlier sweeps' summaries and curve rows by file name (a sweep's file changes only when it
    is re-run), shared by the api-server's request threads: every read and write holds the lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, Kept] = {}

    def kept(self, names: Sequence[str], load: Callable[[str, bool], Kept], curved: Sequence[str] = ()) -> list[Kept]:
        """What is kept of each of ``names`` (``load(name, with_curves)`` reads a missing one, or one of
        ``curved`` kept without its curves, outside the lock, ONE read per file); every other name is
        forgotten (pruned, moved aside, or now the latest), and the curves of a name no longer in
        ``curved`` are dropped."""
        want = set(curved)
        with self._lock:
            known = {n: k for n in names if (k := self._kept.get(n)) and (n not in want or k.curves is not None)}
        loaded = {n: load(n, n in want) for n in names if n not in known}
        with self._lock:
            self._kept.update(loaded)
            for gone in set(self._kept) - set(names):
                del self._kept[gone]
            for n, k in list(self._kept.items()):
                if n not in want and k.curves is not None:
                    self._kept[n] = Kept(k.summary)
        got = {**known, **loaded}
        return [got[n] for n in names]

    def summaries(self, names: Sequence[str], load: Callable[[str], Summary | None]) -> list[Summary]:
        """The summary of each of ``names`` (``load`` reads a missing one): :meth:`kept` without curves."""
        return [k.summary for k in self.kept(names, lambda n, _c: Kept(load(n))) if k.summary is not None]

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._kept)


@dataclass(frozen=True)
class PageQuery:
    """One page of the job rows: 1-based ``page`` of ``per`` rows matching the text ``q``, of one
    ``cluster`` (its cluster page) and one ``bucket`` (its bucket page) when given ("" = every one)."""

    page: int = 1
    per: int = PER_PAGE
    q: str = ""
    cluster: str = ""
    bucket: str = ""

    def bounded(self) -> PageQuery:
        """Within bounds: page >= 1, 1 <= per <= MAX_PER_PAGE, q, cluster, bucket one clean line of <= 200 chars."""
        line = lambda t: clean(t, newlines=False)[:200]  # noqa: E731
        return PageQuery(
            max(1, self.page), min(max(1, self.per), MAX_PER_PAGE), line(self.q), line(self.cluster), line(self.bucket)
        )

    def params(self, **change: object) -> dict[str, object]:
        """The query string's fields of this page (``change`` replacing some), an empty cluster or bucket left out."""
        got = {"page": self.page, "per": self.per, "q": self.q, "cluster": self.cluster, "bucket": self.bucket}
        return {k: v for k, v in {**got, **change}.items() if v != "" or k == "q"}


def _frame() -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame()


@dataclass
class PageView:
    """What the page shows: the latest sweep (its file name, run, window end), its cluster rows, one
    page of job rows with the flags of those jobs, and the earlier sweeps' summaries."""

    sweep: str = ""
    run_id: str = ""
    window_end: pd.Timestamp | None = None
    clusters: pd.DataFrame = field(default_factory=_frame)
    jobs: pd.DataFrame = field(default_factory=_frame)  # this page's rows
    flags: pd.DataFrame = field(default_factory=_frame)  # the flags of this page's jobs
    matched: int = 0  # job rows matching the query (all pages)
    total: int = 0  # job rows of the sweep
    query: PageQuery = field(default_factory=PageQuery)
    latest: Summary | None = None
    earlier: list[Summary] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    alerts: pd.DataFrame = field(default_factory=_frame)  # the sweep's flags of severity warn and above
    channels: int | None = None  # notify channels configured (None: not known to the page)
    # the acts standing permissions took lately (ledger.acts.standing_record); None: unread, why in standing_why
    standing: list[dict[str, str]] | None = field(default_factory=list)
    standing_why: str = ""
    spark: dict[Key, Points] = field(default_factory=dict)  # this page's jobs' curves (history.sparkline)

    @property
    def pages(self) -> int:
        return max(1, -(-self.matched // self.query.per))


def _columns_but_tail(path: object) -> list[str] | None:
    import pyarrow.parquet as pq

    try:
        with path.open("rb") as fh:  # type: ignore[attr-defined]
            return [c for c in pq.read_schema(fh).names if c != TAIL_COLUMN]
    except Exception:  # noqa: BLE001 (unreadable: read_file says why, read-only)
        return None


def _keys(frame: pd.DataFrame) -> pd.Series:
    return frame["cluster"].astype("string").fillna("") + "|" + frame["job_id"].astype("string").fillna("")


def _ordered(jobs: pd.DataFrame, flags: pd.DataFrame) -> pd.DataFrame:
    """Jobs by bucket, flagged ones first, then cluster and job id."""
    if jobs.empty:
        return jobs
    import pandas as pd

    flagged = set(_keys(flags)) if not flags.empty and "job_id" in flags else set()
    keys = pd.DataFrame(
        {
            "bucket": jobs["bucket"].astype("string").fillna("") if "bucket" in jobs else "",
            "quiet": ~_keys(jobs).isin(flagged),
            "cluster": jobs["cluster"].astype("string").fillna(""),
            "job_id": jobs["job_id"].astype("string").fillna(""),
        },
        index=jobs.index,
    )
    return jobs.loc[keys.sort_values(["bucket", "quiet", "cluster", "job_id"], kind="stable").index]


def _matching(jobs: pd.DataFrame, flags: pd.DataFrame, q: str) -> pd.DataFrame:
    """The jobs whose cluster, bucket, id, name, state, flag rules or flag messages hold ``q``."""
    if not q or jobs.empty:
        return jobs
    import pandas as pd

    hay = pd.Series("", index=jobs.index, dtype="string")
    for col in SEARCHED:
        if col in jobs:
            hay = hay + " " + jobs[col].astype("string").fillna("")
    if not flags.empty and "message" in flags:
        said = flags.assign(key=_keys(flags))
        by_job = said.groupby("key")["message"].apply(lambda m: " ".join(m.astype("string").fillna("")))
        hay = hay + " " + _keys(jobs).map(by_job).fillna("").astype("string")
    return jobs[hay.str.lower().str.contains(q.lower(), regex=False)]


ALERT_SEVERITIES = ("critical", "warn")


def alerts_of(flags: pd.DataFrame) -> pd.DataFrame:
    """The flags of severity warn and above, critical first, then cluster and job."""
    if flags.empty or "severity" not in flags:
        return flags.iloc[0:0]
    got = flags[flags["severity"].astype("string").isin(ALERT_SEVERITIES)]
    rank = got["severity"].astype("string").map({s: i for i, s in enumerate(ALERT_SEVERITIES)})
    keys = [c for c in ("cluster", "job_id") if c in got]
    return got.assign(_rank=rank).sort_values(["_rank", *keys], kind="stable").drop(columns="_rank")


def load_view(store: HistoryStore, cache: PageCache, query: PageQuery = PageQuery()) -> PageView:
    """The page's data for ``query``: read-only, never the log tails, earlier summaries cached."""
    query = query.bounded()
    view = PageView(query=query)
    files = store.files(view.notes, read_only=True)
    if not files:
        return view
    latest = files[-1]
    frame = read_file(latest.path, columns=_columns_but_tail(latest.path), notes=view.notes, read_only=True)
    by_name = {f.path.name: f for f in files[:-1]}

    def load(name: str, with_curves: bool) -> Kept:
        cols = list(dict.fromkeys([*PLOT_COLUMNS, *SPARK_READ])) if with_curves else PLOT_COLUMNS
        rows = read_file(by_name[name].path, columns=cols, notes=view.notes, read_only=True)
        sums = summarize(rows) if rows is not None else []
        return Kept(sums[0] if sums else None, file_curves(rows) if with_curves else None)

    kept = cache.kept(list(by_name), load, [f.path.name for f in files[-SPARK_SWEEPS:-1]])
    view.earlier = [k.summary for k in kept if k.summary is not None]
    curves = [k.curves for k in kept if k.curves is not None]
    view.sweep = latest.path.name
    if frame is None or frame.empty or "record" not in frame:
        return view
    sums = summarize(frame)
    view.latest = sums[-1] if sums else None
    view.run_id = str(frame["run_id"].iloc[0]) if "run_id" in frame else ""
    import pandas as pd

    view.window_end = pd.Timestamp(frame["window_end"].iloc[0]) if "window_end" in frame else None
    jobs, flags = frame[frame["record"] == JOB], frame[frame["record"] == FLAG]
    view.clusters = frame[frame["record"] == CLUSTER]
    view.alerts = alerts_of(flags)
    view.total = len(jobs)
    hits = _ordered(_matching(_narrowed(jobs, query), flags, query.q), flags)
    view.matched = len(hits)
    view.query = query = PageQuery(min(query.page, view.pages), query.per, query.q, query.cluster, query.bucket)
    start = (query.page - 1) * query.per
    view.jobs = hits.iloc[start : start + query.per]
    if not flags.empty and not view.jobs.empty:
        view.flags = flags[_keys(flags).isin(set(_keys(view.jobs)))]
    view.spark = spark_points([*curves, file_curves(frame)], view.jobs)
    return view


SPARK_READ = ("cluster", "job_id", "bucket", "metric", "step", "value", *spark_columns())


def _narrowed(jobs: pd.DataFrame, query: PageQuery) -> pd.DataFrame:
    """The jobs of ``query.cluster`` and ``query.bucket`` (each exact; "" = every one)."""
    for col, want in (("cluster", query.cluster), ("bucket", query.bucket)):
        if want and col in jobs:
            jobs = jobs[jobs[col].astype("string") == want]
    return jobs


LAST_OK_COLUMNS = ("record", "cluster", "status", "window_end")


def latest_and_earlier(
    store: HistoryStore, earlier: int, notes: list[str] | None = None
) -> tuple[pd.DataFrame | None, Iterator[pd.DataFrame | None]]:
    """The latest sweep's rows (no log tails) and, read lazily newest first, the cluster rows of at
    most ``earlier`` sweeps before it (for the last success of each cluster): read-only. Raises
    HistoryUnavailable when the store cannot be listed now."""
    files = store.files(notes, read_only=True)
    if not files:
        return None, iter(())
    latest = read_file(files[-1].path, columns=_columns_but_tail(files[-1].path), notes=notes, read_only=True)

    def older() -> Iterator[pd.DataFrame | None]:
        yield latest
        for f in reversed(files[-1 - earlier : -1]):
            yield read_file(f.path, records=(CLUSTER,), columns=LAST_OK_COLUMNS, notes=notes, read_only=True)

    return latest, older()


def job_tail(store: HistoryStore, sweep: str, cluster: str, job_id: str, notes: list[str] | None = None) -> str | None:
    """The log tail the sweep ``sweep`` (a file name of the store) kept for one job, controls
    stripped; "" when it kept none; None when there is no such sweep or job. Read-only."""
    found: SweepFile | None = next((f for f in store.files(notes, read_only=True) if f.path.name == sweep), None)
    if found is None:
        return None
    rows = read_file(
        found.path, records=(JOB,), columns=("cluster", "job_id", TAIL_COLUMN), notes=notes, read_only=True
    )
    if rows is None:
        return None
    hit = rows[(rows["cluster"] == cluster) & (rows["job_id"] == job_id)] if "cluster" in rows else rows.iloc[:0]
    if hit.empty:
        return None
    tail = hit[TAIL_COLUMN].iloc[0]
    return clean(tail) if isinstance(tail, str) else ""


def run_log_text(store: RunLogStore, name: str) -> str | None:
    """The run log ``name`` of the run-log store as text, controls stripped; None when the name is
    not one file of the store (a folder part, ``..``, a hidden or non-``.md`` name) or it holds none."""
    if not safe_name(name):
        return None
    text = store.read(name)
    return None if text is None else clean(text)
