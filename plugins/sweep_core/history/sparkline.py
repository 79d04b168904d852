"""The small curve beside each job row of the Sweeps page: its main column (reward for RL, loss for
SFT, done/total for Eval and Datagen: ``openmetrics.MAIN_METRIC``) over the sweeps the history
holds, as a tiny inline SVG. RL and SFT curves are drawn from the ``point`` rows (value by step,
a step read again keeps the latest sweep's value); a job without points, and every Eval or Datagen
job, from its ``job`` rows (one value per sweep). Each sweep file is reduced once, for all its jobs,
to at most PER_FILE points per job (:func:`file_curves`, kept by the page's cache for the earlier
sweeps); a page's curves are merged from those (:func:`spark_points`), never a read per job. A job
with fewer than two readable values shows "no series", never an empty box.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sweep_core.history.openmetrics import MAIN_METRIC
from sweep_core.history.rows import JOB, METRIC_PREFIX, POINT

if TYPE_CHECKING:  # imported where used: Airflow loads this plugin's modules in every task process
    import pandas as pd

SPARK_POINTS = 48  # vertices a sparkline keeps at most (first and last exact, min and max per bucket)
SPARK_SWEEPS = 56  # sweeps read for the curves (a week of 3-hourly sweeps); the latest is read anyway
W, H, PAD = 96, 22, 2
Key = tuple[str, str]  # (cluster, job_id)
Points = list[tuple[float, float]]  # (x: step or sweep index, value)


def point_metric(bucket: str) -> str | None:
    """The ``point`` metric whose steps draw the bucket's curve (reward, loss); None for done/total."""
    column = MAIN_METRIC.get(bucket, ("", ""))[0]
    return column if column and "/" not in column else None


def spark_columns() -> list[str]:
    """The job-row columns a curve reads (every bucket's main column)."""
    cols = [c for column, _ in MAIN_METRIC.values() for c in column.split("/")]
    return [METRIC_PREFIX + c for c in dict.fromkeys(cols)]


PER_FILE = 8  # points per job one sweep file's reduction keeps (first, last, min and max of 3 buckets)


def _keys(frame: pd.DataFrame) -> pd.Series:
    return frame["cluster"].astype("string").fillna("") + "|" + frame["job_id"].astype("string").fillna("")


def _split(key: str) -> Key:
    cluster, _, job_id = key.partition("|")
    return cluster, job_id


