"""The kernel's machine and I/O, named where the kernel is: the batch-job machine's use-case and
plan (handoffs.batch_job, claim -> submit -> settle, exactly once) and the I/O a use-case is given
(handoffs.ports). They stay where they are; this module re-exports them and reads a submission's
outcome as the kernel's one Result."""

from __future__ import annotations

from sweep_core.handoffs.batch_job.plan import Outcome as Sent
from sweep_core.handoffs.batch_job.plan import Submission
from sweep_core.handoffs.batch_job.usecase import claim, claim_act, drop_act, fill_act, release, settle, submit
from sweep_core.handoffs.kernel.result import Result, failed, ok, unknown
from sweep_core.handoffs.ports import CommitFiles, HubCheck, LoadCluster, RunScript, Say, active_slurm

__all__ = [
    "CommitFiles",
    "HubCheck",
    "LoadCluster",
    "RunScript",
    "Say",
    "Submission",
    "active_slurm",
    "claim",
    "claim_act",
    "drop_act",
    "fill_act",
    "release",
    "settle",
    "submit",
    "submission_result",
]


def submission_result(sub: Submission) -> Result:
    """What one sbatch came to as a kernel Result: submitted -> ok (evidence: its job id); refused
    or not sent -> failed (nothing runs); UNKNOWN -> unknown (found by its name next run)."""
    if sub.outcome is Sent.SUBMITTED:
        return ok(sub.job_id)
    if sub.outcome in (Sent.REFUSED, Sent.NOT_SENT):
        return failed(sub.why or str(sub.outcome), sub.answer or sub.session)
    return unknown(sub.why or "answer lost", sub.session)
