"""A job's metric series from the history: its ``point`` rows of every sweep (history.rows), merged by
step (a step read again, e.g. a log re-read after a restart, keeps the latest sweep's value), the
last ``bound`` points per metric (HISTORY_POINTS by default: the most a job's curve holds), oldest
first. What the Sweeps page draws a curve from and a rule can judge a trend by."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sweep_core.history.rows import POINT
from sweep_core.history.store import HistoryStore

HISTORY_POINTS = 2000  # points per metric per job a series read returns at most (the newest)
COLUMNS = ("run_id", "window_end", "cluster", "job_id", "metric", "step", "value")


def series_of(frame: Any, cluster: str, job_id: str, bound: int = HISTORY_POINTS) -> dict[str, list[tuple[int, float]]]:
    """metric -> [(step, value)] of one job from history rows (a frame of ``point`` rows, oldest sweep first)."""
    if frame is None or frame.empty or "metric" not in frame.columns:
        return {}
    mine = frame[(frame["record"] == POINT) & (frame["cluster"] == cluster) & (frame["job_id"] == job_id)]
    out: dict[str, dict[int, float]] = {}
    for metric, step, value in zip(mine["metric"], mine["step"], mine["value"], strict=True):
        if step is None or not math.isfinite(float(step)):
            continue
        out.setdefault(str(metric), {})[int(step)] = float(value)
    return {m: sorted(pts.items())[-bound:] for m, pts in sorted(out.items())}


def job_series(
    store: HistoryStore,
    cluster: str,
    job_id: str,
    *,
    metrics: Sequence[str] | None = None,
    bound: int = HISTORY_POINTS,
    notes: list[str] | None = None,
) -> dict[str, list[tuple[int, float]]]:
    """metric -> [(step, value)] of one job over every sweep the history holds (``metrics``: only
    these), the last ``bound`` points each."""
    frame = store.read(records=[POINT], columns=list(COLUMNS), notes=notes)
    got = series_of(frame, cluster, job_id, bound)
    return {m: v for m, v in got.items() if metrics is None or m in metrics}


SENT_POINTS = 2000  # points per series a job page sends at most (the curve's buckets: a min and a max each)
LOSS_LIKE = ("loss", "perplexity", "ppl", "grad_norm", "kl")  # columns drawn on a log scale by default


def downsample(points: Sequence[tuple[int, float]], limit: int = SENT_POINTS) -> list[tuple[int, float]]:
    """At most ``limit`` of ``points`` (step order) for drawing: the first and the LAST point exactly,
    between them each of ``(limit - 2) // 2`` buckets of equal step count gives its minimum and its
    maximum (in step order), so a spike or a dip survives the cut. Non-finite values are kept (a NaN
    breaks the line where it was); ``limit`` below 4 is taken as 4."""
    pts = list(points)
    limit = max(4, limit)
    if len(pts) <= limit:
        return pts
    inner, buckets = pts[1:-1], (limit - 2) // 2
    out = [pts[0]]
    for b in range(buckets):
        chunk = inner[b * len(inner) // buckets : (b + 1) * len(inner) // buckets]
        finite = [p for p in chunk if math.isfinite(p[1])]
        if not finite:
            out.extend(chunk[:1])
            continue
        lo, hi = min(finite, key=lambda p: p[1]), max(finite, key=lambda p: p[1])
        out.extend(sorted({lo, hi}))
    out.append(pts[-1])
    return out


def loss_like(metric: str) -> bool:
    """A column drawn on a log scale by default (a loss, a perplexity, a gradient norm, a KL)."""
    return any(word in metric.lower() for word in LOSS_LIKE)


def log_refusal(points: Sequence[tuple[int, float]]) -> str:
    """Why ``points`` cannot be drawn on a log scale ("" = they can): a value <= 0 has no logarithm."""
    bad = [(s, v) for s, v in points if math.isfinite(v) and v <= 0]
    if not bad:
        return ""
    step, value = bad[0]
    return f"log scale refused: {len(bad)} value(s) <= 0 (first {value:g} at step {step}); drawn linear"
