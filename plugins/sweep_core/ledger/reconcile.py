"""A cancel whose answer was lost (an UNKNOWN act: the session died after the scancel or iris stop
was sent) is recorded and never sent again blind. The next sweep that lists the job tells what
became of it, once:

- still RUNNING ``GRACE_S`` after the act: the cancel did not take. Said, and the job's cancel
  hand-off is released, so its next flag asks again (a human, or a standing permission re-judged
  on this sweep's evidence) instead of the job burning its nodes as "already handed off";
- ended: the cluster's own record says how (CANCELLED / KILLED confirms the act).

Each reconciliation is an act of its own (kind ``reconciled``), so it is told once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from sweep_core.ledger.acts import ActKind, add_act
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.given import release_given
from sweep_core.records.models import Job

GRACE_S = 120  # scancel / an iris stop takes effect in seconds; still RUNNING this long after = it did not take
RECONCILED = "reconciled"  # the act kind of a reconciliation
CONFIRMING = frozenset({"CANCELLED", "KILLED"})
UNKNOWN_DID = "unknown"  # handoffs.cancel.outcome.Did.UNKNOWN as the ledger stores it
UNREADABLE = "unreadable"  # kernel.attempt.UNREADABLE: an act the state migration 0005 could not read


def lost_cancel(e: LedgerEntry) -> dict[str, str] | None:
    """The job's latest cancel act whose answer was lost, unless a reconciliation followed it."""
    for a in reversed(e.acts):
        if a.get("kind") == RECONCILED:
            return None
        if a.get("kind") == ActKind.CANCEL:
            return a if _lost(a) else None
    return None


def _lost(a: dict[str, str]) -> bool:
    """Whether a stored cancel act's outcome is the kernel's UNKNOWN: its ``did`` says so (the
    kernel reads it so, handoffs.kernel.result.DID_OUTCOMES), or the state migration 0005 could not
    read what an older version stored (the kernel reads it UNKNOWN: what became of the job is read
    from the cluster, never guessed). Nothing here reads the act's text."""
    return a.get("did") == UNKNOWN_DID or bool(a.get(UNREADABLE))


def _at(text: str) -> dt.datetime | None:
    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def reconcile_lost_cancels(
    ledger: Ledger,
    seen: Mapping[str, Job],
    running: set[str],
    active: frozenset[str],
    *,
    listed_at: dt.datetime,
    end: str,
    run_id: str,
) -> list[tuple[str, str]]:
    """(cluster, line) per lost cancel this sweep can settle (``seen``: every job the sweep listed,
    by key; ``running``: the keys listed RUNNING; ``active``: the states not ended; ``listed_at``: when the cluster was read).
    The ledger is changed in place: the reconciliation act, and a released cancel hand-off."""
    out = []
    for key, job in sorted(seen.items()):
        e = ledger.jobs.get(key)
        act = lost_cancel(e) if e is not None else None
        at = _at(act.get("at", "")) if act else None
        if e is None or act is None or at is None:
            continue
        label = f"{e.cluster} {e.job_id} {e.name}"
        sent = f"the cancel sent at {act.get('at')} by {act.get('by') or '?'} (its answer lost)"
        if key in running or job.base_state == "PENDING":  # scancel ends a PENDING job too
            if (listed_at - at).total_seconds() < GRACE_S:
                continue  # too soon to tell
            line = (
                f"cancel did not take: {label} is still {job.base_state} after {sent}; "
                "its cancel hand-off is released: the next flag asks again"
            )
            release_given(ledger, "cancel", [{"cluster": e.cluster, "job_id": e.job_id}])
            did = "not taken"
        elif job.base_state in CONFIRMING:
            line, did = f"cancel confirmed: {label} ended {job.base_state} after {sent}", "confirmed"
        elif job.base_state in active:
            continue  # listed, not yet ended (COMPLETING, a requeue between states): a later sweep tells
        else:
            line, did = f"cancel unconfirmed: {label} ended {job.base_state}, not CANCELLED, after {sent}", "ended"
        add_act(
            ledger,
            e.cluster,
            e.job_id,
            e.name,
            {"kind": RECONCILED, "of": ActKind.CANCEL.value, "did": did, "run": run_id, "at": end, "why": line},
        )
        out.append((e.cluster, line))
    return out
