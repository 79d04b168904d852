"""Bucket jobs by type from their job name (spec §2): RL · SFT · Datagen · Eval · Catch-all."""

from __future__ import annotations

from collections.abc import Iterable

from sweep_core.config.sweep import BucketRule


def bucket_for(name: str, rules: Iterable[BucketRule]) -> str:
    """The first bucket whose pattern matches ``name``; the last rule is the catch-all."""
    last = ""
    for rule in rules:
        last = rule.name
        for p in rule.patterns:
            if p.search(name):
                return rule.name
    return last
