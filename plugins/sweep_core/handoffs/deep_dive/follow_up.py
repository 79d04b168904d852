"""What follows a deep-dive verdict (pure, over the ledger).

When sweep_rl_deep_dive settles its verdicts (settle_verdicts): each is a ``verdict`` act on its job
(evidence, watch signals, weight) and its line in ``deep_dive`` (the next sweep's row note); the
job's deep-dive hand-off is released (the sweep's rules decide when it is probed again, below).
KILL -> a cancel hand-off under the rule of its own, ``deep_dive_kill`` (a standing permission may
name it), given once while a request is open, and not while a Reject of it stands unless this probe
weighs more (ledger.verdicts.may_ask_kill). UNKNOWN ``unknown_reprobes`` times in a row -> one ``escalated`` act.

What a sweep reads of it (rules.deep_dive): the latest verdict, the open UNKNOWN streak and its
escalation, the NO-KILL watch signals that flipped on this sweep's own readings.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweep_core.handoffs.cancel.authority import give_kills
from sweep_core.handoffs.deep_dive.plan import KILL, UNKNOWN, Verdict
from sweep_core.handoffs.flag_record import FlagRecord
from sweep_core.ledger.acts import ActKind, add_act
from sweep_core.ledger.cancel_handoff import HandoffRun
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.given import release_given
from sweep_core.ledger.verdicts import DEEP_DIVE_KILL, may_ask_kill
from sweep_core.records.vocab import Action, Severity

HANDOFF = "deep_dive"  # the per-job hand-off kind (ledger.runs.PER_JOB)
MAX_EVIDENCE = 1500  # characters of evidence a KILL request carries


def kill_evidence(v: Verdict) -> str:
    """The KILL request's evidence: ``[deep_dive_kill] KILL verdict on <basis>: <lines>``."""
    text = f"[{DEEP_DIVE_KILL}] KILL verdict on {v.basis or 'its evidence'}: " + "; ".join(v.evidence)
    return text[:MAX_EVIDENCE]


def kill_request(v: Verdict) -> dict[str, str]:
    """sweep_cancel's conf job for one KILL verdict."""
    rec = FlagRecord(
        v.cluster,
        v.job_id,
        v.name,
        DEEP_DIVE_KILL,
        Severity.CRITICAL.value,
        Action.KILL_APPROVAL.value,
        kill_evidence(v),
    )
    return rec.to_dict()


def verdict_act(v: Verdict, run_id: str, at: str) -> dict[str, str]:
    """The ledger act of one verdict (lines joined by newlines)."""
    return {
        "kind": ActKind.VERDICT,
        "run": run_id,
        "at": at,
        "verdict": v.verdict,
        "basis": v.basis,
        "weight": str(v.weight),
        "evidence": "\n".join(v.evidence),
        "watch": "\n".join(v.watch),
        "unknown": "\n".join(v.unknown),
    }


def unknown_streak(e: LedgerEntry | None) -> tuple[int, dict[str, str] | None]:
    """(UNKNOWN verdicts in a row up to now, the ``escalated`` act told for that streak or None)."""
    n, esc = 0, None
    for a in e.acts if e else []:
        if a.get("kind") == ActKind.VERDICT:
            n, esc = (n + 1, esc) if a.get("verdict") == UNKNOWN else (0, None)
        elif a.get("kind") == ActKind.ESCALATED and a.get("deep_dive"):
            esc = a
    return n, esc


