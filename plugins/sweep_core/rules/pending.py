"""The Pending rules: chain_dependency_broken (a successor held with DependencyNeverSatisfied: its
predecessor did not end as the dependency needs, so the chain the runbook's restart logic relies on
is broken) and pending_stuck (pending longer than ``rules.pending.max_minutes`` on a bad reason).
"""

from __future__ import annotations

from sweep_core.fanin.liveness import age_text, pending_minutes
from sweep_core.records.models import Flag
from sweep_core.records.vocab import Action, Severity
from sweep_core.rules.context import RuleContext, job_flag

NEVER = "DependencyNeverSatisfied"


def rule_chain_dependency_broken(ctx: RuleContext) -> list[Flag]:
    """A PENDING job whose reason is DependencyNeverSatisfied: it will never start (warn, diagnose)."""
    out = []
    for s in ctx.snaps:
        for job in s.pending or []:
            if job.reason.startswith(NEVER):
                dep = f" ({job.dependency})" if job.dependency else ""
                msg = (
                    f"chain broken: held with {NEVER}{dep}: the job it depends on did not end as the"
                    " dependency needs, so this one never starts; resubmit the link (or cancel it)"
                )
                out.append(job_flag("chain_dependency_broken", Severity.WARN, job, msg, Action.DIAGNOSE))
    return out


def rule_pending_stuck(ctx: RuleContext) -> list[Flag]:
    """PENDING longer than max_minutes on a reason (squeue %R) that waiting does not clear: warn."""
    out = []
    pcfg = ctx.cfg.pending
    for s in ctx.snaps:
        for job in s.pending or []:
            waited = pending_minutes(job, s.remote_now)
            bad = next((r for r in pcfg.bad_reasons if job.reason.startswith(r)), "")
            if bad and waited is not None and waited > pcfg.max_minutes:
                msg = f"pending {age_text(waited)} on {job.reason} (over {pcfg.max_minutes:g} min on {bad})"
                out.append(job_flag("pending_stuck", Severity.WARN, job, msg, Action.INVESTIGATE))
    return out
