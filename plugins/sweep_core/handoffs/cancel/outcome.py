"""What one sweep_cancel act came to, typed (pure): what was done (``Did``), which act it was
(cancel or relaunch), the new job id an ops.md relaunch command printed, and the text the tables
and the task log say. The ledger and the announcements read the fields, never the text.

``ActOutcome`` is a cancel-specific view over the kernel's one typed result: ``result`` is the
scancel / requeue / sbatch / stop act's ``kernel.result.Result`` (ok / failed / unknown, the reason,
the evidence), one table (``DID_OUTCOME``) says which ``Did`` is which, and ``kernel_act`` names the
act itself (``kernel.act.Act``: scancel, requeue, sbatch or stop, and its job).

It travels through XCom as ``to_dict``; ``from_xcom`` reads it back, and reads the plain text an
act task of a run started before the typed outcome returned ONCE, here (``legacy``), so that run's
acts still reach the ledger.
"""

from __future__ import annotations

import re
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


def from_xcom(raw: Mapping[str, Mapping[str, Any]] | None) -> Outcomes:
    """cluster -> job id -> outcome as an act task returned it (the text of the form before: ``legacy``)."""
    return {
        str(c): {str(j): legacy(o) if isinstance(o, str) else ActOutcome.from_dict(o) for j, o in per.items()}
        for c, per in (raw or {}).items()
    }


_AS_JOB = re.compile(r"by the ops\.md command as job (\d{1,12}\b|/[\w./-]{1,200})")
_LEGACY = (  # the text's opening -> (did, act), first match; the form before the typed outcome only
    ("requeued", Did.REQUEUED, Act.RELAUNCH),
    ("cancelled and relaunched", Did.RELAUNCHED, Act.RELAUNCH),
    ("cancelled; the ops.md relaunch command failed", Did.COMMAND_FAILED, Act.RELAUNCH),
    ("cancelled", Did.CANCELLED, Act.CANCEL),
    ("stopped", Did.STOPPED, Act.CANCEL),
    ("left alone", Did.LEFT_ALONE, Act.CANCEL),
    ("UNKNOWN", Did.UNKNOWN, Act.CANCEL),
    ("outcome unknown", Did.ERROR, Act.CANCEL),
)


def legacy(text: str) -> ActOutcome:
    """An outcome of the form before (plain text), read once: its opening words say what was done;
    an UNKNOWN whose lost session was a relaunch is a relaunch (its act then counts)."""
    for head, did, act in _LEGACY:
        if text.startswith(head):
            if did == Did.UNKNOWN and "relaunch sent" in text:
                act = Act.RELAUNCH
            m = _AS_JOB.search(text)
            return ActOutcome(did, text, act, m.group(1) if m else "")
    return ActOutcome(Did.NOT_RUN, text)


def not_done(problem: str, act: Act = Act.CANCEL) -> ActOutcome:
    """An act with no record of its own: UNKNOWN when its script was sent, else not run (slurm.failover)."""
    text = failover.not_done(problem)
    return ActOutcome(Did.UNKNOWN if failover.outcome_unknown(problem) else Did.NOT_RUN, text, act)
