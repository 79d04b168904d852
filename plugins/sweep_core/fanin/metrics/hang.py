"""The evidence of a suspected silent hang (read by the liveness_stale rule): the last log line and the
lines near the end matching a hang signal (``metrics.hang_signals`` in include/sweep.yaml: EngineDead,
NCCL … Timeout, Watchdog, RPC … Timeout, opCount).
"""

from __future__ import annotations

from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.patterns import search


def hang_evidence(tail: str, cfg: MetricsConfig, lines: int = 40) -> tuple[str, list[str]]:
    """The last non-empty log line and any EngineDead/NCCL/Watchdog/RPC lines near the end."""
    near_end = tail[-8192:].splitlines()[-lines:]
    last = next((s[:200] for ln in reversed(near_end) if (s := ln.strip())), "")
    # The usual case: no signal, told by a str search for the signals' literals (none spans a
    # line, so blank lines kept in this block change nothing), then by one search per signal.
    if cfg.hang_literals:
        whole = "\n".join(near_end)
        if not any(lit in whole for lit in cfg.hang_literals):
            return last, []
    rows = [ln for ln in near_end if ln.strip()]
    block = "\n".join(rows)
    if not any(search(p, block) for p in cfg.hang_each):
        return last, []
    near = [ln.strip()[:200] for ln in rows if cfg.hang_any.search(ln)]
    return last, near[-3:]
