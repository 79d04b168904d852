"""The eval_health rule: an Eval job that stalls, lingers as a zombie after its last trial, or fails
within minutes; calibration runs (``eval_exempt``) are reported as exempt.
"""

from __future__ import annotations

from sweep_core.fanin.liveness import elapsed_minutes
from sweep_core.records.models import Flag
from sweep_core.records.vocab import Action, Bucket, Severity
from sweep_core.rules.context import RuleContext, is_calibration, job_flag


def rule_eval_health(ctx: RuleContext) -> list[Flag]:
    """Eval stall (silent), zombie (all trials done, still RUNNING), instant-fail; DCAgent2 exempt."""
    out = []
    for job in ctx.jobs(Bucket.EVAL):
        exempt = is_calibration(ctx, job)
        problem = ""
        if job.source == "squeue":
            done, total = job.metrics.get("done"), job.metrics.get("total")
            if job.stale:
                problem = "stall: no trial output past cadence"
            elif done is not None and total and done >= total:
                problem = f"zombie: {done}/{total} trials done but still RUNNING"
        elif job.base_state in ctx.cfg.failure_states:
            mins = elapsed_minutes(job.elapsed)
            if mins is not None and mins < ctx.cfg.instant_fail_minutes:
                problem = f"instant-fail after {job.elapsed}"
        if not problem:
            continue
        if exempt:
            out.append(job_flag("eval_health", Severity.INFO, job, f"{problem} — calibration run (DCAgent2), exempt"))
        else:
            out.append(job_flag("eval_health", Severity.WARN, job, problem, Action.INVESTIGATE))
    return out
