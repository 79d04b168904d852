"""What one sweep_cancel act came to, typed (pure): what was done (``Did``), which act it was
(cancel or relaunch), the new job id an ops.md relaunch command printed, and the text the tables
and the task log say. The ledger and the announcements read the fields, never the text.

``ActOutcome`` is a cancel-specific view over the kernel's one typed result: ``result`` is the
scancel / requeue / sbatch / stop act's ``kernel.result.Result`` (ok / failed / unknown, the reason,
the evidence), one table (``DID_OUTCOME``) says which ``Did`` is which, and ``kernel_act`` names the
act itself (``kernel.act.Act``: scancel, requeue, sbatch or stop, and its job).

It travels through XCom as ``to_dict``; ``from_xcom`` reads it back. What an act task of an earlier
version returned (a run in flight across an upgrade: not an object) is not parsed: it reads as
``earlier``, the kernel's UNKNOWN (``Did.ERROR``: nothing recorded, never counted as done) whose
reason says to check the job by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sweep_core.handoffs.kernel.act import Act as KernelAct
from sweep_core.handoffs.kernel.act import ActKind, kind_of
from sweep_core.handoffs.kernel.result import DID_OUTCOMES, Outcome, Result, did_result
from sweep_core.slurm import failover


class Did(StrEnum):
    """What became of the act on one job."""

    CANCELLED = "cancelled"  # sacct says CANCELLED
    STOPPED = "stopped"  # iris says KILLED
    SENT = "sent"  # scancel / stop sent, not (yet) confirmed
    REQUEUED = "requeued"  # scontrol requeue: same id, Restarts grew
    RELAUNCHED = "relaunched"  # cancelled, then the ops.md relaunch command ran
    COMMAND_FAILED = "command failed"  # cancelled, then the ops.md relaunch command failed: an attempt all the same
    LEFT_ALONE = "left alone"  # it moved since it was judged (handoffs.cancel.fresh), or no longer covered
    REFUSED = "refused"  # the re-check in the act's own session refused it
    FAILED = "failed"  # the act's command failed
    NOT_RELAUNCHED = "not relaunched"  # nothing sent: the command could not be filled, or the stop failed
    NOT_RUN = "not run"  # nothing sent
    UNKNOWN = "unknown"  # sent, its answer lost: recorded (counted), never sent again
    ERROR = "error"  # the act step raised: whether anything was sent is not known (nothing recorded)
    DRY_RUN = "dry run"  # printed only


class Act(StrEnum):
    CANCEL = "cancel"
    RELAUNCH = "relaunch"


# What each Did is in the kernel's words (kernel.result.DID_OUTCOMES, the one table).
DID_OUTCOME: dict[Did, Outcome] = {d: DID_OUTCOMES[d.value] for d in Did}


class OutcomeError(ValueError):
    """An outcome read back from XCom is malformed; the message names the field."""


@dataclass(frozen=True)
class ActOutcome:
    """One job's act outcome (see the module doc)."""

    did: Did
    text: str
    act: Act = Act.CANCEL
    new_job_id: str = ""  # an ops.md relaunch command's new job id ("" = the same id, or none read)

    def __str__(self) -> str:
        return self.text

    @property
    def result(self) -> Result:
        """The act's kernel Result: its outcome (``DID_OUTCOME``), the reason (what was done, when
        not ok) and the evidence (the text its answer left); a stored act reads the same back."""
        return did_result(self.did.value, self.text)

    def kernel_act(self, cluster: str, job_id: str, name: str = "") -> KernelAct:
        """The kernel act this outcome is of: a cancel is an scancel (an iris stop when ``stopped``),
        a relaunch a requeue of the same id, or an sbatch when the ops.md command printed a new one."""
        kind = kind_of(self.act, self.did, self.new_job_id, job_id) or ActKind.SCANCEL
        return KernelAct(kind, cluster, job_id, name)

    @property
    def relaunch_attempt(self) -> bool:
        """A relaunch that counts against the series' cap (sent with its answer lost counts too)."""
        done = (Did.REQUEUED, Did.RELAUNCHED, Did.COMMAND_FAILED)
        return self.did in done or (self.did == Did.UNKNOWN and self.act == Act.RELAUNCH)

    @property
    def cancelled(self) -> bool:
        """The job is gone by a cancel (or may be: an UNKNOWN cancel is recorded, never sent again)."""
        return not self.relaunch_attempt and self.did in (Did.CANCELLED, Did.STOPPED, Did.UNKNOWN)

    def with_text(self, more: str) -> ActOutcome:
        return ActOutcome(self.did, self.text + more, self.act, self.new_job_id)

    def to_dict(self) -> dict[str, str]:
        return {"did": self.did.value, "text": self.text, "act": self.act.value, "new_job_id": self.new_job_id}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ActOutcome:
        for k, vocab in (("did", Did), ("act", Act)):
            if data.get(k) not in tuple(vocab):
                raise OutcomeError(f"outcome field {k!r}: {str(data.get(k))[:40]!r} is not one of {tuple(vocab)}")
        for k in ("text", "new_job_id"):
            if not isinstance(data.get(k, ""), str):
                raise OutcomeError(f"outcome field {k!r}: not a string")
        return cls(Did(data["did"]), data.get("text", ""), Act(data["act"]), data.get("new_job_id", ""))


Outcomes = dict[str, dict[str, ActOutcome]]  # cluster -> job id -> outcome


def left_alone(why: str, act: Act = Act.CANCEL) -> ActOutcome:
    return ActOutcome(Did.LEFT_ALONE, f"{Did.LEFT_ALONE}: {why}", act)


def to_xcom(results: Mapping[str, Mapping[str, ActOutcome]]) -> dict[str, dict[str, dict[str, str]]]:
    return {c: {j: o.to_dict() for j, o in per.items()} for c, per in results.items()}


EARLIER = "an outcome from an earlier version's act task: check the job by hand"


def from_xcom(raw: Mapping[str, Mapping[str, Any]] | None) -> Outcomes:
    """cluster -> job id -> outcome as an act task returned it (not an object: ``earlier``)."""
    return {
        str(c): {str(j): ActOutcome.from_dict(o) if isinstance(o, Mapping) else earlier(o) for j, o in per.items()}
        for c, per in (raw or {}).items()
    }


def earlier(value: object) -> ActOutcome:
    """An outcome an earlier version's act task returned (its text is shown, never read): UNKNOWN
    whether anything was sent, nothing recorded, a person checks the job."""
    return ActOutcome(Did.ERROR, f"outcome unknown: {EARLIER}: {str(value)[:200]}")


def not_done(problem: str, act: Act = Act.CANCEL) -> ActOutcome:
    """An act with no record of its own: UNKNOWN when its script was sent, else not run (slurm.failover)."""
    text = failover.not_done(problem)
    return ActOutcome(Did.UNKNOWN if failover.outcome_unknown(problem) else Did.NOT_RUN, text, act)
