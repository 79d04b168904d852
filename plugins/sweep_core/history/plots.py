"""The Sweeps page's plots over the sweeps: one Summary per sweep (jobs per bucket, open flags by
rule, quota per cluster, RL/SFT series) and server-side SVG line charts of them. Any sweep's rows
summarize, whichever record kinds or columns it lacks (a quiet sweep has no flag rows, an
unreachable fleet no job rows): what is missing counts as none.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sweep_core.history.rows import CLUSTER, FLAG, JOB, METRIC_PREFIX
from sweep_core.safe.text import clean

if TYPE_CHECKING:  # imported where used: Airflow loads this plugin's modules in every task process
    import pandas as pd

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
PLOT_COLUMNS = ("window_end", "run_id", "run_log", "cluster", "bucket", "rule", "quota.used", "quota.soft", "quota.capacity", "run_series",
                "m.step", "m.reward", "m.loss")  # fmt: skip
SERIES_PLOTTED = 8  # the series seen in the last 3 sweeps, first by name


def _e(text: object) -> str:
    return html.escape(clean(str(text), newlines=False))


def svg_lines(title: str, series: dict[str, Sequence[float]], xs: Sequence[str], limit: float | None = None) -> str:
    """A small line chart (one line per series) with a legend; ``limit`` draws a dashed line."""
    w, h, pad = 520, 220, 34
    values = [v for s in series.values() for v in s if v is not None and not math.isnan(v)]
    top = max([*values, limit or 0, 1e-9])
    n = max(len(xs), 2)
    x = lambda i: pad + i * (w - 2 * pad) / (n - 1)  # noqa: E731
    y = lambda v: h - pad - v / top * (h - 2 * pad)  # noqa: E731
    parts = [f'<svg class="plot" width="{w}" height="{h}" role="img" aria-label="{_e(title)}">',
             f'<text x="{pad}" y="16" font-weight="bold">{_e(title)}</text>',
             f'<text x="2" y="{pad}" font-size="10">{top:.3g}</text><text x="2" y="{h - pad}" font-size="10">0</text>',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#888"/>']  # fmt: skip
    if limit is not None:
        parts.append(f'<line x1="{pad}" y1="{y(limit):.1f}" x2="{w - pad}" y2="{y(limit):.1f}" stroke="#cf222e" '
                     f'stroke-dasharray="4 3"/><text x="{w - pad - 60}" y="{y(limit) - 3:.1f}" font-size="10">soft limit</text>')  # fmt: skip
    for k, (name, vals) in enumerate(sorted(series.items())):
        pts = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(vals) if v is not None and not math.isnan(v))
        colour = COLOURS[k % len(COLOURS)]
        parts.append(f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="2" points="{pts}"/>')
        parts.append(f'<text x="{w - pad - 150}" y="{30 + 12 * k}" font-size="11" fill="{colour}">{_e(name)}</text>')
    if xs:
        parts.append(f'<text x="{pad}" y="{h - 8}" font-size="10">{_e(xs[0])}</text>')
        parts.append(f'<text x="{w - pad - 90}" y="{h - 8}" font-size="10">{_e(xs[-1])}</text>')
    return "".join(parts) + "</svg>"


@dataclass(frozen=True)
class Summary:
    """What the plots need of one sweep: jobs per bucket, flags per rule, quota per cluster; and
    what its row in the runs table shows (run id, run log)."""

    window_end: pd.Timestamp
    buckets: dict[str, int]
    rules: dict[str, int]
    quota: dict[str, tuple[float, float | None]]  # cluster -> (used, soft limit or capacity)
    series: dict[str, dict[str, float]] = field(default_factory=dict)  # RL/SFT series -> step, reward, loss
    run_id: str = ""
    run_log: str = ""  # the run log's name in the run-log store ("" when the sweep recorded none)


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not math.isnan(value) else None


def _counts(rows: pd.DataFrame, column: str) -> dict[str, int]:
    """Rows per value of ``column``; none when the sweep's file has no such column."""
    if column not in rows or rows.empty:
        return {}
    return {str(k): int(v) for k, v in rows.groupby(column).size().items()}


def _series(jobs: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per RL/SFT series: the furthest link's step, and its reward/loss (else the last one read)."""
    cols = [c for c in (METRIC_PREFIX + m for m in ("step", "reward", "loss")) if c in jobs]
    if "run_series" not in jobs or not cols or jobs.empty:
        return {}
    linked = jobs[jobs["run_series"].fillna("") != ""]
    if METRIC_PREFIX + "step" in linked:
        linked = linked.sort_values(METRIC_PREFIX + "step", na_position="first")
    last = linked.groupby("run_series")[cols].last()
    return {
        str(name): {c[len(METRIC_PREFIX) :]: float(v) for c, v in row.items() if _num(v) is not None}
        for name, row in last.iterrows()
    }


def _first(rows: pd.DataFrame, column: str) -> str:
    """The column's first non-empty text ("" when the sweep's file has none)."""
    if column not in rows:
        return ""
    got = rows[column].dropna().astype(str)
    got = got[got != ""]
    return str(got.iloc[0]) if not got.empty else ""


def summarize(frame: pd.DataFrame) -> list[Summary]:
    """One Summary per sweep in ``frame`` (rows of one or more sweeps), oldest first."""
    import pandas as pd

    out: list[Summary] = []
    if frame.empty or "window_end" not in frame or "record" not in frame:
        return out
    for end, rows in frame.groupby("window_end", sort=True):
        jobs, flags = rows[rows["record"] == JOB], rows[rows["record"] == FLAG]
        quota: dict[str, tuple[float, float | None]] = {}
        for c in rows[rows["record"] == CLUSTER].to_dict("records"):
            used = _num(c.get("quota.used"))
            if used is not None:
                quota[str(c["cluster"])] = (used, _num(c.get("quota.soft")) or _num(c.get("quota.capacity")))
        out.append(Summary(pd.Timestamp(end), _counts(jobs, "bucket"), _counts(flags, "rule"), quota, _series(jobs),
                           _first(rows, "run_id"), _first(rows, "run_log")))  # fmt: skip
    return out


def plots(sums: Sequence[Summary]) -> str:
    """Every plot of the page over ``sums`` (oldest first)."""
    xs = [s.window_end.strftime("%m-%d %H:%M") for s in sums]
    buckets = sorted({b for s in sums for b in s.buckets})
    rules = sorted({r for s in sums for r in s.rules})
    out = [
        svg_lines("jobs per bucket per sweep", {b: [float(s.buckets.get(b, 0)) for s in sums] for b in buckets}, xs),
        svg_lines("open flags by rule", {r: [float(s.rules.get(r, 0)) for s in sums] for r in rules}, xs),
    ]
    recent = sorted({n for s in sums[-3:] for n in s.series})[:SERIES_PLOTTED]
    for metric in ("step", "reward", "loss"):
        lines = {n: [s.series.get(n, {}).get(metric, math.nan) for s in sums] for n in recent}
        if any(not math.isnan(v) for vals in lines.values() for v in vals):
            out.append(svg_lines(f"RL/SFT series: {metric} across sweeps and chain links", lines, xs))
    for cluster in sorted({c for s in sums for c in s.quota}):
        used = [s.quota[cluster][0] if cluster in s.quota else math.nan for s in sums]
        limits = [s.quota[cluster][1] for s in sums if cluster in s.quota and s.quota[cluster][1] is not None]
        out.append(svg_lines(f"{cluster}: quota/inodes used", {"used": used}, xs, limits[-1] if limits else None))
    return "".join(out)
