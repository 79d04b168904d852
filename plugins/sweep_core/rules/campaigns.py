"""The campaign_drift rule: what a campaign's STATE.md states against what the clusters say — a job id
it calls running that this sweep's sacct (or the ledger) says ended, a RUNNING campaign job it does
not mention, or docs that cannot be read. The sweep never edits the docs: a person updates them.
"""

from __future__ import annotations

from sweep_core.ledger.fold import ACTIVE
from sweep_core.records.models import Flag, Job
from sweep_core.records.vocab import Severity
from sweep_core.rules.context import RuleContext, job_flag


def _ended(ctx: RuleContext) -> dict[str, Job]:
    """job id -> every job known to have ended: the ledger's (earlier sweeps), then this sweep's sacct."""
    out = {
        e.job_id: Job(e.cluster, e.job_id, e.name, e.state, "ledger", bucket=e.bucket)
        for e in ctx.history.ledger.jobs.values()
        if e.state not in ACTIVE
    }
    for s in ctx.snaps:
        out.update((job.job_id, job) for job in s.finished or [])
    return out


def rule_campaign_drift(ctx: RuleContext) -> list[Flag]:
    """STATE.md calls a job running that ended, or a RUNNING campaign job is not in STATE.md: warn."""
    out: list[Flag] = []
    if not ctx.campaigns:
        return out
    running: list[Job] = [j for s in ctx.snaps for j in s.running or []]
    running_ids = {j.job_id for j in running}
    ended = _ended(ctx)
    for c in ctx.campaigns:
        if c.error:
            msg = f"campaign {c.name}: docs not read ({c.error}): STATE.md not checked"
            out.append(Flag(rule="campaign_drift", severity=Severity.WARN, cluster="", message=msg))
            continue
        for job_id in sorted(c.called_running() - running_ids):
            if job_id not in ended:
                continue  # not a job any sweep knows ended (a step count, a date): no claim to check
            job = ended[job_id]
            said = c.mentions(job_id)[:120]
            msg = f"campaign {c.name}: STATE.md calls {job_id} running, the cluster says {job.base_state}: {said!r}"
            out.append(job_flag("campaign_drift", Severity.WARN, job, msg))
        for job in running:
            if c.pattern.search(job.name) and not c.mentions(job.job_id):
                msg = f"campaign {c.name}: RUNNING campaign job not in STATE.md ({c.state_path})"
                out.append(job_flag("campaign_drift", Severity.WARN, job, msg))
    return out
