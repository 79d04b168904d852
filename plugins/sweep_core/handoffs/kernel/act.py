"""The one act type of the hand-offs: what is done (rm, scancel, requeue, sbatch, stop, hub check)
and to what (a cluster's job id, a path, a hub repo).

A stored attempt says its act (kernel.attempt ``to_row``: ``act``, ``target``, ``act_cluster``); the
state migration 0005 wrote it once into every attempt stored before, so nothing derives it on read.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ActKind(StrEnum):
    RM = "rm"  # sweep_cleanup: a detached rm of an artifact tree (target: its path)
    SCANCEL = "scancel"  # cancel: a Slurm job cancelled (target: job id)
    REQUEUE = "requeue"  # cancel/relaunch: a job requeued (target: job id)
    SBATCH = "sbatch"  # upload, consolidate, chain legs, relaunch: a batch job submitted
    STOP = "stop"  # iris: a controller job stopped (target: job id)
    HUB_CHECK = "hub_check"  # upload, consolidate, chain: the hub asked for an artifact (target: repo id)
    COMMAND = "command"  # db_register: a configured command run once on a login node


@dataclass(frozen=True)
class Act:
    """One act of a hand-off: its kind, the cluster it runs on ('' = none: a hub check) and its
    target: the job id of the ledger entry it is for (an sbatch: the job it is submitted for), an
    rm's path, a hub check's repo."""

    kind: ActKind
    cluster: str
    target: str
    name: str = ""  # the job's name the act is for (ledger entry), '' = not a job's

    def __str__(self) -> str:
        where = f"{self.cluster}:" if self.cluster else ""
        return f"{self.kind} {where}{self.target}"


def kind_of(kind: str, did: str = "", new_job_id: str = "", job_id: str = "") -> ActKind | None:
    """The act kind of a sweep_cancel act of ``kind`` (cancel / relaunch; None = neither) by what it
    did: a cancel stopped by iris is a stop, else an scancel; a relaunch the ops.md command submitted
    again (relaunched, its command failed, or a new id printed) an sbatch, else a requeue."""
    if did == "stopped":
        return ActKind.STOP
    if kind == "relaunch":
        again = did in ("relaunched", "command failed") or (new_job_id and new_job_id != job_id)
        return ActKind.SBATCH if again else ActKind.REQUEUE
    return ActKind.SCANCEL if kind == "cancel" else None
