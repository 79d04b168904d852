"""A hub check as a kernel act: ``Act(HUB_CHECK, '', repo id)`` whose answer is a ``Result``.

``hub_result`` is the one conversion of a HubEvidence (handoffs.hub_evidence) to a Result: ok =
every expected file is there at the revision, failed = the hub answered and they are not, unknown =
the hub did not answer or could not tell (never positive evidence). Its evidence names the commit
sha, the revision asked, the files listed and what matched or is missing.

A hub check that decides something for a job is stored on that job as an attempt (``hub_attempt``:
kind ``hub_check``, its act, its outcome word, reason and evidence). ``worth_recording`` keeps one
row per (job, repo, run) and writes a check only when its answer changed since the one stored, or
when it is the evidence an act is taken on: a sweep that asks 500 repos every 30 min writes
nothing when the hub says the same.
"""

from __future__ import annotations

from collections.abc import Iterable

from sweep_core.handoffs.hub_evidence import HubEvidence
from sweep_core.handoffs.kernel.act import Act, ActKind
from sweep_core.handoffs.kernel.attempt import Attempt, from_row
from sweep_core.handoffs.kernel.result import Outcome, Result

HUB_KIND = "hub_check"  # the stored attempt kind of a hub check


def hub_act(repo_id: str) -> Act:
    """The act of asking the hub for ``repo_id`` (no cluster)."""
    return Act(ActKind.HUB_CHECK, "", repo_id)


def hub_result(ev: HubEvidence) -> Result:
    """The kernel Result of one hub check (the one conversion)."""
    seen = [f"commit {ev.sha}" if ev.sha else "", f"revision {ev.revision}" if ev.revision else ""]
    if ev.ok is not None and (ev.sha or ev.files):  # a listing was read (an absent repo lists nothing)
        seen.append(f"{ev.files} files listed")
    seen += [
        f"matched {', '.join(ev.matched)}" if ev.matched else "",
        f"missing {', '.join(ev.missing)}" if ev.missing else "",
    ]
    evidence = "; ".join(s for s in seen if s)
    if ev.ok is True:
        return Result(Outcome.OK, ev.reason, evidence)
    return Result(Outcome.FAILED if ev.ok is False else Outcome.UNKNOWN, ev.reason, evidence)


def hub_attempt(repo_id: str, result: Result, *, run: str, at: str, why: str = "") -> Attempt:
    """A hub check's answer as the attempt stored on the job it decided for."""
    extra = {"reason": result.reason[:300], "evidence": result.evidence[:300]}
    return Attempt(
        HUB_KIND, run=run, at=at, why=why or None, said=str(result.outcome), extra=extra, act=hub_act(repo_id)
    )


def stored_result(a: Attempt) -> Result | None:
    """A stored hub check's Result, its reason and evidence as stored (None: not settled)."""
    if a.outcome is None:
        return None
    return Result(a.outcome, a.get("reason") or (a.result.reason if a.result else ""), a.get("evidence"))


def latest_check(acts: Iterable[object], repo_id: str) -> Attempt | None:
    """The job's latest stored hub check of ``repo_id`` (its stored acts, oldest first; every stored
    attempt says its act: migration 0005 wrote it into those stored before)."""
    act = hub_act(repo_id)
    found = None
    for a in map(from_row, acts):
        if a.kind == HUB_KIND and a.act == act:
            found = a
    return found


def _answer(a: Attempt) -> tuple[Outcome | None, str]:
    """What a check's answer is compared by: its outcome and its evidence (commit, files, matched,
    missing); an unknown answer's wording (an error text) is not a change."""
    return a.outcome, a.get("evidence")


def worth_recording(acts: Iterable[object], new: Attempt, evidence_for_act: bool) -> bool:
    """Whether ``new`` (a hub_attempt) is stored on the job: never twice in one run; else when its
    answer differs from the latest stored check of the same repo, or when it is the evidence an act
    is taken on this run (``evidence_for_act``)."""
    if new.act is None:
        return False
    last = latest_check(acts, new.act.target)
    if last is None:
        return True
    if last.run == new.run:
        return False
    return evidence_for_act or _answer(last) != _answer(new)