def thin_frame(df: pd.DataFrame, limit: int) -> pd.DataFrame:
    """Every ``key``'s rows of ``df`` (sorted by key, then x) thinned at once to at most ``limit``: the
    first and the last exact, and per bucket of equal count between them its minimum and maximum
    ``value`` in order, so a dip or a spike survives the cut."""
    if df.empty:
        return df
    df = df.reset_index(drop=True)
    g = df.groupby("key", sort=False)
    rank, n = g.cumcount(), g["x"].transform("size")
    small, edge = n <= max(4, limit), (rank == 0) | (rank == n - 1)
    inner = ~small & ~edge
    buckets = max(1, (max(4, limit) - 2) // 2)
    sub = df[inner].assign(b=(rank[inner] - 1) * buckets // (n[inner] - 2))
    by = sub.groupby(["key", "b"], sort=False)["value"]
    keep = set(by.idxmin()) | set(by.idxmax())
    return df[small | edge | df.index.isin(list(keep))]


def file_curves(frame: pd.DataFrame | None, per_file: int = PER_FILE) -> pd.DataFrame:
    """One sweep's file reduced to what the curves need, for every job in it: ``key``
    (cluster|job_id), ``kind`` ("p": a main-metric point at step ``x``; "s": the job row's main value
    this sweep, ``x`` unset), ``value``; the points thinned to ``per_file`` per job."""
    import numpy as np
    import pandas as pd

    cols = ["key", "kind", "x", "value"]
    if frame is None or frame.empty or "record" not in frame:
        return pd.DataFrame(columns=cols)
    parts = []
    if {"metric", "step", "value", "bucket"} <= set(frame.columns):
        p = frame[frame["record"] == POINT]
        metric_of = {b: m for b in MAIN_METRIC if (m := point_metric(b))}
        p = p[p["bucket"].astype("string").map(metric_of) == p["metric"].astype("string")]
        got = pd.DataFrame(
            {
                "key": _keys(p),
                "kind": "p",
                "x": pd.to_numeric(p["step"], errors="coerce"),
                "value": pd.to_numeric(p["value"], errors="coerce"),
            }
        )
        got = got[np.isfinite(got["x"]) & np.isfinite(got["value"])]
        got = got.drop_duplicates(["key", "x"], keep="last").sort_values(["key", "x"], kind="stable")
        parts.append(thin_frame(got, per_file))
    j = frame[frame["record"] == JOB]
    if not j.empty and "bucket" in j:
        value = pd.Series(np.nan, index=j.index, dtype="float64")
        num = lambda c: pd.to_numeric(j[METRIC_PREFIX + c], errors="coerce") if METRIC_PREFIX + c in j else np.nan  # noqa: E731
        for bucket, (column, _) in MAIN_METRIC.items():
            mine = j["bucket"].astype("string") == str(bucket)
            if "/" in column:
                done, total = (num(c) for c in column.split("/"))
                v = (done / total).where(total > 0) if isinstance(total, pd.Series) else np.nan
            else:
                v = num(column)
            value = value.mask(mine, v)
        got = pd.DataFrame({"key": _keys(j), "kind": "s", "x": np.nan, "value": value})
        parts.append(got[np.isfinite(got["value"])])
    parts = [x for x in parts if not x.empty]
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


def spark_points(reduced: Iterable[pd.DataFrame | None], jobs: pd.DataFrame) -> dict[Key, Points]:
    """(cluster, job_id) -> its curve for each job row of ``jobs`` (one page's), from the sweeps'
    :func:`file_curves` (oldest first): its points merged by step (a step read again keeps the later
    sweep's value), else its job rows' values one per sweep; thinned to SPARK_POINTS. Jobs with no
    readable value have no entry."""
    import pandas as pd

    if jobs.empty or "job_id" not in jobs:
        return {}
    wanted = set(_keys(jobs))
    parts = [f[f["key"].isin(wanted)].assign(order=i) for i, f in enumerate(reduced) if f is not None and not f.empty]
    parts = [x for x in parts if not x.empty]
    if not parts:
        return {}
    every = pd.concat(parts, ignore_index=True)
    p = every[every["kind"] == "p"].sort_values("order", kind="stable").drop_duplicates(["key", "x"], keep="last")
    p = thin_frame(p.sort_values(["key", "x"], kind="stable"), SPARK_POINTS)
    rows = every[(every["kind"] == "s") & ~every["key"].isin(set(p["key"]))]
    rows = thin_frame(
        rows.assign(x=rows["order"].astype("float64")).sort_values(["key", "x"], kind="stable"), SPARK_POINTS
    )
    out: dict[Key, Points] = {}
    for part in (p, rows):  # each sorted by key: one run of rows per job
        keys = part["key"].astype(object).to_numpy()
        xs, vs = part["x"].to_numpy(dtype="float64").tolist(), part["value"].to_numpy(dtype="float64").tolist()
        starts = [0, *(i + 1 for i in range(len(keys) - 1) if keys[i] != keys[i + 1])]
        for a, b in zip(starts, [*starts[1:], len(keys)], strict=True):
            if b > a:
                out[_split(str(keys[a]))] = list(zip(xs[a:b], vs[a:b], strict=True))
    return out


def sparkline(points: Sequence[tuple[float, float]] | None, what: str = "") -> str:
    """A W×H inline SVG of ``points`` (a polyline, the last point a dot) whose ``data-last`` is the
    last value and ``data-n`` the points drawn; ``<span class="nospark">no series</span>`` for
    fewer than two points. A flat curve is drawn mid-height, a line, not an empty box."""
    pts = [(x, v) for x, v in points or () if math.isfinite(x) and math.isfinite(v)]
    if len(pts) < 2:
        return '<span class="nospark">no series</span>'
    xs, vs = [x for x, _ in pts], [v for _, v in pts]
    x0, x1, lo, hi = min(xs), max(xs), min(vs), max(vs)
    sx = (W - 2 * PAD) / (x1 - x0) if x1 > x0 else 0.0
    sy = (H - 2 * PAD) / (hi - lo) if hi > lo else 0.0

    def at(x: float, v: float) -> tuple[float, float]:
        return PAD + (x - x0) * sx, (H / 2 if sy == 0 else H - PAD - (v - lo) * sy)

    coords = [at(x, v) for x, v in pts]
    line = " ".join(f"{a:.0f},{b:.0f}" for a, b in coords)  # whole pixels: 96×22 shows no finer
    lx, ly = coords[-1]
    title = html.escape(f"{what} {vs[0]:.4g} → {vs[-1]:.4g} (min {lo:.4g}, max {hi:.4g}, {len(pts)} points)".strip())
    return (
        f'<svg class="spark" width="{W}" height="{H}" viewBox="0 0 {W} {H}" data-last="{vs[-1]:.6g}" '
        f'data-min="{lo:.6g}" data-max="{hi:.6g}" data-n="{len(pts)}" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        f'<polyline fill="none" stroke="#1f6feb" stroke-width="1.2" points="{line}"/>'
        f'<circle cx="{lx:.1f}" cy="{ly:.1f}" r="1.8" fill="#cf222e"/></svg>'
    )
