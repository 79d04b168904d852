"""Datagen metrics: chunks done/total from ``sacct -j <array id>`` (the gather's ``chunks:<id>``
record), and from the log tail (patterns under ``metrics.datagen`` in include/sweep.yaml):
``412 result.json`` -> result count; ``avg_turns=3.4`` -> avg turns; ``exceptions=12/412`` -> exc%.
A line that does not parse never raises: the metric is None (rendered "?") and ``problems`` says why.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from sweep_core.fanin.metrics.common import Extracted, as_count, as_number, as_reading
from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.patterns import last_match
from sweep_core.records.models import base_state_of


def expand_array_tasks(job_id: str) -> list[str]:
    """``123_[1-3,7]`` -> 123_1 123_2 123_3 123_7; ``123_4`` -> itself; ``%N`` throttles ignored."""
    m = re.fullmatch(r"(\d+)_\[([0-9,\-]+)(?:%\d+)?\]", job_id)
    if not m:
        return [job_id]
    base, ranges = m.groups()
    out = []
    for part in ranges.split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            out += [f"{base}_{i}" for i in range(int(lo), int(hi) + 1)]
        elif part:
            out.append(f"{base}_{part}")
    return out


def chunk_counts(sacct_lines: Sequence[tuple[str, str]]) -> tuple[int, int, dict[str, int]]:
    """(done, total, per-state counts) of one array from ``sacct -j <array>`` (JobID, State) rows
    (read by slurm.parse.read_sacct_jobs); steps are skipped, ``CANCELLED by 1001`` is CANCELLED."""
    states: Counter[str] = Counter()
    for job_id, state in sacct_lines:
        if "." in job_id:
            continue
        states[base_state_of(state)] += len(expand_array_tasks(job_id))
    return states.get("COMPLETED", 0), sum(states.values()), dict(states)


def extract_datagen(tail: str, cfg: MetricsConfig, chunks: tuple[int, int] | None) -> Extracted:
    """Chunks done/total, result.json count, avg_turns (realness gate), exception %."""
    out = Extracted()
    res = last_match(cfg.dg_results, tail)
    turns = last_match(cfg.dg_turns, tail)
    exc = last_match(cfg.dg_exc, tail)
    exc_pct = None
    if exc:
        n, d = as_number(exc.group(1)), as_number(exc.group(2))
        exc_pct = 100.0 * n / d if n is not None and d and math.isfinite(n / d) else None
    out.values = {
        "chunks_done": chunks[0] if chunks else None,
        "chunks_total": chunks[1] if chunks else None,
        "results": as_count(res.group(1), "result.json count", out.problems) if res else None,
        "avg_turns": as_reading(turns.group(1), "avg_turns", out.problems) if turns else None,
        "exc_pct": exc_pct,
    }
    if chunks is None:
        out.problems.append("chunk counts unknown (not an array job, or sacct -j gave nothing)")
    for match, what in ((res, "result.json count"), (turns, "avg_turns")):
        if match is None:  # a line that did not read says so above
            out.problems.append(f"no {what} line in the log tail")
    return out
