"""The one act type of the hand-offs: what is done (rm, scancel, requeue, sbatch, stop, hub check)
and to what (a cluster's job id, a path, a hub repo)."""

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
    """One act of a hand-off: its kind, the cluster it runs on ('' = none: a hub check) and its target."""

    kind: ActKind
    cluster: str
    target: str
    name: str = ""  # the job's name the act is for (ledger entry), '' = not a job's

    def __str__(self) -> str:
        where = f"{self.cluster}:" if self.cluster else ""
        return f"{self.kind} {where}{self.target}"
