"""What the ledger keeps of a sweep_cancel run (pure): the acts of the relaunches and cancels that ran
(read off their typed outcomes, handoffs.cancel.outcome; each says its kernel act: scancel, stop,
requeue or sbatch, and its job), and besides them a Reject (asked again
when the evidence grows), an unanswered request (asked again next sweep), a RECURRING escalation
and a series' "cap reached" escalation (once per series). A relaunched, rejected, unanswered or
moved job's cancel hand-off is released, so the next sweep may hand it again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sweep_core.handoffs.cancel.outcome import ActOutcome, Did
from sweep_core.handoffs.cancel.plan import CancelDecision, job_key
from sweep_core.handoffs.kernel.attempt import stored
from sweep_core.ledger.acts import ActKind, link_acts
from sweep_core.ledger.verdicts import kill_reject_fields
from sweep_core.ledger.view import JobView, LedgerView

LedgerAct = tuple[str, str, str, dict[str, Any]]  # (cluster, job id, name, act)


def act_base(d: CancelDecision, run_id: str, at: str) -> dict[str, str]:
    """The fields every act of this decision carries: run, time, the step and silence judged, series."""
    ev = d.evidence or {}
    silent = ev["remote_now"] - ev["last_output"] if ev.get("last_output") and ev.get("remote_now") else ""
    step = ev.get("step")
    return {
        "run": run_id,
        "at": at,
        "step": "" if step is None else str(step),
        "silent_s": str(silent),
        "series": str(d.offer.get("series", "")),
    }


def outcome_acts(
    decisions: list[CancelDecision], done: Mapping[str, ActOutcome], run_id: str, at: str, by: str
) -> tuple[list[LedgerAct], list[dict[str, str]]]:
    """The ledger acts of the relaunches and cancels that ran (``done``: job id -> outcome) and the
    jobs whose cancel hand-off is released (relaunched: handed again when they wedge again). A
    relaunch whose ops.md command failed after the cancel counts as a relaunch attempt; one sent
    whose answer was lost (UNKNOWN) is recorded and counted, never sent again."""
    acts: list[LedgerAct] = []
    release = []
    for d in decisions:
        r, res = d.request, done.get(d.request.job_id)
        if res is None:
            continue
        who = "standing permission" if d.offer.get("standing") else by
        base = {
            **act_base(d, run_id, at),
            "by": who,
            "result": res.text,
            "standing": str(d.offer.get("standing") or ""),
            "did": res.did.value,  # an UNKNOWN one is reconciled by the next sweep that lists the job (ledger.reconcile)
        }
        if res.relaunch_attempt:
            fields = {**base, "kind": ActKind.RELAUNCH, "new_job_id": res.new_job_id or None}
            release.append({"cluster": r.cluster, "job_id": r.job_id, "name": r.name})
        elif res.cancelled:
            fields = {**base, "kind": ActKind.CANCEL}
        else:
            continue
        said = res.kernel_act(r.cluster, r.job_id)  # the act it is of (kernel.act), stored with it
        acts.append((r.cluster, r.job_id, r.name, stored(fields, said)))
        if res.relaunch_attempt and res.new_job_id and res.new_job_id != r.job_id:  # the same run to the next sweep
            acts += link_acts(r.cluster, r.job_id, res.new_job_id, r.name, base)
    return acts, release


def _escalations(d: CancelDecision, job: JobView, base: dict[str, str]) -> list[LedgerAct]:
    r, out = d.request, []
    if d.offer.get("recurring"):
        out.append((r.cluster, r.job_id, r.name, {**base, "kind": ActKind.ESCALATED, "why": d.offer["why"]}))
    if d.offer.get("capped") and not job.series.escalated:
        out.append(
            (r.cluster, r.job_id, r.name, {**base, "kind": ActKind.ESCALATED, "why": d.offer["why"], "cap": "1"})
        )
    return out


def _answered(
    d: CancelDecision, res: ActOutcome | None, answer: Mapping[str, Any], job: JobView, base: dict[str, str]
) -> tuple[list[LedgerAct], list[dict[str, str]]]:
    """A job no act recorded: moved (released), a Reject, or no answer (released; a standing one: nothing)."""
    r = d.request
    item = {"cluster": r.cluster, "job_id": r.job_id, "name": r.name}
    if res is not None and res.did == Did.LEFT_ALONE:  # it moved: the next sweep hands it again if it wedges again
        return [], [item]
    if d.offer.get("standing"):
        return [], []
    if answer.get("timed_out") or answer.get("refused") or not answer:
        return [(r.cluster, r.job_id, r.name, {**base, "kind": ActKind.UNANSWERED})], [item]
    if (answer.get("chosen_options") or [""])[0] == "Reject":  # a deep-dive KILL's Reject keeps its weight
        extra = kill_reject_fields(r.rule, job.verdict)
        by = str(answer.get("responded_by") or "")
        return [(r.cluster, r.job_id, r.name, {**base, **extra, "kind": ActKind.REJECT, "by": by})], [item]
    return [], []


def remember_acts(
    decisions: list[CancelDecision],
    outcomes: Mapping[str, Mapping[str, ActOutcome]],
    answers: Mapping[str, Mapping[str, Any]],
    view: LedgerView,
    run_id: str,
    at: str,
) -> tuple[list[LedgerAct], list[dict[str, str]]]:
    """(acts, released jobs) of this run besides the acts already recorded per cluster (the module
    doc). ``outcomes``: cluster -> job id -> outcome (approved and standing acts); ``answers``: job
    key -> that job's own answer; ``view``: the ledger folded for these jobs after the acts."""
    acts: list[LedgerAct] = []
    release: list[dict[str, str]] = []
    for d in decisions:
        if d.verdict != "cancel":
            continue
        r = d.request
        answer = answers.get(job_key(r.cluster, r.job_id)) or {}
        job = view.jobs.get(f"{r.cluster}|{r.job_id}") or JobView(r.cluster, r.job_id, r.name)
        base = act_base(d, run_id, at)
        acts += _escalations(d, job, base)
        res = outcomes.get(r.cluster, {}).get(r.job_id)
        recorded = any(a.run == run_id and a.kind in (ActKind.RELAUNCH, ActKind.CANCEL) for a in job.acts)
        mine, freed = outcome_acts(
            [d], {r.job_id: res} if res else {}, run_id, at, str(answer.get("responded_by") or "")
        )
        if recorded:
            continue
        if mine:
            acts, release = acts + mine, release + freed
            continue
        more, freed = _answered(d, res, answer, job, base)
        acts, release = acts + more, release + freed
    return acts, release
