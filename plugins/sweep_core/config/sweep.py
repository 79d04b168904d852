"""Sweep-wide settings from ``include/sweep.yaml``: schedule, buckets and cadences, gather limits."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sweep_core.config.strict_yaml import DuplicateKeyError, strict_load


class SweepConfigError(ValueError):
    """sweep.yaml is malformed; the message names the field."""


@dataclass(frozen=True)
class BucketRule:
    name: str
    patterns: tuple[re.Pattern[str], ...]
    cadence_minutes: int


@dataclass(frozen=True)
class GatherLimits:
    tail_bytes: int = 16384
    max_jobs: int = 1000
    connect_timeout_s: int = 15
    command_timeout_s: int = 300
    sacct_settle_s: int = 10
    chain_prefixes: tuple[str, ...] = ("rl__",)


@dataclass(frozen=True)
class SweepConfig:
    schedule: str
    timezone: str
    run_log_dir: str | None
    topic: str
    buckets: tuple[BucketRule, ...]
    gather: GatherLimits = GatherLimits()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def bucket_names(self) -> list[str]:
        return [b.name for b in self.buckets]

    def cadence(self, bucket: str, overrides: dict[str, int] | None = None) -> int:
        """Minutes a RUNNING job in ``bucket`` may be silent; a cluster's ops.md may override."""
        if overrides and bucket in overrides:
            return overrides[bucket]
        for rule in self.buckets:
            if rule.name == bucket:
                return rule.cadence_minutes
        raise KeyError(bucket)


def _positive_int(raw: dict[str, Any], key: str, where: str, default: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SweepConfigError(f"{where}.{key} must be a positive integer, got {value!r}")
    return value


def parse_sweep_config(text: str, source: str = "sweep.yaml") -> SweepConfig:
    """Validate sweep.yaml text."""
    try:
        raw = strict_load(text) or {}
    except DuplicateKeyError as exc:
        raise SweepConfigError(f"{source}: key {exc.key!r} is given twice: {exc.problem}") from exc
    except yaml.YAMLError as exc:
        raise SweepConfigError(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise SweepConfigError(f"{source}: must be a mapping")
    buckets = []
    raw_buckets = raw.get("buckets") or []
    if not raw_buckets:
        raise SweepConfigError(f"{source}: buckets must list at least one bucket")
    for i, item in enumerate(raw_buckets):
        where = f"{source}: buckets[{i}]"
        if not isinstance(item, dict) or not item.get("name"):
            raise SweepConfigError(f"{where} needs a name")
        try:
            patterns = tuple(re.compile(p) for p in item.get("patterns") or [])
        except re.error as exc:
            raise SweepConfigError(f"{where}.patterns: bad regex: {exc}") from exc
        buckets.append(BucketRule(str(item["name"]), patterns, _positive_int(item, "cadence_minutes", where, 60)))
    if buckets[-1].patterns:
        raise SweepConfigError(f"{source}: the last bucket must be the catch-all (no patterns)")
    g = raw.get("gather") or {}
    gather = GatherLimits(
        tail_bytes=_positive_int(g, "tail_bytes", f"{source}: gather", 16384),
        max_jobs=_positive_int(g, "max_jobs", f"{source}: gather", 1000),
        connect_timeout_s=_positive_int(g, "connect_timeout_s", f"{source}: gather", 15),
        command_timeout_s=_positive_int(g, "command_timeout_s", f"{source}: gather", 300),
        sacct_settle_s=_positive_int(g, "sacct_settle_s", f"{source}: gather", 10),
        chain_prefixes=tuple(str(p) for p in g.get("chain_prefixes", ["rl__"])),
    )
    schedule = raw.get("schedule") or "0 */3 * * *"
    if not isinstance(schedule, str) or len(schedule.split()) != 5:
        raise SweepConfigError(f"{source}: schedule must be a 5-field cron string, got {schedule!r}")
    known = {"schedule", "timezone", "run_log_dir", "topic", "buckets", "gather"}
    return SweepConfig(
        schedule=schedule,
        timezone=str(raw.get("timezone") or "UTC"),
        run_log_dir=raw.get("run_log_dir"),
        topic=str(raw.get("topic") or "monitor-sweep-{end:%H%M}Z"),
        buckets=tuple(buckets),
        gather=gather,
        extra={k: v for k, v in raw.items() if k not in known},
    )


def load_sweep_config(path: Path | str) -> SweepConfig:
    """Read and validate sweep.yaml."""
    path = Path(path)
    return parse_sweep_config(path.read_text(encoding="utf-8"), str(path))
