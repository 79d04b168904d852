"""What sweep_cancel's relaunches left for the next sweep to say: a RECURRING job (relaunched, then
wedged again at the same step; the ledger's ``escalated`` act) still live is a CRITICAL flag, so
the escalation reaches the channels that hear critical through the digest (told once: new, then
again only after the cooldown) and the sweep table, not only sweep_cancel's log. A live job it
relaunched says so in its row: when, by whom, and the requeue's result (the node it excluded).
"""

from __future__ import annotations

from sweep_core.ledger.acts import ActKind
from sweep_core.records.models import Flag
from sweep_core.records.vocab import Action, Severity
from sweep_core.rules.context import RuleContext, job_flag

LIVE = frozenset({"RUNNING", "PENDING"})
SETTLED = frozenset({ActKind.RELAUNCH, ActKind.CANCEL})  # an act after the escalation settles it


def open_escalation(acts: list[dict[str, str]]) -> dict[str, str] | None:
    """The latest ``escalated`` act not followed by a relaunch or a cancel (None = none open)."""
    latest = None
    for a in acts:
        if a.get("kind") == ActKind.ESCALATED and not a.get("deep_dive"):  # a deep-dive's: rules.deep_dive
            latest = a
        elif a.get("kind") in SETTLED:
            latest = None
    return latest


def relaunch_note(acts: list[dict[str, str]]) -> str:
    """The job's latest relaunch as its sweep row says it ("" = never relaunched)."""
    last = next((a for a in reversed(acts) if a.get("kind") == ActKind.RELAUNCH), None)
    if last is None:
        return ""
    said = f"relaunched {last.get('at', '?')[:16]} by {last.get('by') or '?'}"
    return said + (f": {last['result'][:240]}" if last.get("result") else "")


def rule_relaunch_escalated(ctx: RuleContext) -> list[Flag]:
    """A live job whose ledger holds an open escalation (RECURRING, or its series' relaunch cap
    reached) -> CRITICAL, investigate. A live job sweep_cancel relaunched gets its row's note of it."""
    out = []
    for job in ctx.jobs():
        if job.base_state not in LIVE:
            continue
        e = ctx.history.ledger.jobs.get(f"{job.cluster}|{job.job_id}")
        if e is not None and (said := relaunch_note(e.acts)):
            job.metrics["relaunched"] = said
        esc = open_escalation(e.acts) if e is not None else None
        if esc is None:
            continue
        what = "relaunch cap reached" if esc.get("cap") else "RECURRING"
        msg = (
            f"{what}, escalated by sweep_cancel at {esc.get('at', '?')[:16]}: {esc.get('why') or '?'}; "
            "no relaunch is offered again: a person must look (cancel it, or fix its setting)"
        )
        out.append(job_flag("relaunch_escalated", Severity.CRITICAL, job, msg, Action.INVESTIGATE))
    return out
