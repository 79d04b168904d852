"""The datagen_realness rule: a datagen run whose trajectories average one turn is a dead generator."""

from __future__ import annotations

from sweep_core.records.models import Flag
from sweep_core.records.vocab import Action, Bucket, Severity
from sweep_core.rules.context import RuleContext, job_flag


def rule_datagen_realness(ctx: RuleContext) -> list[Flag]:
    """avg_turns ≈ 1.0 means the generator is dead (no multi-turn trajectories)."""
    out = []
    for job in ctx.jobs(Bucket.DATAGEN):
        turns = job.metrics.get("avg_turns")
        if turns is not None and abs(turns - 1.0) < 0.05:
            out.append(
                job_flag(
                    "datagen_realness",
                    Severity.CRITICAL,
                    job,
                    f"avg_turns={turns:g} ≈ 1.0: dead datagen",
                    Action.INVESTIGATE,
                )
            )
    return out
