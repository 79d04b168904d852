"""Jobs the cluster lost without saying so: WEDGED (iris RUNNING with 0 pods; since when, from the
ledger) and VANISHED (live at the last sweep that knew the cluster, listed nowhere now). Both are
TERMINAL in the runbook and get a flag with an action; neither invents an exit code.
"""

from __future__ import annotations

from sweep_core.iris.state import WEDGED
from sweep_core.ledger.fold import VANISHED
from sweep_core.records.models import Flag
from sweep_core.records.vocab import Action, Severity
from sweep_core.rules.context import RuleContext, job_flag


def rule_wedged(ctx: RuleContext) -> list[Flag]:
    """iris RUNNING, 0 pods: since the first sweep that saw it so (the ledger), else since this one."""
    out = []
    for s in ctx.snaps:
        for job in s.finished or []:
            if job.base_state != WEDGED:
                continue
            e = ctx.history.ledger.jobs.get(f"{job.cluster}|{job.job_id}")
            if e is not None and e.state == WEDGED and e.since:
                since = f"since {e.since} (first sweep that saw 0 pods)"
            else:
                was = f"; {e.state} with pods at {e.last_seen}" if e is not None and e.last_seen else ""
                since = f"since {s.window_end} (this sweep{was})"
            msg = f"0 pods {since}: read the task log, then stop it (sweep_cancel stops iris jobs)"
            out.append(job_flag("wedged", Severity.CRITICAL, job, msg, Action.DIAGNOSE))
    return out


def rule_vanished(ctx: RuleContext) -> list[Flag]:
    """A VANISHED row (sweep_core.ledger.vanished): find out how it ended (relaunch if it was lost)."""
    out = []
    for job in ctx.jobs(source="sacct"):
        if job.base_state == VANISHED:
            msg = f"vanished, last seen {job.end}: find how it ended before relaunching"
            out.append(job_flag("vanished", Severity.CRITICAL, job, msg, Action.INVESTIGATE))
    return out
