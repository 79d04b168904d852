"""A job's metric streams (``Job.streams``, read on the login node by programs/streams.py) turned
into its metric columns and its series, streams first, the console as the fallback.

- Each point's tag is mapped to a column by the vocabulary (``vocabulary.column_for``; an RL job's
  ``total`` is its ``max_steps``); a tag the vocabulary does not know is left out. Where several
  tags feed one column, the one with the most points wins (then the first by name).
- ``merge_streams``: the columns a stream holds replace the console's (their console problems go),
  the stream's step is the highest step any of its points was logged at; a NaN/inf latest value is
  ``?`` with the reason; ``metrics_from`` names the file(s) and which columns came from where (the
  row's Note); the rules' series (``Extracted.series``) comes from the streams when they hold a
  rule's column.
- ``bound_points``: the (step, value) points per column kept of this sweep's read (the streams', else
  the console series': each value at the step its own line printed, a value whose line gave no known
  step left out), at most ``gather.stream_points`` each, thinned evenly, the newest kept: the
  history's ``point`` rows (sweep_core.history.series).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from typing import Any

from sweep_core.fanin.metrics.common import Extracted
from sweep_core.fanin.metrics.vocabulary import column_for
from sweep_core.records.models import Job

COUNTS = ("step", "total", "max_steps")
# The login node's prefilter (programs/streams.py): a tag comes back only when it holds one of these
# (lower case). Every name the vocabulary maps holds one (tests/fanin/test_streams_merge.py checks
# names of every column); a vocabulary name without one needs its word here.
STREAM_WORDS: tuple[str, ...] = (
    *("step", "iter", "reward", "score", "grad", "gnorm", "entropy", "loss", "lr", "learning_rate"),
    *("tis", "is_ratio", "rollout_is"),
)
SERIES_KEYS = ("reward", "grad_norm", "entropy", "loss")  # the rule keys a stream can feed


def _col(tag: str, bucket: str) -> str | None:
    col = column_for(tag)
    return "max_steps" if col == "total" and bucket == "rl" else col


def stream_columns(streams: Iterable[dict[str, Any]], bucket: str) -> dict[str, dict[int, float]]:
    """column -> {step: value} of every readable stream's points (one tag per column)."""
    by_tag: dict[str, dict[str, dict[int, float]]] = {}
    for s in streams:
        for tag, step, value in s.get("points") or []:
            col = _col(str(tag), bucket)
            if col is not None:
                by_tag.setdefault(col, {}).setdefault(str(tag), {})[int(step)] = float(value)
    out: dict[str, dict[int, float]] = {}
    for col, tags in by_tag.items():
        best = sorted(tags.items(), key=lambda kv: (-len(kv[1]), kv[0]))[0]
        out[col] = best[1]
    return out


def _top_step(streams: Iterable[dict[str, Any]], bucket: str) -> int | None:
    """The highest step a mapped point of the streams was logged at."""
    steps = [int(st) for s in streams for tag, st, _ in s.get("points") or [] if _col(str(tag), bucket)]
    return max(steps) if steps else None


def _name(path: str) -> str:
    base = os.path.basename(path)
    return base if len(base) <= 40 else base[:39] + "…"


def thin(points: list[list[float]], bound: int) -> list[list[float]]:
    """At most ``bound`` points, halved evenly (the newest always kept)."""
    while len(points) > bound:
        points = points[::-1][::2][::-1]
    return points


def merge_streams(job: Job, ex: Extracted, bucket: str) -> list[str]:
    """The stream columns over the console's in ``ex`` (in place); the columns taken from the streams."""
    readable = [s for s in job.streams if "points" in s]
    cols = stream_columns(readable, bucket)
    top = _top_step(readable, bucket)
    taken: list[str] = []
    if top is not None or "step" in cols:
        logged = max(cols["step"].values()) if cols.get("step") else None
        step = max(int(x) for x in (top, logged) if x is not None and math.isfinite(x))
        ex.values["step"] = step
        taken.append("step")
    for col, pts in cols.items():
        if col == "step":
            continue
        at = max(pts)
        value = pts[at]
        if not math.isfinite(value):
            ex.values[col] = None
            ex.problems.append(f"{col} {value} at step {at} in the stream")
        elif col in COUNTS:
            ex.values[col] = int(value) if 0 <= value < 10**15 else None
        else:
            ex.values[col] = value
        taken.append(col)
    if not taken:
        return taken
    words = [re.compile(rf"\b{re.escape(k)}\b|\b{re.escape(k.replace('_', ' '))}\b") for k in taken]
    words += [re.compile(r"no known log format")]
    ex.problems = [p for p in ex.problems if " in the stream" in p or not any(w.search(p) for w in words)]
    files = ", ".join(dict.fromkeys(_name(s["path"]) for s in readable if s.get("points")))
    rest = [
        k
        for k in ("step", "max_steps", "total", "reward", "grad_norm", "entropy", "loss", "lr")
        if k not in taken and ex.values.get(k) is not None
    ]
    said = f"{files or 'stream'} (stream: {', '.join(taken)})" + (f"; console: {', '.join(rest)}" if rest else "")
    ex.values["metrics_from"] = said + (f"; {ex.values['metrics_from']}" if ex.values.get("metrics_from") else "")
    series = _series(cols)
    if series:
        ex.series = series
    return taken


def _series(cols: dict[str, dict[int, float]]) -> list[dict[str, float]]:
    """The rules' series from the stream columns: one dict per step, oldest first."""
    steps: dict[int, dict[str, float]] = {}
    for col in SERIES_KEYS:
        for step, value in (cols.get(col) or {}).items():
            steps.setdefault(step, {"step": float(step)})[col] = value
    return [steps[s] for s in sorted(steps)]


def stream_problems(job: Job) -> list[str]:
    """What the row says about streams that could not be read, or configured dirs without one."""
    out = [f"stream {s['error']}" for s in job.streams if "error" in s]
    for s in job.streams:
        out += [f"stream {_name(s.get('path', ''))}: {p}" for p in s.get("problems") or []]
    if job.stream_dirs and not job.streams:
        out.append(f"no metric stream in {job.stream_dirs[:200]}")
    return out


def say_source(job: Job, ex: Extracted, taken: list[str]) -> None:
    """``metrics_from`` (the row's Note): the console when no stream gave a column (and why), and
    any stream that could not be read."""
    problems = "; ".join(stream_problems(job))
    if not taken:
        before = ex.values.get("metrics_from")
        ex.values["metrics_from"] = (
            "console" + (f" ({problems})" if problems else "") + (f"; {before}" if before else "")
        )
    elif problems:
        ex.values["metrics_from"] = f"{ex.values['metrics_from']}; {problems}"


NOT_CURVES = frozenset({"step", "max_steps", "total"})  # a series entry's step and the run's total


def bound_points(job: Job, ex: Extracted | None, bucket: str, bound: int) -> dict[str, list[list[float]]]:
    """(step, value) per column of this sweep's read: the streams', else the console series' points
    that carry their line's step (never one without: no index, no latest step). The run's total
    (``NOT_CURVES``), logged beside each step, is one number of the run, not a curve: no points."""
    cols = stream_columns([s for s in job.streams if "points" in s], bucket)
    if not cols and ex is not None:
        for point in ex.series:
            if "step" not in point:
                continue
            for k, v in point.items():
                if k not in NOT_CURVES:
                    cols.setdefault(k, {})[int(point["step"])] = float(v)
    return {
        c: thin([[float(s), v] for s, v in sorted(pts.items())], bound)
        for c, pts in sorted(cols.items())
        if c not in NOT_CURVES
    }
