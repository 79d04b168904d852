"""The ``metrics:`` section of include/sweep.yaml: every line-format pattern of every bucket and the
hang signals (keys and defaults: sweep_core.config.fanin_schema), compiled into one frozen
MetricsConfig (a bad regex raises MetricsConfigError naming its key).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweep_core.config.fanin_schema import LogProfile, MetricsSection
from sweep_core.config.schema_base import section
from sweep_core.fanin.metrics.patterns import required_literals
from sweep_core.fanin.metrics.profiles import Profile


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
    rl_not_training: tuple[re.Pattern[str], ...]
    rl_marker: str
    sft_total: tuple[re.Pattern[str], ...]
    sft_step: tuple[re.Pattern[str], ...]
    sft_not_training: tuple[re.Pattern[str], ...]
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
    profiles: tuple[Profile, ...] = ()  # other frameworks' formats, tried in order (profiles.py)
    pins: tuple[tuple[re.Pattern[str], Profile], ...] = ()  # job-name regex -> its profile
    # metric-dict key set -> (metric, its keys by priority): every step of a run logs the same keys
    rl_plans: dict[tuple[str, ...], KeyPlan] = field(default_factory=dict, compare=False, repr=False)


def metrics_config(raw: MetricsSection | dict[str, Any] | None) -> MetricsConfig:
    """Compile the ``metrics:`` section of sweep.yaml (its model, or a mapping validated here)."""
    sect = section(MetricsSection, raw, "metrics", MetricsConfigError)
    rl, sft, dg, ev = sect.rl, sect.sft, sect.datagen, sect.eval
    hang = _compile(sect.hang_signals, "hang_signals")
    profiles = tuple(_profile(spec, i) for i, spec in enumerate(sect.profiles))
    names = [p.name for p in profiles]
    if len(set(names)) != len(names):
        raise MetricsConfigError(f"metrics.profiles: names repeat ({', '.join(names)})")
    checks = tuple(
        InfraCheck(c.name, _compile([c.pattern], f"eval.infra_checks[{i}]")[0]) for i, c in enumerate(ev.infra_checks)
    )
    return MetricsConfig(
        rl_step=_compile(rl.step, "rl.step"),
        rl_not_training=_compile(rl.not_training, "rl.not_training"),
        rl_marker=rl.mirror_marker,
        sft_total=_compile(sft.total, "sft.total"),
        sft_step=_compile(sft.step, "sft.step"),
        sft_not_training=_compile(sft.not_training, "sft.not_training"),
        dg_results=_compile(dg.result_count, "datagen.result_count"),
        dg_turns=_compile(dg.avg_turns, "datagen.avg_turns"),
        dg_exc=_compile(dg.exceptions, "datagen.exceptions"),
        ev_progress=_compile(ev.progress, "eval.progress"),
        ev_pass=_compile(ev.pass_rate, "eval.pass_rate"),
        ev_exception=_compile(ev.exception, "eval.exception"),
        ev_passthrough=frozenset(ev.passthrough),
        ev_checks=checks,
        hang_any=re.compile("|".join(f"(?:{p.pattern})" for p in hang)),
        hang_each=hang,
        hang_literals=_hang_literals(hang),
        rl_alias={
            alias: (metric, rank)
            for metric, aliases in rl.keys.model_dump().items()
            for rank, alias in enumerate(aliases)
        },
        profiles=profiles,
        pins=tuple((pin.match, _pinned(pin.profile, profiles, i)) for i, pin in enumerate(sect.pins)),
    )


def _profile(spec: LogProfile, i: int) -> Profile:
    where = f"profiles[{i}] ({spec.name})"
    pair = _compile([spec.pair], f"{where}.pair")[0] if spec.pair else None
    if pair is not None and pair.groups < 2:
        raise MetricsConfigError(f"metrics.{where}.pair: needs 2 groups (name, value)")
    if spec.pairs_line and pair is None:
        raise MetricsConfigError(f"metrics.{where}: pairs_line needs a pair regex")
    prefix = _compile([spec.line_prefix], f"{where}.line_prefix")[0] if spec.line_prefix else None
    return Profile(
        name=spec.name,
        bucket=spec.bucket,
        signature=_compile(spec.signature, f"{where}.signature"),
        step=_compile(spec.step, f"{where}.step"),
        total=_compile(spec.total, f"{where}.total"),
        not_training=_compile(spec.not_training, f"{where}.not_training"),
        dict_line=_compile(spec.dict_line, f"{where}.dict_line"),
        pairs_line=_compile(spec.pairs_line, f"{where}.pairs_line"),
        pair=pair,
        dict_lines=spec.dict_lines,
        line_prefix=prefix,
        alias={name: (col, rank) for col, names in spec.keys.model_dump().items() for rank, name in enumerate(names)},
        source=spec.source,
    )


def _pinned(name: str, profiles: Sequence[Profile], i: int) -> Profile:
    for prof in profiles:
        if prof.name == name:
            return prof
    known = ", ".join(p.name for p in profiles) or "none"
    raise MetricsConfigError(f"metrics.pins[{i}]: no profile {name!r} (profiles: {known})")


def _hang_literals(signals: Sequence[re.Pattern[str]]) -> tuple[str, ...]:
    """Literals one of which each signal's match holds; () if a signal has none or one spans lines."""
    lits = [required_literals(p) for p in signals]
    if not all(lits) or any("\n" in lit for group in lits for lit in group):
        return ()
    return tuple(dict.fromkeys(lit for group in lits for lit in group))
