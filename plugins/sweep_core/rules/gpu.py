"""GPU rules (issue 15 §1) over the gather's GPU probe (Job.gpu, sweep_core.gpu.probe): a RUNNING
job whose every GPU reads ~0 % is a suspected hang (with stale liveness too: stronger evidence,
CRITICAL); a GPU whose memory is above the ops.md gpu_mem_ceiling is a warning. An unknown
probe judges nothing.
"""

from __future__ import annotations

from sweep_core.records.models import Flag
from sweep_core.records.vocab import Action, Severity
from sweep_core.rules.context import RuleContext, job_flag


def rule_gpu_idle(ctx: RuleContext) -> list[Flag]:
    """Every GPU of a RUNNING job idle in the probe: a suspected hang; with stale liveness, CRITICAL."""
    out = []
    for job in ctx.jobs(source="squeue"):
        gpu = job.gpu or {}
        if gpu.get("why") or gpu.get("mean_util") is None:
            continue
        top = gpu.get("max_util")
        if top is None and gpu.get("gpus"):  # a reading from before max_util was kept
            top = max(g["util"] for g in gpu["gpus"])
        if top is None or top > ctx.cfg.gpu_idle_util_pct:
            continue
        if gpu.get("source") == "accounting":
            msg = f"GPU util ≤ {top:.0f} % in accounting (sstat gres/gpuutil, mean {gpu['mean_util']:.0f} %)"
        else:
            msg = f"GPU util ≤ {top:.0f} % on all {gpu['n_gpus']} GPUs in the probe (mean {gpu['mean_util']:.0f} %)"
        if job.stale:
            msg += f" and no log output for {int(job.minutes_since_output or 0)} min: both say the job is hung"
            out.append(job_flag("gpu_idle", Severity.CRITICAL, job, msg, Action.INVESTIGATE))
        else:
            out.append(job_flag("gpu_idle", Severity.WARN, job, msg + ": suspected hang", Action.INVESTIGATE))
    return out


def rule_gpu_mem_ceiling(ctx: RuleContext) -> list[Flag]:
    """A probed GPU's memory above the cluster's gpu_mem_ceiling (standing constraint)."""
    out = []
    for job in ctx.jobs(source="squeue"):
        gpu = job.gpu or {}
        frac, ceiling = gpu.get("mem_frac"), gpu.get("ceiling")
        if gpu.get("why") or frac is None or ceiling is None or frac <= ceiling:
            continue
        over = [g for g in gpu["gpus"] if g["mem_total"] and (g["mem_used"] or 0) / g["mem_total"] > ceiling]
        msg = (
            f"GPU memory {100 * frac:.0f} % on the fullest GPU, above the ceiling {100 * ceiling:.0f} % "
            f"({len(over)} of {gpu['n_gpus']} GPUs over)"
        )
        out.append(job_flag("gpu_mem_ceiling", Severity.WARN, job, msg, Action.INVESTIGATE))
    return out
