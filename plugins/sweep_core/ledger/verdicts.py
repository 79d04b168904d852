"""The deep-dive verdicts a job's ledger acts keep (``verdict`` acts, written by
handoffs.deep_dive.follow_up) and a Reject of the KILL request that followed one: the record the
deep-dive, the cancel and relaunch hand-offs and the sweep's rules all read, kept below them.
"""

from __future__ import annotations

from sweep_core.ledger.acts import ActKind, PastAct
from sweep_core.ledger.entries import Ledger, LedgerEntry

DEEP_DIVE_KILL = "deep_dive_kill"  # the cancel hand-off's rule (sweep.yaml cancel.standing may name it)


def _acts(e: LedgerEntry | None, kind: str) -> list[dict[str, str]]:
    return [a for a in (e.acts if e else []) if a.get("kind") == kind]


def latest_verdict(e: LedgerEntry | None) -> dict[str, str] | None:
    """The job's latest ``verdict`` act (None = never probed since verdicts were kept)."""
    got = _acts(e, ActKind.VERDICT)
    return got[-1] if got else None


def standing_reject(e: LedgerEntry | None) -> dict[str, str] | None:
    """The latest Reject of a deep_dive_kill request (None = none)."""
    got = [a for a in _acts(e, ActKind.REJECT) if a.get("rule") == DEEP_DIVE_KILL]
    return got[-1] if got else None


def kill_reask(reject: PastAct | None, weight: int) -> tuple[bool, str]:
    """(may the KILL be asked, why not): a Reject (``reject``) stands until a probe's evidence
    weighs more than the one it rejected."""
    if reject is None or weight > reject.weight:
        return True, ""
    return False, (
        f"KILL rejected by {reject.by or '?'} at {(reject.at or '?')[:16]} (evidence weight {reject.weight}, now "
        f"{weight}): asked again only when a probe finds more"
    )


def may_ask_kill(e: LedgerEntry | None, weight: int) -> tuple[bool, str]:
    """kill_reask over the job's entry (its latest deep_dive_kill Reject)."""
    rej = standing_reject(e)
    return kill_reask(PastAct.of(rej) if rej is not None else None, weight)


def reject_fields(ledger: Ledger, cluster: str, job_id: str, rule: str) -> dict[str, str]:
    """What a Reject act of a deep_dive_kill request (``rule``: the request's) keeps: its rule and the
    evidence weight rejected."""
    v = latest_verdict(ledger.jobs.get(f"{cluster}|{job_id}"))
    return kill_reject_fields(rule, PastAct.of(v) if v is not None else None)


def kill_reject_fields(rule: str, verdict: PastAct | None) -> dict[str, str]:
    """reject_fields for the job's latest verdict (None = none on record); {} for another rule."""
    if rule != DEEP_DIVE_KILL:
        return {}
    return {"rule": DEEP_DIVE_KILL, "weight": str(verdict.weight if verdict else 0)}
