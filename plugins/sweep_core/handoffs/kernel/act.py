"""The one act type of the hand-offs: what is done (rm, scancel, requeue, sbatch, stop, hub check)
and to what (a cluster's job id, a path, a hub repo).

A stored attempt says its act (kernel.attempt ``to_row``: ``act``, ``target``, ``act_cluster``); an
attempt stored before it did reads with the act ``derived`` from its stored kind, here and only here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final


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


# A stored attempt's kind (the ledger act kind each hand-off writes) -> the act it is of, for an
# attempt stored before it said its act. A cancel / relaunch is refined by what was done (``did``).
BY_KIND: Final[dict[str, ActKind]] = {
    "cancel": ActKind.SCANCEL,
    "relaunch": ActKind.REQUEUE,
    "upload": ActKind.SBATCH,
    "consolidate": ActKind.SBATCH,
    "consolidate_failed": ActKind.SBATCH,
    "db_register": ActKind.COMMAND,
    "rm": ActKind.RM,
    "hub_check": ActKind.HUB_CHECK,
}


def kind_of(kind: str, did: str = "", new_job_id: str = "", job_id: str = "") -> ActKind | None:
    """The act kind of a stored attempt of ``kind`` (None = not an act: a mark, a state, a verdict).
    A cancel stopped by iris is a stop; a relaunch the ops.md command submitted again (relaunched,
    its command failed, or a new id printed) an sbatch, else a requeue. A chain leg's job
    (``chain_<leg>``, handoffs.chain.plan.leg_kind) is an sbatch."""
    if did == "stopped":
        return ActKind.STOP
    if kind == "relaunch" and (did in ("relaunched", "command failed") or (new_job_id and new_job_id != job_id)):
        return ActKind.SBATCH
    if kind.partition("_")[0] == "chain":
        return ActKind.SBATCH
    return BY_KIND.get(kind)


def derived(kind: str, fields: dict[str, str], target: str) -> Act | None:
    """The act of an attempt stored without one, from its kind and fields (the one derivation);
    ``target``: the job id of the ledger entry it is stored on."""
    got = kind_of(kind, fields.get("did", ""), fields.get("new_job_id", ""), target)
    return Act(got, "", target) if got is not None else None
