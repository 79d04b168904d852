"""Fresh judgement right before an act (pure): the evidence read at that moment against the evidence
the job was judged (approved, or covered by a standing permission) on. A job that moved (its state
or node list changed; and where its flag was its silence, ``SILENCE_RULES``, its log written since
or its step advanced) is left alone, and the outcome says how it moved; the offer and the standing
permission are judged again on the new evidence. (A collapsed or deep-dive-KILL job keeps logging:
its log moving is no reason to spare it.)

The act scripts repeat the log check in the session that acts (sweep_core/programs/recheck.sh
``unmoved``: the log's mtime and size as judged, else record ``moved:<k>`` and ``fresh:<k>``), so
nothing can move between this check and the act; ``moved_in_script`` reads those records.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.handoffs.cancel.relaunch_policy import relaunch_offer, standing_permission
from sweep_core.handoffs.cancel.relaunch_remote import Evidence, last_step, stat_pair
from sweep_core.ledger.entries import Ledger
from sweep_core.slurm.gather import GatherOutput

MOVED = "moved since the flag"
SILENCE_RULES = ("liveness_stale", "wedged")  # flags that are the log's silence: a write answers them
LEFT_ALONE = "left alone"


def _secs(v: int | None) -> str:
    return "?" if v is None else f"{v:,} s"


def _silent(ev: Mapping[str, Any]) -> int | None:
    now, last = ev.get("remote_now"), ev.get("last_output")
    return None if now is None or last is None else max(0, int(now) - int(last))


def on_silence(d: CancelDecision) -> bool:
    """Whether the job was flagged for its log's silence (then a log write or a step means it moved)."""
    return d.request.rule in SILENCE_RULES


def moved(before: Mapping[str, Any], now: Evidence, silence: bool = True) -> str:
    """What changed ("" = nothing) from ``before`` (an Evidence as a dict: what the job was judged on)
    to ``now``: "moved since the flag: silent 5 s now (was 7,800 s), step 520 (was 500)";
    ``silence`` False: only its state and node list count."""
    if not before:
        return ""
    changes = []
    b_last, b_size, b_step = before.get("last_output"), before.get("size"), before.get("step")
    wrote = (
        silence
        and b_last is not None
        and (
            now.last_output is None
            or now.last_output > int(b_last)
            or (b_size is not None and now.size is not None and now.size != int(b_size))
        )
    )
    if wrote:
        silent = "log not readable now" if now.last_output is None else f"silent {_secs(now.silent_s)} now"
        changes.append(f"{silent} (was {_secs(_silent(before))})")
    if silence and b_step is not None and now.step is not None and now.step != int(b_step):
        changes.append(f"step {now.step} (was {b_step})")
    for field, label in (("state", "state"), ("nodelist", "nodes")):
        was, is_ = str(before.get(field) or ""), str(getattr(now, field) or "")
        if was and is_ and was != is_:
            changes.append(f"{label} {is_} (was {was})")
    return f"{MOVED}: {', '.join(changes)}" if changes else ""


def rejudge(
    d: CancelDecision, fresh: Evidence, ledger: Ledger, ccfg: CancelConfig, *, now: dt.datetime, relaunch: bool
) -> str:
    """Why the act must not run now ("" = it may): the job moved since it was judged, the relaunch
    is no longer offered on the new evidence, or its standing permission no longer covers it."""
    why = moved(d.evidence, fresh, on_silence(d))
    if why:
        return why
    r = d.request
    if relaunch and not d.offer.get("with"):  # a relaunch with a human's corrected setting: not the policy's
        entry = ledger.jobs.get(f"{r.cluster}|{r.job_id}")
        step = fresh.step if fresh.step is not None else (entry.step if entry else None)  # as assess judged
        offer = relaunch_offer(cluster=r.cluster, job_id=r.job_id, name=r.name, evidence=r.evidence,
                               state=fresh.state or d.state, step=step, ledger=ledger, cfg=ccfg.relaunch,
                               now=now)  # fmt: skip
        if not offer.relaunch:
            return f"relaunch no longer offered on the evidence read now: {offer.why}"
    if d.offer.get("standing"):
        nodes = int(d.nodes) if d.nodes.isdigit() else 1
        still = standing_permission(ccfg.standing, action="relaunch" if relaunch else "cancel",
                                    rule=r.rule, cluster=r.cluster, name=r.name,
                                    silent_s=fresh.silent_s, nodes=nodes)  # fmt: skip
        if not still:
            return (
                f"{d.offer['standing']} no longer covers it on the evidence read now (silent {_secs(fresh.silent_s)})"
            )
    return ""


def moved_in_script(out: GatherOutput | None, k: int, job_id: str, name: str, before: Mapping[str, Any],
                    step_patterns: Any) -> str:  # fmt: skip
    """How job ``k`` moved, from the act script's ``moved:<k>`` / ``fresh:<k>`` records ("" = it did not)."""
    rec = out.get(f"moved:{k}") if out else None
    if rec is None:
        return ""
    parts = rec.stdout.split()
    mtime, size = stat_pair(" ".join(parts[:2]))
    remote_now = int(parts[-1]) if parts and parts[-1].isdigit() else None
    tail = out.get(f"fresh:{k}") if out else None
    step = last_step(tail.stdout, step_patterns) if tail is not None and tail.rc == 0 else None
    now = Evidence(job_id, name, remote_now=remote_now, last_output=mtime, size=size, step=step)
    return moved(before, now) or f"{MOVED}: the log's mtime/size changed ({rec.stdout.strip()[:80]})"
