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
