"""The ``rules:`` section of include/sweep.yaml: rule thresholds and name tags (keys and defaults:
sweep_core.config.fanin_schema), read into one frozen RulesConfig the rules share.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sweep_core.config.fanin_schema import (
    PendingThresholds,
    ProgressThresholds,
    RulesSection,
    SftDivergenceThresholds,
)
from sweep_core.config.schema_base import section
from sweep_core.fanin.fingerprint import FingerprintConfig, fingerprint_config


class RulesConfigError(ValueError):
    """The ``rules:`` section of sweep.yaml is malformed; the message names the key."""


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
    progress: ProgressThresholds = ProgressThresholds()
    sft_divergence: SftDivergenceThresholds = SftDivergenceThresholds()
    pending: PendingThresholds = PendingThresholds()
    gpu_idle_util_pct: float = 5.0
    liveness_kill_minutes: int = 120
    # HF-only series (sweep.yaml hf_chain.series with a match, db_registration false): (name, SFT job names)
    hf_only: tuple[tuple[str, re.Pattern[str]], ...] = ()


def rules_config(raw: RulesSection | dict[str, Any] | None) -> RulesConfig:
    """Build from the ``rules:`` section of sweep.yaml (its model, or a mapping validated here)."""
    sect = section(RulesSection, raw, "rules", RulesConfigError)
    col = sect.collapse
    try:
        exempt = tuple(re.compile(p) for p in sect.eval_exempt)
    except re.error as exc:
        raise RulesConfigError(f"rules.eval_exempt: bad regex: {exc}") from exc
    return RulesConfig(
        min_signals=col.min_signals,
        reward_drop=float(col.reward_drop_fraction),
        grad_norm_max=float(col.grad_norm_max),
        entropy_min=float(col.entropy_min),
        tis_max=float(col.tis_max),
        ablation_tags=sect.ablation_tags,
        agentic_tags=sect.agentic_rl_tags,
        untested_tags=sect.untested_rl_tags,
        concluded=sect.concluded_series,
        eval_exempt=exempt,
        instant_fail_minutes=float(sect.eval_instant_fail_minutes),
        failure_states=frozenset(sect.failure_states),
        fingerprint=fingerprint_config(sect.fingerprint, sect.series_suffix),
        progress=sect.progress,
        sft_divergence=sect.sft_divergence,
        pending=sect.pending,
        gpu_idle_util_pct=float(sect.gpu_idle_util_pct),
        liveness_kill_minutes=sect.liveness_kill_minutes,
    )


def hf_only_series(series: Any) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(name, compiled match) of every listed HF-only series (``hf_chain.series``: db_registration
    false, a match given): their SFT completions go to the HF chain, never to sft-job-cleanup.
    A series whose commands are still unset is listed too: it is HF-only all the same."""
    return tuple((s.name, re.compile(s.match)) for s in series if s.match and not s.db_registration)
