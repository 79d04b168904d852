"""The Sweeps page's plots over the sweeps: one Summary per sweep (jobs per bucket, open flags by
rule, quota per cluster, RL/SFT series) and server-side SVG line charts of them: round y ticks
over the whole range (a negative reward inside the canvas), the loss on a log scale (linear, said
so, when a value is <= 0), each line its own colour, dash and marker so overlapping lines stay
apart. Any sweep's rows summarize, whichever record kinds or columns it lacks (a quiet sweep has no flag rows, an
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
PLOT_COLUMNS = (
    "window_end",
    "run_id",
    "run_log",
    "cluster",
    "bucket",
    "rule",
    "quota.used",
    "quota.soft",
    "quota.capacity",
    "run_series",
    "m.step",
    "m.reward",
    "m.loss",
)
SERIES_PLOTTED = 8  # the series seen in the last 3 sweeps, first by name


def _e(text: object) -> str:
    return html.escape(clean(str(text), newlines=False))


DASHES = ("", "6 3", "2 2", "8 3 2 3")  # a line's dash pattern: with its marker, told apart where lines overlap
MARKERS = ("circle", "square", "triangle", "diamond")
W, H, PAD, LEFT = 520, 220, 34, 46  # the chart, its margin, the wider left margin holding the y labels


def nice_ticks(lo: float, hi: float, count: int = 5, *, integer: bool = False) -> list[float]:
    """About ``count`` round values (1, 2 or 5 times a power of ten apart; whole numbers when
    ``integer``) spanning ``[lo, hi]``."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, count - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    step = max(step, 1.0) if integer else step
    first = math.floor(lo / step) * step
    ticks = [round(first, 12)]
    while ticks[-1] < hi - step * 1e-9:  # the last tick at or past ``hi``
        ticks.append(round(first + len(ticks) * step, 12))
    return ticks


def log_refusal(values: Sequence[float]) -> str:
    """Why ``values`` cannot go on a log scale ("" = they can): a value <= 0 has no logarithm."""
    bad = [v for v in values if v <= 0]
    return f"log scale refused: {len(bad)} value(s) <= 0 (first {bad[0]:g}); drawn linear" if bad else ""


def _marker(kind: str, cx: float, cy: float, colour: str) -> str:
    if kind == "square":
        return f'<rect x="{cx - 2.5:.1f}" y="{cy - 2.5:.1f}" width="5" height="5" fill="{colour}"/>'
    if kind == "triangle":
        return f'<path d="M{cx:.1f},{cy - 3.2:.1f}L{cx + 3:.1f},{cy + 2.4:.1f}L{cx - 3:.1f},{cy + 2.4:.1f}Z" fill="{colour}"/>'
    if kind == "diamond":
        return f'<path d="M{cx:.1f},{cy - 3.4:.1f}L{cx + 3:.1f},{cy:.1f}L{cx:.1f},{cy + 3.4:.1f}L{cx - 3:.1f},{cy:.1f}Z" fill="{colour}"/>'
    return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="2.6" fill="{colour}"/>'


