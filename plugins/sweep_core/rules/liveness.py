"""The liveness rule (spec §1 LIVENESS): a RUNNING job silent past its bucket cadence is a suspected
silent hang, reported with the last lines of its log and the traps its log names (sig53, EDQUOT). A
job whose log says Disk quota exceeded is never a kill: the quota cell and the cleanup backlog.

CoreWeave (iris) is "STATE-POLL, not a log-string watch": its liveness is the controller's state and
the pod count, its wedge RUNNING with 0 pods or a vanished record (rules.lost, CRITICAL). A quiet
iris log is only an investigate note with its age, never a kill request.
"""

from __future__ import annotations

from sweep_core.fanin.digest import evidence_of
from sweep_core.fanin.liveness import age_text, predates_job
from sweep_core.fanin.metrics.hang import EDQUOT, Trap
from sweep_core.records.models import Flag, Job
from sweep_core.records.vocab import Action, Severity
from sweep_core.rules.context import RuleContext, is_calibration, job_flag


def rule_liveness_stale(ctx: RuleContext) -> list[Flag]:
    """RUNNING but silent past the bucket cadence: a suspected silent hang, with the evidence."""
    out = []
    iris = {s.cluster for s in ctx.snaps if s.scheduler == "iris"}
    for job in ctx.jobs(source="squeue"):
        if not job.stale or is_calibration(ctx, job):  # eval_health reports it as calibration
            continue
        if job.cluster in iris:
            out.append(_iris_quiet(ctx, job))
            continue
        ev = evidence_of(job, ctx.mcfg, ctx.cfg)
        last, near = ev.get("hang_last", ""), ev.get("hang_near") or []
        mins = int(job.minutes_since_output or 0)
        msg = f"no output for {mins} min (cadence {ctx.cadence(job.cluster, job.bucket)} min)"
        msg += f"; last line: {last!r}" if last else "; log empty"
        if near:
            msg += "; near the end: " + " | ".join(near)
        traps = [Trap(name, line) for name, line in ev.get("traps") or []]
        msg += "".join(f"; {t.evidence()}" for t in traps)
        quota = any(t.name == EDQUOT for t in traps)
        multi = (job.num_nodes or 1) > 1
        ran = predates_job(job)
        if ran is not None:  # the silence predates the job: no evidence for a kill
            msg += f"; log last written before this job started (the job has run {int(ran)} min)"  # as fanin.liveness
        if multi and mins >= ctx.cfg.liveness_kill_minutes and ran is None and not quota:
            out.append(
                job_flag(
                    "liveness_stale",
                    Severity.CRITICAL,
                    job,
                    msg + f"; {job.num_nodes} nodes held",
                    Action.KILL_APPROVAL,
                )
            )
        else:
            out.append(job_flag("liveness_stale", Severity.WARN, job, msg, Action.INVESTIGATE))
    return out


def _iris_quiet(ctx: RuleContext, job: Job) -> Flag:
    """An iris RUNNING job whose log is quiet past its cadence: an investigate note with its age and
    the state poll's word (RUNNING with its pods), never a kill request (the wedge is 0 pods)."""
    mins = int(job.minutes_since_output or 0)
    pods = f"{job.num_nodes} pod(s)" if job.num_nodes else "pods not counted"
    msg = (
        f"log quiet {age_text(mins)} (cadence {ctx.cadence(job.cluster, job.bucket)} min): investigate; "
        f"the state poll says RUNNING with {pods}: liveness here is the state poll, not the log "
        "(a wedge is RUNNING with 0 pods or a vanished record)"
    )
    return job_flag("liveness_stale", Severity.INFO, job, msg, Action.INVESTIGATE)
