"""The ``metrics:`` section of include/sweep.yaml: every line-format pattern of every bucket and the
hang signals, with their defaults, compiled into one frozen MetricsConfig (a bad regex raises
MetricsConfigError naming its key).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweep_core.fanin.metrics.patterns import required_literals

DEFAULTS: dict[str, Any] = {
    "rl": {
        "step": [r"Training Step Progress:[^\n]*?(?<!\d)(\d++)/(\d++)"],
        "mirror_marker": "WANDB_MIRROR",
        "keys": {
            "step": ["trainer/global_step", "global_step", "step"],
            "max_steps": ["trainer/max_steps", "max_steps", "total_steps"],
            "reward": ["reward/mean", "critic/rewards/mean", "train/reward", "reward"],
            "grad_norm": ["actor/grad_norm", "train/grad_norm", "grad_norm"],
            "entropy": ["actor/entropy", "train/entropy", "entropy"],
            "tis": ["tis/ratio_mean", "actor/tis_ratio", "tis"],
        },
    },
    "sft": {
        "total": [r"Total optimization steps = ([\d,]+)", r"max_steps[=: ]++(\d++)"],
        "step": [r"(?<!\d)(\d++)/(\d++) \[", r"Step (\d++)/(\d++)"],
    },
    "datagen": {
        # the count before the word (not the M of an N/M) or right after `result.json=`/`count=`
        "result_count": [
            r"(?<![\w/.,])(\d++) result\.json(?![=:])",
            r"result\.json(?: count[=: ]++|[=:] *+)(\d++)(?![/.\d])",
        ],
        "avg_turns": [r"avg_turns[=: ]++([0-9.]+)"],
        "exceptions": [r"exc(?:eptions)?[=: ]++(\d++)/(\d++)"],
    },
    "eval": {
        "progress": [r"(?<!\d)(\d++)/(\d++) trials", r"result\.json[=: ]++(\d++)/(\d++)"],
        "pass_rate": [r"pass[_ -]?rate[=: ]+([0-9.]+)%?"],
        "exception": [r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Exceeded))\b"],
        "passthrough": ["AgentTimeoutError", "ContextLengthExceeded"],
        "infra_checks": [],
    },
    "hang_signals": ["EngineDead", r"NCCL[^\n]*[Tt]imeout", "[Ww]atchdog", r"RPC[^\n]*[Tt]imeout", "opCount"],
}


class MetricsConfigError(ValueError):
    """A bad pattern in the metrics section of sweep.yaml."""


def _compile(patterns: Iterable[str], where: str) -> tuple[re.Pattern[str], ...]:
    try:
        return tuple(re.compile(p) for p in patterns)
    except re.error as exc:
        raise MetricsConfigError(f"metrics.{where}: bad regex: {exc}") from exc


@dataclass(frozen=True)
class InfraCheck:
    name: str
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class KeyPlan:
    """Which keys of a metric dict with a given key set feed which metric (see rl._pick_all)."""

    metrics: tuple[tuple[str, tuple[str, ...]], ...]  # (metric, its keys present, by priority)
    names: tuple[str, ...]  # the metrics, when each has exactly one key present (else ())
    get: Callable[[dict[str, Any]], Any] | None  # itemgetter of those keys, always giving a tuple


@dataclass(frozen=True)
class MetricsConfig:
    rl_step: tuple[re.Pattern[str], ...]
    rl_marker: str
    sft_total: tuple[re.Pattern[str], ...]
    sft_step: tuple[re.Pattern[str], ...]
    dg_results: tuple[re.Pattern[str], ...]
    dg_turns: tuple[re.Pattern[str], ...]
    dg_exc: tuple[re.Pattern[str], ...]
    ev_progress: tuple[re.Pattern[str], ...]
    ev_pass: tuple[re.Pattern[str], ...]
    ev_exception: tuple[re.Pattern[str], ...]
    ev_passthrough: frozenset[str]
    ev_checks: tuple[InfraCheck, ...]
    hang_any: re.Pattern[str]
    hang_each: tuple[re.Pattern[str], ...]  # the same signals one by one: a cheaper "any of them?" test
    hang_literals: tuple[str, ...]  # one of these is in every signal's match; () when one has none
    rl_alias: dict[str, tuple[str, int]]  # dict key -> (metric, priority): one pass per dict
    # metric-dict key set -> (metric, its keys by priority): every step of a run logs the same keys
    rl_plans: dict[tuple[str, ...], KeyPlan] = field(default_factory=dict, compare=False, repr=False)


def metrics_config(raw: dict[str, Any] | None) -> MetricsConfig:
    """Build from the ``metrics:`` section of sweep.yaml (missing keys take the defaults)."""
    raw = raw or {}

    def sect(name: str) -> dict[str, Any]:
        return {**DEFAULTS[name], **(raw.get(name) or {})}

    rl, sft, dg, ev = sect("rl"), sect("sft"), sect("datagen"), sect("eval")
    hang = _compile(raw.get("hang_signals") or DEFAULTS["hang_signals"], "hang_signals")
    keys = {**DEFAULTS["rl"]["keys"], **(rl.get("keys") or {})}
    checks = []
    for i, item in enumerate(ev.get("infra_checks") or []):
        if not isinstance(item, dict) or not item.get("name") or not item.get("pattern"):
            raise MetricsConfigError(f"metrics.eval.infra_checks[{i}] needs a name and a pattern")
        checks.append(InfraCheck(str(item["name"]), _compile([item["pattern"]], f"eval.infra_checks[{i}]")[0]))
    return MetricsConfig(
        rl_step=_compile(rl["step"], "rl.step"),
        rl_marker=str(rl["mirror_marker"]),
        sft_total=_compile(sft["total"], "sft.total"),
        sft_step=_compile(sft["step"], "sft.step"),
        dg_results=_compile(dg["result_count"], "datagen.result_count"),
        dg_turns=_compile(dg["avg_turns"], "datagen.avg_turns"),
        dg_exc=_compile(dg["exceptions"], "datagen.exceptions"),
        ev_progress=_compile(ev["progress"], "eval.progress"),
        ev_pass=_compile(ev["pass_rate"], "eval.pass_rate"),
        ev_exception=_compile(ev["exception"], "eval.exception"),
        ev_passthrough=frozenset(ev["passthrough"]),
        ev_checks=tuple(checks),
        hang_any=re.compile("|".join(f"(?:{p.pattern})" for p in hang)),
        hang_each=hang,
        hang_literals=_hang_literals(hang),
        rl_alias={alias: (metric, rank) for metric, aliases in keys.items() for rank, alias in enumerate(aliases)},
    )


def _hang_literals(signals: Sequence[re.Pattern[str]]) -> tuple[str, ...]:
    """Literals one of which each signal's match holds; () if a signal has none or one spans lines."""
    lits = [required_literals(p) for p in signals]
    if not all(lits) or any("\n" in lit for group in lits for lit in group):
        return ()
    return tuple(dict.fromkeys(lit for group in lits for lit in group))
