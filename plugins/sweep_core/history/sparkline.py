"""The small curve beside each job row of the Sweeps page: its main column (reward for RL, loss for
SFT, done/total for Eval and Datagen: ``openmetrics.MAIN_METRIC``) over the sweeps the history
holds, as a tiny inline SVG. RL and SFT curves are drawn from the ``point`` rows (value by step,
a step read again keeps the latest sweep's value); a job without points, and every Eval or Datagen
job, from its ``job`` rows (one value per sweep). Every job of a page is drawn from ONE pass over
the frames already read (:func:`spark_points`), never a read per job. A job with fewer than two
readable values shows "no series", never an empty box.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sweep_core.history.openmetrics import MAIN_METRIC, main_metric
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


def thin(points: Sequence[tuple[float, float]], limit: int = SPARK_POINTS) -> Points:
    """At most ``limit`` points: the first and the last exactly, and per bucket of equal count its
    minimum and maximum in order, so a dip or a spike survives the cut."""
    pts = list(points)
    limit = max(4, limit)
    if len(pts) <= limit:
        return pts
    inner, buckets = pts[1:-1], (limit - 2) // 2
    out = [pts[0]]
    for b in range(buckets):
        chunk = inner[b * len(inner) // buckets : (b + 1) * len(inner) // buckets]
        if chunk:
            lo, hi = min(chunk, key=lambda p: p[1]), max(chunk, key=lambda p: p[1])
            out.extend(sorted({lo, hi}))
    out.append(pts[-1])
    return out


def _keys(frame: pd.DataFrame) -> pd.Series:
    return frame["cluster"].astype("string").fillna("") + "|" + frame["job_id"].astype("string").fillna("")


def spark_points(frames: Iterable[pd.DataFrame | None], jobs: pd.DataFrame) -> dict[Key, Points]:
    """(cluster, job_id) -> its curve for each job row of ``jobs`` (one page's), drawn from ``frames``
    (the sweeps' rows, oldest first: ``point`` rows and ``job`` rows with the main columns), thinned
    to SPARK_POINTS. Jobs with no readable value have no entry."""
    import pandas as pd

    if jobs.empty or "job_id" not in jobs:
        return {}
    bucket_of = dict(zip(_keys(jobs), jobs["bucket"].astype("string").fillna(""), strict=True))
    wanted = set(bucket_of)
    pts, rows = [], []
    for order, frame in enumerate(frames):
        if frame is None or frame.empty or "record" not in frame:
            continue
        mine = frame[_keys(frame).isin(wanted)]
        if "metric" in mine:
            p = mine[mine["record"] == POINT]
            if not p.empty:
                pts.append(p[["cluster", "job_id", "metric", "step", "value"]].assign(order=order))
        j = mine[mine["record"] == JOB]
        if not j.empty:
            rows.append(j.reindex(columns=["cluster", "job_id", "bucket", *spark_columns()]).assign(order=order))
    out: dict[Key, Points] = {}
    if pts:
        p = pd.concat(pts, ignore_index=True)
        p = p.assign(key=_keys(p))
        p = p[p["metric"].astype("string") == p["key"].map(lambda k: point_metric(bucket_of.get(k, "")) or "")]
        p = p[pd.to_numeric(p["step"], errors="coerce").notna()]
        p = p.sort_values(["order"], kind="stable").drop_duplicates(["key", "step"], keep="last")
        for key, grp in p.sort_values(["key", "step"], kind="stable").groupby("key", sort=False):
            got = [(float(s), float(v)) for s, v in zip(grp["step"], grp["value"], strict=True) if _finite(v)]
            if got:
                out[_split(str(key))] = thin(got)
    if rows:
        r = pd.concat(rows, ignore_index=True)
        r = r.astype(object).where(r.notna(), None)
        per_job: dict[Key, Points] = {}
        for row in r.to_dict("records"):
            key = (str(row["cluster"]), str(row["job_id"]))
            if key in out:
                continue
            main = main_metric({**row, "bucket": bucket_of.get(f"{key[0]}|{key[1]}", "")})
            if main is not None:
                per_job.setdefault(key, []).append((float(row["order"]), main[1]))
        out.update({k: thin(v) for k, v in per_job.items()})
    return out


def _finite(v: object) -> bool:
    try:
        return math.isfinite(float(v))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def _split(key: str) -> Key:
    cluster, _, job_id = key.partition("|")
    return cluster, job_id


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
    line = " ".join(f"{a:.1f},{b:.1f}" for a, b in coords)
    lx, ly = coords[-1]
    title = html.escape(f"{what} {vs[0]:.4g} → {vs[-1]:.4g} (min {lo:.4g}, max {hi:.4g}, {len(pts)} points)".strip())
    return (
        f'<svg class="spark" width="{W}" height="{H}" viewBox="0 0 {W} {H}" data-last="{vs[-1]:.6g}" '
        f'data-min="{lo:.6g}" data-max="{hi:.6g}" data-n="{len(pts)}" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        f'<polyline fill="none" stroke="#1f6feb" stroke-width="1.2" points="{line}"/>'
        f'<circle cx="{lx:.1f}" cy="{ly:.1f}" r="1.8" fill="#cf222e"/></svg>'
    )
