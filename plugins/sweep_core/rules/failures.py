"""The failure rules: genuine_failure (FAILED and kin, with the first real traceback and whether an
earlier sweep saw the same failure) and chain_timeout (a wall TIMEOUT with or without a successor).

A failure whose end shows one of the runbook's two traps (ops.md "the sig53/EDQUOT traps") is named
as that trap with its fix, not left a plain code failure: sig53 (ExitCode ``0:53``, or the log says
so: Slurm could not open the job's output file, the job never ran) and EDQUOT (Disk quota exceeded
in the log: a relaunch dies the same way until quota is freed).
"""

from __future__ import annotations

import re

from sweep_core.fanin.digest import DIGESTED, evidence_of
from sweep_core.fanin.metrics.hang import EDQUOT, SIG53, TRAP_MEANING
from sweep_core.records.models import Flag, Job
from sweep_core.records.vocab import Action, Severity
from sweep_core.rules.context import RuleContext, job_flag


def failure_signature(job: Job, exc: str) -> str:
    """Stable across reruns: the job name without numbers, the exception without numbers/paths."""
    name = re.sub(r"\d+", "#", job.name)
    text = re.sub(r"0x[0-9a-f]+|\d+", "#", exc)
    text = re.sub(r"/[^\s'\"]+", "<path>", text)
    return f"{job.cluster}|{name}|{text[:160]}"


# The runbook's fix of each trap (spec §1 INODE HEADROOM → cleanup-reclaim; ops.md's sig53 trap).
TRAP_FIX = {
    EDQUOT: "fix: free quota first (the Quota cell, the cleanup backlog and its reclaim), then relaunch; "
    "a relaunch before that dies the same way",
    SIG53: "fix: make the job's --output dir exist and writable by the job user, under quota, then resubmit",
}


def failure_traps(job: Job, ev: dict[str, object]) -> list[tuple[str, str]]:
    """The traps this ended job's end shows, each (``<name> trap (<meaning>): <line>; <fix>``, the
    line): sig53 from the ExitCode's signal 53 or a log line, EDQUOT from a log line (the digest's
    ``traps``)."""
    raw = ev.get("traps")
    lines = (
        {str(t[0]): str(t[1]) for t in raw if isinstance(t, list | tuple) and len(t) == 2}
        if isinstance(raw, list)
        else {}
    )
    if job.exit_code.partition(":")[2] == "53":
        lines[SIG53] = f"ExitCode {job.exit_code}"
    return [
        (f"{n} trap ({TRAP_MEANING[n]}): {lines[n]}; {TRAP_FIX[n]}", lines[n]) for n in (SIG53, EDQUOT) if n in lines
    ]


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
        traps = failure_traps(job, ev)
        if traps:  # the trap leads; a traceback that is not the trap's own line is kept after it
            why = "; ".join(t for t, _ in traps)
            why += f"; first traceback: {exc}" if exc and not any(line in exc for _, line in traps) else ""
        else:
            why = exc or (
                f"no traceback found ({job.log_note})"
                if job.log_note
                else "no traceback in the log tail"
                if ev.get(DIGESTED)
                else "log not found"
            )
        sig = failure_signature(job, exc or (traps[0][0].split(" ", 1)[0] if traps else job.base_state))
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
