"""The kernel's machine and I/O, named where the kernel is: the batch-job machine's use-case and
plan (handoffs.batch_job, claim -> submit -> settle, exactly once) and the I/O a use-case is given
(handoffs.ports). They stay where they are; this module only re-exports them."""

from __future__ import annotations

from sweep_core.handoffs.batch_job.plan import Submission
from sweep_core.handoffs.batch_job.usecase import claim, claim_act, drop_act, fill_act, release, settle, submit
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
]
