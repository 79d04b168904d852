"""The metric history and log signatures of one RL job, from its log and its earlier chain-link
logs (bounded reads, newest link first as listed): the metric dicts through the sweep's own RL
parser (sweep_core.fanin.metrics.rl.extract_rl), joined oldest link first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.rl import extract_rl
from sweep_core.handoffs.deep_dive.inputs import SignatureHit

MAX_LINE = 200  # characters of a matched line quoted as evidence


def _where(i: int) -> str:
    return "this log" if i == 0 else f"earlier chain log #{i}"


def metric_history(
    log: str, chains: Sequence[str], cfg: MetricsConfig
) -> tuple[list[dict[str, float]], int | None, int | None, list[str]]:
    """(per-step metric dicts oldest first over every link, step, max steps, problems)."""
    series: list[dict[str, float]] = []
    problems: list[str] = []
    for i in range(len(chains), 0, -1):  # oldest link first
        got = extract_rl(chains[i - 1], [], cfg)
        series += got.series
        problems += [f"{_where(i)}: {p}" for p in got.problems if "step line" not in p and "metric dict" not in p]
    now = extract_rl(log, [], cfg)
    series += now.series
    problems += [f"this log: {p}" for p in now.problems if "metric dict" not in p]
    if not series:
        problems.append(f"no {cfg.rl_marker} metric dict in this log or its {len(chains)} chain log(s)")
    step, top = now.values.get("step"), now.values.get("max_steps")
    return series, step, top, problems


def signature_hits(
    log: str,
    chains: Sequence[str],
    patterns: Sequence[tuple[str, Sequence[re.Pattern[str]]]],
) -> list[SignatureHit]:
    """The first line matching each kind of pattern in each log (this log first)."""
    hits: list[SignatureHit] = []
    for i, text in enumerate([log, *chains]):
        for kind, pats in patterns:
            if not pats:
                continue
            for n, line in enumerate(text.splitlines(), start=1):
                if any(p.search(line) for p in pats):
                    hits.append(SignatureHit(kind, _where(i), n, line.strip()[:MAX_LINE]))
                    break
    return hits
