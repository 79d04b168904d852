"""The ``rules:`` section of include/sweep.yaml: rule thresholds and name tags, with their defaults,
read into one frozen RulesConfig the rules share.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sweep_core.fanin.fingerprint import FingerprintConfig, fingerprint_config

DEFAULT_RULES: dict[str, Any] = {
    "collapse": {
        "min_signals": 2,
        "reward_drop_fraction": 0.5,
        "grad_norm_max": 10.0,
        "entropy_min": 0.05,
        "tis_max": 5.0,
    },
    "ablation_tags": ["zclip", "staleclip", "stale_clip", "z_clip", "maxgn09_hint", "shaped_entropy"],
    "agentic_rl_tags": ["harbor", "daytona", "terminal_bench", "terminalbench"],
    "untested_rl_tags": ["debug", "smoke", "smoketest", "smoke_test", "canary"],
    "fingerprint": {},  # launch-fingerprint patterns per field (defaults: sweep_core/fanin/fingerprint.py)
    "series_suffix": None,  # chain-link / restart suffix stripped from a name -> its series
    "concluded_series": ["a3"],
    "eval_exempt": ["(^|[_/-])DCAgent2([_/-]|$)"],
    "eval_instant_fail_minutes": 2,
    "failure_states": ["FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"],
}


@dataclass(frozen=True)
class RulesConfig:
    min_signals: int
    reward_drop: float
    grad_norm_max: float
    entropy_min: float
    tis_max: float
    ablation_tags: tuple[str, ...]
    agentic_tags: tuple[str, ...]
    untested_tags: tuple[str, ...]
    concluded: tuple[str, ...]
    eval_exempt: tuple[re.Pattern[str], ...]
    instant_fail_minutes: float
    failure_states: frozenset[str]
    fingerprint: FingerprintConfig


def rules_config(raw: dict[str, Any] | None) -> RulesConfig:
    """Build from the ``rules:`` section of sweep.yaml (missing keys take the defaults)."""
    raw = {**DEFAULT_RULES, **(raw or {})}
    col = {**DEFAULT_RULES["collapse"], **(raw.get("collapse") or {})}
    return RulesConfig(
        min_signals=int(col["min_signals"]),
        reward_drop=float(col["reward_drop_fraction"]),
        grad_norm_max=float(col["grad_norm_max"]),
        entropy_min=float(col["entropy_min"]),
        tis_max=float(col["tis_max"]),
        ablation_tags=tuple(raw["ablation_tags"]),
        agentic_tags=tuple(raw["agentic_rl_tags"]),
        untested_tags=tuple(raw["untested_rl_tags"]),
        concluded=tuple(raw["concluded_series"]),
        eval_exempt=tuple(re.compile(p) for p in raw["eval_exempt"]),
        instant_fail_minutes=float(raw["eval_instant_fail_minutes"]),
        failure_states=frozenset(raw["failure_states"]),
        fingerprint=fingerprint_config(raw.get("fingerprint"), raw.get("series_suffix")),
    )
