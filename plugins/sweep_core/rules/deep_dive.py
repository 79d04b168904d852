"""What each sweep does with a RUNNING RL job's deep-dive verdict on record (the ledger's latest
``verdict`` act, sweep_core.ledger.verdicts; what follows it, sweep_core.handoffs.deep_dive.follow_up):

- KILL -> ``deep_dive_kill`` CRITICAL → kill-approval: the cancel hand-off (given once while a
  request is open; an unanswered one is released, so it is asked again the next sweep). While a
  Reject of it stands, no request: the job is probed again (→ deep-dive) and asked again only
  when that probe's evidence weighs more.
- NO-KILL -> each watch signal re-checked on this sweep's readings (reward, GPU util, the ledger's
  step counter); one that flips -> ``deep_dive_reprobe`` → deep-dive this tick.
- UNKNOWN -> probed again each sweep (→ deep-dive) until ``deep_dive.unknown_reprobes`` in a row;
  then the escalation the deep-dive wrote is a CRITICAL ``deep_dive_escalated`` (told once by the
  digest), never probed again until a person acts.

The row's note gets the verdict and what followed it (cancelled, rejected by, escalated...).
"""

from __future__ import annotations

from sweep_core.handoffs.deep_dive.follow_up import Readings, act_note, flipped, stalled_minutes, unknown_streak
from sweep_core.handoffs.deep_dive.plan import KILL, NO_KILL, UNKNOWN
from sweep_core.ledger.verdicts import DEEP_DIVE_KILL, latest_verdict, may_ask_kill
from sweep_core.records.models import Flag
from sweep_core.records.vocab import Action, Bucket, Severity
from sweep_core.rules.context import RuleContext, job_flag

REPROBE = "deep_dive_reprobe"
ESCALATED = "deep_dive_escalated"


def _num(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def rule_deep_dive_follow_up(ctx: RuleContext) -> list[Flag]:
    """The flags that act on each RUNNING RL job's deep-dive verdict on record (see the module doc)."""
    out: list[Flag] = []
    now = {s.cluster: s.remote_now for s in ctx.snaps}
    for job in ctx.jobs(Bucket.RL, source="squeue"):
        if job.base_state != "RUNNING":
            continue
        e = ctx.history.ledger.jobs.get(f"{job.cluster}|{job.job_id}")
        v = latest_verdict(e)
        if e is None or v is None:
            continue
        note = act_note(e)
        if e.deep_dive:
            job.metrics["deep_dive"] = e.deep_dive + (f"; {note}" if note else "")
        verdict, at = v.get("verdict"), v.get("at", "?")[:16]
        if verdict == KILL:
            ok, why = may_ask_kill(e, int(v.get("weight") or 0))
            lines = "; ".join(v.get("evidence", "").splitlines())
            if ok:
                msg = f"deep-dive KILL verdict of {at} on {v.get('basis') or 'its evidence'}: {lines}"
                out.append(job_flag(DEEP_DIVE_KILL, Severity.CRITICAL, job, msg[:1500], Action.KILL_APPROVAL))
            else:
                out.append(job_flag(REPROBE, Severity.INFO, job, f"{why}: probed again this sweep", Action.DEEP_DIVE))
        elif verdict == NO_KILL:
            gpu = job.gpu or {}
            readings = Readings(
                reward=_num(job.metrics.get("reward")),
                gpu_util=None if gpu.get("why") else _num(gpu.get("mean_util")),
                stalled_min=stalled_minutes(e, job.metrics.get("step"), now.get(job.cluster)),
            )
            flips = flipped(v.get("watch", "").splitlines(), readings)
            if flips:
                msg = f"NO-KILL of {at}: watch signal flipped: {'; '.join(flips)}: probed again this tick"
                out.append(job_flag(REPROBE, Severity.WARN, job, msg, Action.DEEP_DIVE))
        elif verdict == UNKNOWN:
            n, esc = unknown_streak(e)
            if esc is not None:
                msg = (
                    f"{esc.get('why') or 'deep-dive UNKNOWN'} (escalated at {esc.get('at', '?')[:16]}): "
                    "no verdict can be reached: a person must look"
                )
                out.append(job_flag(ESCALATED, Severity.CRITICAL, job, msg, Action.INVESTIGATE))
            else:
                why = (v.get("unknown", "").splitlines() or ["nothing could be read"])[0]
                msg = f"deep-dive UNKNOWN {n} sweep(s) in a row ({why}): probed again this sweep"
                out.append(job_flag(REPROBE, Severity.WARN, job, msg, Action.DEEP_DIVE))
    return out
