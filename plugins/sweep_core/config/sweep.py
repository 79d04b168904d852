"""Sweep-wide settings from ``include/sweep.yaml``: read by the strict YAML loader, validated by
the schema (sweep_schema). Every error names the file and the key path, all of them at once.
"""

from __future__ import annotations

import functools
from pathlib import Path

import yaml
from pydantic import ValidationError

from sweep_core.config.schema_base import schema_errors
from sweep_core.config.strict_yaml import DuplicateKeyError, strict_load
from sweep_core.config.sweep_schema import BucketRule, GatherLimits, SweepConfig

__all__ = ["BucketRule", "GatherLimits", "SweepConfig", "SweepConfigError", "load_sweep_config", "parse_sweep_config"]


class SweepConfigError(ValueError):
    """sweep.yaml is malformed; the message names the file and each bad key path (``errors``)."""

    def __init__(self, message: str, errors: list[tuple[str, str]] | None = None) -> None:
        self.errors = errors or []
        super().__init__(message)


@functools.lru_cache(maxsize=16)
def parse_sweep_config(text: str, source: str = "sweep.yaml") -> SweepConfig:
    """Validate sweep.yaml text; ``source`` names the file in errors. Kept per (text, source): every
    DAG file, task and SSH call reads the config, and the model is immutable (an error is not kept)."""
    try:
        raw = strict_load(text) or {}
    except DuplicateKeyError as exc:
        raise SweepConfigError(f"{source}: key {exc.key!r} is given twice: {exc.problem}") from exc
    except yaml.YAMLError as exc:
        raise SweepConfigError(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise SweepConfigError(f"{source}: must be a mapping")
    try:
        return SweepConfig.model_validate(raw)
    except ValidationError as exc:
        errors = schema_errors(exc)
        raise SweepConfigError("\n".join(f"{source}: {where}: {what}" for where, what in errors), errors) from None


def load_sweep_config(path: Path | str) -> SweepConfig:
    """Read and validate sweep.yaml."""
    path = Path(path)
    return parse_sweep_config(path.read_text(encoding="utf-8"), str(path))
