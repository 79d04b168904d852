"""The failure rules: genuine_failure (FAILED and kin, with the first real traceback and whether an
earlier sweep saw the same failure) and chain_timeout (a wall TIMEOUT with or without a successor).
"""

from __future__ import annotations

import re

from sweep_core.fanin.digest import DIGESTED, evidence_of
from sweep_core.models import Flag, Job
from sweep_core.rules.context import RuleContext, job_flag
from sweep_core.vocab import Action, Severity


def failure_signature(job: Job, exc: str) -> str:
    """Stable across reruns: the job name without numbers, the exception without numbers/paths."""
    name = re.sub(r"\d+", "#", job.name)
    text = re.sub(r"0x[0-9a-f]+|\d+", "#", exc)
    text = re.sub(r"/[^\s'\"]+", "<path>", text)
    return f"{job.cluster}|{name}|{text[:160]}"


def rule_chain_timeout(ctx: RuleContext) -> list[Flag]:
    """TIMEOUT at the wall: normal with a RUNNING/PENDING successor of the same name, else flagged."""
    out = []
    for s in ctx.snaps:
        successors = {j.name: j for j in [*(s.running or []), *(s.pending or [])]}
        for job in s.finished or []:
            if job.base_state != "TIMEOUT":
                continue
            nxt = successors.get(job.name)
            if nxt is not None:
                out.append(
                    job_flag("chain_timeout", Severity.INFO, job, f"chain restart: successor {nxt.job_id} {nxt.state}")
                )
            elif s.running is None or s.pending is None:
                out.append(job_flag("chain_timeout", Severity.WARN, job, "TIMEOUT; successor unknown (squeue UNKNOWN)"))
            else:
                out.append(
                    job_flag(
                        "chain_timeout",
                        Severity.WARN,
                        job,
                        "TIMEOUT at the wall with no successor queued",
                        Action.DIAGNOSE,
                    )
                )
    return out


def rule_genuine_failure(ctx: RuleContext) -> list[Flag]:
    """FAILED (exit != 0, not a wall TIMEOUT): the first real traceback; recurring vs transient."""
    out = []
    for job in ctx.jobs(source="sacct"):
        if job.base_state not in ctx.cfg.failure_states:
            continue
        ev = evidence_of(job, ctx.mcfg, ctx.cfg)
        exc = str(ev.get("traceback") or "")
        why = exc or (
            f"no traceback found ({job.log_note})"
            if job.log_note
            else "no traceback in the log tail"
            if ev.get(DIGESTED)
            else "log not found"
        )
        sig = failure_signature(job, exc or job.base_state)
        # Recurring = the same failure on ANOTHER job (a relaunch), not this job seen again.
        recurring = bool(ctx.history.failure_signatures.get(sig, set()) - {f"{job.cluster}|{job.job_id}"})
        job.metrics["failure_signature"] = sig
        kind = "RECURRING (same failure in an earlier sweep)" if recurring else "new"
        out.append(
            job_flag(
                "genuine_failure",
                Severity.CRITICAL,
                job,
                f"{job.base_state} exit {job.exit_code}: {why} [{kind}]",
                Action.DIAGNOSE,
            )
        )
    return out
