"""The one typed result of every hand-off act: ``ok`` / ``failed`` / ``unknown`` with the reason
and the evidence, never a prefix string. A settled attempt stores it as its ``outcome`` word, its
``why`` and its evidence (sweep_cleanup's rm attempts: handoffs.cleanup.execute ``rm_row``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    OK = "ok"  # the act was done (the answer says so)
    FAILED = "failed"  # the act was refused or not run: nothing of it happened
    UNKNOWN = "unknown"  # sent, or unreadable: what became of it is not known


@dataclass(frozen=True)
class Result:
    """What one act came to: its outcome, why (failed / unknown) and the evidence (the answer)."""

    outcome: Outcome
    reason: str = ""
    evidence: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK


def ok(evidence: str = "") -> Result:
    return Result(Outcome.OK, "", evidence)


def failed(reason: str, evidence: str = "") -> Result:
    return Result(Outcome.FAILED, reason, evidence)


def unknown(reason: str, evidence: str = "") -> Result:
    return Result(Outcome.UNKNOWN, reason, evidence)


# An outcome word as the stored acts spell it (db_register: done/failed/UNKNOWN) -> its Outcome.
WORDS = {
    "ok": Outcome.OK,
    "done": Outcome.OK,
    "failed": Outcome.FAILED,
    "UNKNOWN": Outcome.UNKNOWN,
    "unknown": Outcome.UNKNOWN,
}


# What a cancel / relaunch act did (handoffs.cancel.outcome.Did, stored as ``did``) comes to: done,
# nothing of it happened, or sent and not known (an scancel / stop not yet confirmed, an answer
# lost, a step that raised). The one table: cancel's own view and the stored acts both read it.
DID_OUTCOMES: dict[str, Outcome] = {
    "cancelled": Outcome.OK,
    "stopped": Outcome.OK,
    "requeued": Outcome.OK,
    "relaunched": Outcome.OK,
    "sent": Outcome.UNKNOWN,
    "unknown": Outcome.UNKNOWN,
    "error": Outcome.UNKNOWN,
    "command failed": Outcome.FAILED,
    "left alone": Outcome.FAILED,
    "refused": Outcome.FAILED,
    "failed": Outcome.FAILED,
    "not relaunched": Outcome.FAILED,
    "not run": Outcome.FAILED,
    "dry run": Outcome.FAILED,
}


def did_result(did: str, text: str) -> Result:
    """A cancel / relaunch act's Result from what it did and its text (the evidence); the reason,
    when not ok, says what was done. A ``did`` not in the table is UNKNOWN with that reason."""
    got = DID_OUTCOMES.get(did)
    if got is None:
        return unknown(f"stored did {did[:60]!r} is not a cancel or relaunch outcome", text)
    return Result(got, "" if got is Outcome.OK else f"{did}: {text}"[:300], text)


def outcome_of_word(word: str) -> Result | None:
    """The result an act's stored ``outcome`` word says (None = no word: not settled yet)."""
    if not word:
        return None
    got = WORDS.get(word)
    if got is None:
        return unknown(f"stored outcome {word[:80]!r} is not ok, failed or UNKNOWN")
    return Result(got, "", word)
