"""The one attempt record of the hand-offs, and one target's record of them.

An attempt is what one run did (or claimed) of one act: its kind (the ledger act kind: ``upload``,
``consolidate``, ``db_register``, …), attempt number, run id, time, job id, why, and the outcome
word its answer left, and the act it is of (kernel.act ``Act``: kind, target, cluster, stored as
``act`` / ``target`` / ``act_cluster``; the state migration 0005 wrote them once into every attempt
stored before). It is stored as today's ledger acts are: a flat object of strings
(sweep_core.ledger.acts). ``from_row`` / ``to_row`` are the one conversion each way and round-trip
exactly; a stored act that cannot be read whole (not an object, a value not a string, an attempt
number that is not one, one the migration marked ``unreadable``) reads as an attempt whose result
is UNKNOWN with the reason, never a crash.

A ``Record`` is every attempt of one hand-off on one target, oldest first, read through the
hand-off's ``Kinds`` (which act kind is a submission, a failure, the done mark, the give-up, a
later state): the same questions (in flight? failed how often? done? given up? outcome unknown?)
for upload, consolidate and db_register.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from sweep_core.handoffs.kernel.act import Act, ActKind
from sweep_core.handoffs.kernel.result import Outcome, Result, did_result, outcome_of_word, unknown

JOB_KEYS = ("job", "upload_job")  # where a stored act keeps its Slurm id (upload's acts: upload_job)
_TYPED = ("kind", "attempt", "run", "at", "why", "outcome")
UNREADABLE = "unreadable"  # why the state migration 0005 could not read a stored act (kept whole)


class Phase(StrEnum):
    CLAIMED = "claimed"  # written before the act was sent: no job id, no outcome yet
    SUBMITTED = "submitted"  # sent: its job id came back
    SETTLED = "settled"  # its outcome is known (ok / failed / unknown)


@dataclass(frozen=True)
class Attempt:
    """One attempt of one act. A field that is None was not in the stored act (kept absent)."""

    kind: str
    attempt: int | None = None
    run: str | None = None
    at: str | None = None
    job: str | None = None
    why: str | None = None
    said: str | None = None  # the stored outcome word (done / failed / UNKNOWN), None = none
    extra: Mapping[str, str] = field(default_factory=dict)  # the hand-off's own fields (flavor, state, …)
    job_key: str = "job"
    problem: str = ""  # why the stored act could not be read whole ('' = it could)
    act: Act | None = None  # the act it says it is of (None = a mark, not an act)

    @property
    def result(self) -> Result | None:
        """The outcome (None = not settled by an outcome word); UNKNOWN with the reason when garbled."""
        if self.problem:
            return unknown(self.problem)
        said = outcome_of_word(self.said or "")
        if said is None and self.kind in ("cancel", "relaunch") and "did" in self.extra:  # what it did says it
            return did_result(self.extra["did"], self.extra.get("result", ""))
        return said

    @property
    def outcome(self) -> Outcome | None:
        r = self.result
        return r.outcome if r is not None else None

    @property
    def phase(self) -> Phase:
        if self.result is not None:
            return Phase.SETTLED
        return Phase.SUBMITTED if self.job else Phase.CLAIMED

    def get(self, key: str, default: str = "") -> str:
        """A value of the stored form by its key (the hand-off's own fields: ``flavor``, ``state``…)."""
        return to_row(self).get(key, default)

    def __getitem__(self, key: str) -> str:
        return to_row(self)[key]

    def with_(self, **changes: Any) -> Attempt:
        return replace(self, **changes)


def from_row(row: object) -> Attempt:
    """A stored act (flat object of strings) -> its Attempt; never raises."""
    if not isinstance(row, Mapping):
        return Attempt(kind="", problem=f"stored act is a {type(row).__name__}, not an object")
    problems = []
    flat: dict[str, str] = {}
    for k, v in row.items():
        if not isinstance(v, str):
            problems.append(f"{k!s} is a {type(v).__name__}, not a string")
        flat[str(k)] = v if isinstance(v, str) else str(v)
    kind = flat.get("kind", "")
    if not kind:
        problems.append("it names no kind")
    if flat.get(UNREADABLE):
        problems.append(flat[UNREADABLE])
    extra = {k: v for k, v in flat.items() if k not in _TYPED}
    attempt: int | None = None
    if "attempt" in flat:
        raw = flat["attempt"]
        if raw.isascii() and raw.isdigit() and str(int(raw)) == raw:
            attempt = int(raw)
        else:
            extra["attempt"] = raw  # kept as stored: nothing lost
            problems.append(f"attempt {raw[:40]!r} is not a number")
    act: Act | None = None
    if "act" in flat:
        if flat["act"] in tuple(ActKind) and "target" in flat:
            cluster = extra.pop("act_cluster") if extra.get("act_cluster") else ""  # '' stays as stored
            act = Act(ActKind(flat["act"]), cluster, extra.pop("target"))
            del extra["act"]
        else:  # kept as stored in extra: nothing lost
            problems.append(f"act {flat['act'][:40]!r} is not one of {', '.join(ActKind)} with a target")
    job_key = next((k for k in JOB_KEYS if k in extra), "job")
    job = extra.pop(job_key, None)
    problem = f"stored {kind or '?'} act unreadable: " + "; ".join(problems) if problems else ""
    return Attempt(
        kind=kind,
        attempt=attempt,
        run=flat.get("run"),
        at=flat.get("at"),
        job=job,
        why=flat.get("why"),
        said=flat.get("outcome"),
        extra=extra,
        job_key=job_key,
        problem=problem,
        act=act,
    )


def to_row(a: Attempt) -> dict[str, str]:
    """An Attempt -> the stored flat object of strings (``from_row``'s inverse)."""
    row: dict[str, str] = {"kind": a.kind} if a.kind else {}
    if a.attempt is not None:
        row["attempt"] = str(a.attempt)
    typed = {"run": a.run, "at": a.at, a.job_key: a.job, "why": a.why, "outcome": a.said}
    row |= {k: v for k, v in typed.items() if v is not None}
    if a.act is not None:
        row |= {"act": str(a.act.kind), "target": a.act.target}
        row |= {"act_cluster": a.act.cluster} if a.act.cluster else {}
    return row | dict(a.extra)


def stored(row: Mapping[str, str | None], act: Act) -> dict[str, str]:
    """A hand-off's act as it is stored (a None value: not stored), said through ``to_row`` with
    the act it is of."""
    return to_row(from_row({k: v for k, v in row.items() if v is not None}).with_(act=act))


@dataclass(frozen=True)
class Kinds:
    """Which stored act kinds of one hand-off are what ('' = the hand-off has none)."""

    submitted: str  # a submission / a run of the act: its claim, then its job id or outcome word
    failed: str = ""  # a tracked job that ended without success (its ``job``)
    done: str = ""  # the act's effect confirmed (else: a submission whose outcome word is ok)
    gave_up: str = ""  # retries spent: a person takes over
    state: str = ""  # the latest state of a submitted job (upload_state)
    unsent: str = ""  # a claimed attempt found never sent (clears its UNKNOWN)
    salvage: str = ""  # the job was salvaged: an own upload is owed

    @property
    def all(self) -> frozenset[str]:
        return frozenset(
            k
            for k in (self.submitted, self.failed, self.done, self.gave_up, self.state, self.unsent, self.salvage)
            if k
        )


@dataclass(frozen=True)
class Record:
    """Every attempt of one hand-off on one target (oldest first) and what they add up to."""

    kinds: Kinds
    attempts: tuple[Attempt, ...] = ()
    note: str = ""  # this run's word on an UNKNOWN attempt (sacct not read …): shown, not stored

    def of(self, kind: str) -> list[Attempt]:
        return [a for a in self.attempts if kind and a.kind == kind]

    def plus(self, rows: Iterable[Mapping[str, str] | Attempt]) -> Record:
        """This record with more acts (stored rows or Attempts) after its own."""
        more = tuple(r if isinstance(r, Attempt) else from_row(r) for r in rows)
        return replace(self, attempts=(*self.attempts, *(a for a in more if a.kind in self.kinds.all)))

    @property
    def submissions(self) -> list[Attempt]:
        return self.of(self.kinds.submitted)

    @property
    def sent(self) -> list[Attempt]:
        """The submissions whose job id came back, oldest first."""
        return [a for a in self.submissions if a.job]

    @property
    def last(self) -> Attempt | None:
        """The latest submission that got a job id."""
        sent = self.sent
        return sent[-1] if sent else None

    @property
    def latest_job(self) -> str:
        """The job id of the latest submission ('' = none, or claimed without an id)."""
        subs = self.submissions
        return subs[-1].job or "" if subs else ""

    @property
    def reserved_without_id(self) -> Attempt | None:
        subs = self.submissions
        return subs[-1] if subs and not subs[-1].job else None

    def failed(self, job: str) -> Attempt | None:
        return next((a for a in self.of(self.kinds.failed) if a.job == job), None)

    @property
    def failures(self) -> int:
        """How many attempts failed: distinct failed jobs, or submissions whose outcome is failed."""
        if self.kinds.failed:
            return len({a.job for a in self.of(self.kinds.failed)})
        return sum(a.outcome is Outcome.FAILED for a in self.submissions)

    @property
    def done(self) -> Attempt | None:
        if self.kinds.done:
            got = self.of(self.kinds.done)
            return got[-1] if got else None
        return next((a for a in self.submissions if a.outcome is Outcome.OK), None)

    @property
    def gave_up(self) -> Attempt | None:
        got = self.of(self.kinds.gave_up)
        return got[-1] if got else None

    @property
    def salvage(self) -> Attempt | None:
        got = self.of(self.kinds.salvage)
        return got[-1] if got else None

    @property
    def unknown(self) -> Attempt | None:
        """The attempt sent whose outcome is UNKNOWN and no later act of the same attempt settled
        (a submission with its job id, or an ``unsent`` mark); a garbled submission counts."""
        found: Attempt | None = None
        for a in self.attempts:
            if a.kind == self.kinds.submitted and not a.job and a.outcome is Outcome.UNKNOWN:
                found = a
            elif (
                found is not None
                and a.attempt == found.attempt
                and (a.kind == self.kinds.unsent or (a.kind == self.kinds.submitted and a.job))
            ):
                found = None
        return found

    @property
    def states(self) -> dict[str, Attempt]:
        """Job id -> its latest state act."""
        return {a.job: a for a in self.of(self.kinds.state) if a.job}

    def state_of(self, job: str) -> str:
        got = self.states.get(job)
        return got.get("state") if got is not None else ""


def record_of(kinds: Kinds, acts: Iterable[object]) -> Record:
    """A target's record from its stored acts (oldest first): the hand-off's kinds only."""
    return Record(kinds, tuple(a for a in map(from_row, acts) if a.kind in kinds.all))