def svg_lines(
    title: str,
    series: dict[str, Sequence[float]],
    xs: Sequence[str],
    limit: float | None = None,
    *,
    log: bool = False,
    integer: bool = False,
) -> str:
    """A line chart (one line per series, each its own colour, dash and marker, named in the legend)
    with round y ticks over the values' whole range (negative values included, drawn inside the
    canvas); ``log`` a log10 y axis (refused, said in the chart, when a value is <= 0);
    ``integer`` whole-number ticks (counts); ``limit`` draws a dashed line. The legend sits under
    the chart, three names a row, never over a line."""
    values = [v for s in series.values() for v in s if v is not None and math.isfinite(v)]
    refused = log_refusal([*values, *([limit] if limit is not None else [])]) if log else ""
    log = log and not refused and bool(values)
    span = [*values, *([limit] if limit is not None else [])]
    if log:
        lo, hi = math.floor(math.log10(min(span))), math.ceil(math.log10(max(span)))
        hi = hi if hi > lo else lo + 1
        ticks = [float(e) for e in range(lo, hi + 1)]
    else:
        lo, hi = min([*span, 0.0]), max([*span, 0.0])
        hi = hi if hi > lo else lo + 1
        ticks = nice_ticks(lo, hi, integer=integer)
        lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])
    n = max(len(xs), 2)
    x = lambda i: LEFT + i * (W - LEFT - PAD) / (n - 1)  # noqa: E731
    scaled = lambda v: math.log10(v) if log else v  # noqa: E731
    y = lambda v: H - PAD - (scaled(v) - lo) / (hi - lo) * (H - 2 * PAD)  # noqa: E731
    label = lambda t: f"1e{int(t)}" if log and abs(t) > 3 else (f"{10**t:g}" if log else f"{t:.4g}")  # noqa: E731
    rows = -(-len(series) // 3)
    parts = [
        f'<svg class="plot" width="{W}" height="{H + 14 * rows + 4}" role="img" aria-label="{_e(title)}"'
        f' data-lo="{lo:g}" data-hi="{hi:g}" data-scale="{"log" if log else "linear"}">',
        f'<text x="{LEFT}" y="16" font-weight="bold">{_e(title)}{" (log scale)" if log else ""}</text>',
    ]
    for t in ticks:
        ty = H - PAD - (t - lo) / (hi - lo) * (H - 2 * PAD)
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{ty:.1f}" x2="{W - PAD}" y2="{ty:.1f}" '
            f'stroke="{"#888" if t == 0 and not log else "#e4e4e4"}"/>'
            f'<text class="ytick" x="{LEFT - 4}" y="{ty + 3:.1f}" font-size="10" text-anchor="end">'
            f"{label(t)}</text>"
        )
    if refused:
        parts.append(f'<text class="refused" x="{LEFT}" y="28" font-size="10" fill="#9a6700">{_e(refused)}</text>')
    if limit is not None and (not log or limit > 0):
        parts.append(
            f'<line x1="{LEFT}" y1="{y(limit):.1f}" x2="{W - PAD}" y2="{y(limit):.1f}" stroke="#cf222e" '
            f'stroke-dasharray="4 3"/><text x="{W - PAD - 60}" y="{y(limit) - 3:.1f}" font-size="10">soft limit</text>'
        )
    for k, (name, vals) in enumerate(sorted(series.items())):
        drawn = [(x(i), y(v)) for i, v in enumerate(vals) if v is not None and math.isfinite(v) and (not log or v > 0)]
        colour, dash, mark = COLOURS[k % len(COLOURS)], DASHES[k % len(DASHES)], MARKERS[k % len(MARKERS)]
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in drawn)
        parts.append(
            f'<polyline class="series" data-name="{_e(name)}" fill="none" stroke="{colour}" stroke-width="2"'
            f'{dashed} points="{pts}"/>'
        )
        parts.extend(_marker(mark, a, b, colour) for a, b in drawn)
        lx, ly = LEFT + 160 * (k % 3), H + 10 + 14 * (k // 3)
        parts.append(
            f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 16}" y2="{ly - 4}" stroke="{colour}" '
            f'stroke-width="2"{dashed}/>{_marker(mark, lx + 8, ly - 4, colour)}'
            f'<text class="legend" x="{lx + 20}" y="{ly}" font-size="11" fill="{colour}">{_e(name[:24])}</text>'
        )
    if xs:
        parts.append(f'<text x="{LEFT}" y="{H - 8}" font-size="10">{_e(xs[0])}</text>')
        parts.append(f'<text x="{W - PAD - 90}" y="{H - 8}" font-size="10">{_e(xs[-1])}</text>')
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
        out.append(
            Summary(
                pd.Timestamp(end),
                _counts(jobs, "bucket"),
                _counts(flags, "rule"),
                quota,
                _series(jobs),
                _first(rows, "run_id"),
                _first(rows, "run_log"),
            )
        )
    return out


def plots(sums: Sequence[Summary]) -> str:
    """Every plot of the page over ``sums`` (oldest first)."""
    xs = [s.window_end.strftime("%m-%d %H:%M") for s in sums]
    buckets = sorted({b for s in sums for b in s.buckets})
    rules = sorted({r for s in sums for r in s.rules})
    out = [
        svg_lines(
            "jobs per bucket per sweep",
            {b: [float(s.buckets.get(b, 0)) for s in sums] for b in buckets},
            xs,
            integer=True,
        ),
        svg_lines("open flags by rule", {r: [float(s.rules.get(r, 0)) for s in sums] for r in rules}, xs, integer=True),
    ]
    recent = sorted({n for s in sums[-3:] for n in s.series})[:SERIES_PLOTTED]
    for metric in ("step", "reward", "loss"):
        lines = {n: [s.series.get(n, {}).get(metric, math.nan) for s in sums] for n in recent}
        if any(not math.isnan(v) for vals in lines.values() for v in vals):
            out.append(
                svg_lines(f"RL/SFT series: {metric} across sweeps and chain links", lines, xs, log=metric == "loss")
            )
    for cluster in sorted({c for s in sums for c in s.quota}):
        used = [s.quota[cluster][0] if cluster in s.quota else math.nan for s in sums]
        limits = [s.quota[cluster][1] for s in sums if cluster in s.quota and s.quota[cluster][1] is not None]
        out.append(svg_lines(f"{cluster}: quota/inodes used", {"used": used}, xs, limits[-1] if limits else None))
    return "".join(out)