def settle_verdicts(
    ledger: Ledger,
    verdicts: Sequence[Mapping[str, Any]],
    run_id: str,
    at: str,
    *,
    dry_run: bool,
    unknown_reprobes: int,
    cancel_run: HandoffRun | None = None,
) -> tuple[list[dict[str, str]], list[str]]:
    """Each verdict into the ledger (in place, see the module doc); (sweep_cancel's conf jobs, the
    lines said: the act that followed each verdict). ``cancel_run``: the sweep_cancel run this
    deep-dive run triggers for its KILLs (authority.give_kills)."""
    kills: list[dict[str, str]] = []
    lines: list[str] = []
    for raw in verdicts:
        v = Verdict.from_dict(dict(raw))
        key = f"{v.cluster}|{v.job_id}"
        e = ledger.jobs.get(key) or LedgerEntry(v.cluster, v.job_id, v.name)
        ledger.jobs[key] = e
        e.deep_dive = v.record(dt.datetime.fromisoformat(at))
        flag_run = e.handoffs.get(HANDOFF, "")
        add_act(ledger, v.cluster, v.job_id, v.name, verdict_act(v, run_id, at))
        lines.append(f"{key}: {e.deep_dive}")
        if v.verdict == KILL:
            ok, why = may_ask_kill(e, v.weight)
            if not ok:
                lines.append(f"{key}: not asked: {why}")
            else:
                job = kill_request(v)
                said = give_kills(ledger, [job], run_id, dry_run=dry_run, flag_run=flag_run, cancel_run=cancel_run)
                lines += said
                if not any("already handed off" in s for s in said):
                    kills.append(job)
        elif v.verdict == UNKNOWN:
            n, esc = unknown_streak(e)
            if n >= unknown_reprobes and esc is None:
                why = f"deep-dive UNKNOWN {n} sweeps in a row (cap {unknown_reprobes}): {v.headline()}"
                add_act(
                    ledger,
                    v.cluster,
                    v.job_id,
                    v.name,
                    {"kind": ActKind.ESCALATED, "run": run_id, "at": at, "why": why, "deep_dive": "1"},
                )
                lines.append(f"{key}: escalated: {why}")
            elif esc is None:
                lines.append(f"{key}: UNKNOWN {n}/{unknown_reprobes}: probed again next sweep")
        release_given(ledger, HANDOFF, [{"cluster": v.cluster, "job_id": v.job_id}])
    return kills, lines


# The NO-KILL watch signals a sweep re-checks on its own readings (verdict._watch writes them); the
# rollout ones (empty, garbage) and log signatures need the probe itself: a flip of another signal
# re-runs it.
_REWARD = re.compile(r"^watch reward_mean < (-?[\d.e+-]+)$")
_GPU = re.compile(r"^watch GPU util below (?:the LUT's )?([\d.]+) %$")
_STALL = re.compile(r"^watch no token generated for (\d+)\+ min with no step")


@dataclass(frozen=True)
class Readings:
    """What this sweep read of a job (None = not read): its reward, mean GPU util, minutes its step
    has not moved (the ledger's counter)."""

    reward: float | None = None
    gpu_util: float | None = None
    stalled_min: float | None = None


def flipped(watch: Sequence[str], r: Readings) -> list[str]:
    """The watch signals this sweep's readings flip, each with the reading."""
    out = []
    for w in watch:
        if (m := _REWARD.match(w)) and r.reward is not None and r.reward < float(m.group(1)):
            out.append(f"{w[6:]} (reward {r.reward:.3g} now)")
        elif (m := _GPU.match(w)) and r.gpu_util is not None and r.gpu_util < float(m.group(1)):
            out.append(f"{w[6:]} (GPU util {r.gpu_util:.0f} % mean now)")
        elif (m := _STALL.match(w)) and r.stalled_min is not None and r.stalled_min >= float(m.group(1)):
            out.append(f"{w[6:]} (no step for {r.stalled_min:.0f} min now)")
    return out


def stalled_minutes(e: LedgerEntry | None, step: Any, remote_now: float | None) -> float | None:
    """Minutes the job's step has not moved: the ledger's counter still at this sweep's step."""
    if e is None or e.counter_since is None or remote_now is None or step is None or e.counter != "step":
        return None
    try:
        same = e.counter_value == int(step)
    except (TypeError, ValueError):
        return None
    return (remote_now - e.counter_since) / 60.0 if same else None


def act_note(e: LedgerEntry | None) -> str:
    """What followed the latest verdict, for the row's note ("" = nothing yet)."""
    if e is None:
        return ""
    after, seen = [], False
    for a in e.acts:
        if a.get("kind") == ActKind.VERDICT:
            after, seen = [], True
        elif seen:
            after.append(a)
    words = {
        ActKind.CANCEL: "cancelled",
        ActKind.RELAUNCH: "relaunched",
        ActKind.REJECT: "rejected",
        ActKind.UNANSWERED: "unanswered",
        ActKind.ESCALATED: "escalated",
    }
    said = [f"{words[a['kind']]}" + (f" by {a['by']}" if a.get("by") else "") for a in after if a.get("kind") in words]
    return "; ".join(said)
