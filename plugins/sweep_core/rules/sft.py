"""The sft_divergence rule: an SFT run whose loss or grad norm went NaN/inf is a failure to diagnose;
a loss (grad-norm) spike, the last value over k x the median of the tail's earlier values, is flagged
(thresholds ``rules.sft_divergence`` in include/sweep.yaml). RL has its own: rl_collapse.
"""

from __future__ import annotations

import math
from statistics import median

from sweep_core.records.models import Flag
from sweep_core.records.vocab import Action, Bucket, Severity
from sweep_core.rules.context import RuleContext, job_flag


def _spike(values: list[float], factor: float, min_points: int) -> tuple[float, float] | None:
    """(last, median of the earlier values) when the last is over ``factor`` x that median."""
    if len(values) < min_points + 1:
        return None
    *earlier, last = values
    mid = median(earlier)
    return (last, mid) if mid > 0 and last > factor * mid else None


def rule_sft_divergence(ctx: RuleContext) -> list[Flag]:
    """NaN/inf loss or grad norm anywhere in the tail -> critical, diagnose; else a spike of the last
    loss or grad norm over its earlier median -> warn (investigate while it runs)."""
    out = []
    dcfg = ctx.cfg.sft_divergence
    for job in ctx.jobs(Bucket.SFT):
        series = job.metrics.get("series") or []
        ended = "" if job.source == "squeue" else " (already ended)"
        bad = sorted({k for d in series for k, v in d.items() if not math.isfinite(v)})
        if bad:
            what = ", ".join(f"{k} {next(d[k] for d in series if k in d and not math.isfinite(d[k]))}" for k in bad)
            msg = f"{what} in the log tail: divergence, a failure to diagnose{ended}"
            out.append(job_flag("sft_divergence", Severity.CRITICAL, job, msg, Action.DIAGNOSE))
            continue
        spikes = []
        for key, factor in (("loss", dcfg.loss_spike_factor), ("grad_norm", dcfg.grad_norm_spike_factor)):
            hit = _spike([d[key] for d in series if key in d], factor, dcfg.min_points)
            if hit:
                spikes.append(f"{key} spike {hit[0]:.4g} > {factor:g} x median {hit[1]:.4g} of the earlier ones")
        if spikes:
            act = Action.INVESTIGATE if job.source == "squeue" else ""
            out.append(job_flag("sft_divergence", Severity.WARN, job, "; ".join(spikes) + ended, act))
    return out
