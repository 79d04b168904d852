"""Who may ask sweep_cancel to act, and on what evidence (pure).

A sweep_cancel run's ``conf`` is text anyone allowed to trigger the DAG can write, so nothing in it
is trusted. A job is a SWEEP request only when every record the sweep itself wrote agrees:

- the ledger entry's ``cancel_handoff`` (written by the run that handed it off, at hand-off time:
  the run, the flag's rule and action, the flag line as evidence) is the ledger's current cancel
  hand-off (``handoffs["cancel"]``; a dry-run sweep's record only backs a dry run);
- this sweep_cancel run is the very run the record names (``cancel_run``, the id the giver triggered,
  and ``cancel_user``, the user it runs as: "" for a scheduled sweep; a person who triggers a run by
  hand, choosing any run id, is named as its triggering user); a run id's shape proves nothing;
- the request names the job and action the hand-off named;
- the Parquet history of the sweep that flagged it holds that flag row (cluster, job, rule, action).

Its evidence is then the ledger's line, never the conf's. Anything else is a BY-HAND request: it
always asks a human (no standing permission covers it), its conf evidence is only shown as "given
by hand, not verified", and the user who triggered it cannot approve it (sweep_core.alerts.approvals).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sweep_core.ledger.cancel_handoff import KIND, HandoffRun, record_handoffs
from sweep_core.ledger.entries import Ledger

SWEEP, BY_HAND = "sweep", "by-hand"
FLAG_COLUMNS = ("cluster", "job_id", "name", "rule", "action")  # history flag rows read


@dataclass(frozen=True)
class Authority:
    """Whose request a job is: ``SWEEP`` (with the sweep's evidence) or ``BY_HAND``, and why."""

    kind: str
    evidence: str
    why: str
    rule: str = ""  # the flag's rule and severity as the sweep's record holds them ("" by hand)
    severity: str = ""

    @property
    def by_hand(self) -> bool:
        return self.kind != SWEEP


def _by_hand(why: str) -> Authority:
    return Authority(BY_HAND, "", f"by hand: {why}")


def judge(
    cluster: str,
    job_id: str,
    name: str,
    action: str,
    ledger: Ledger,
    flags_by_run: Mapping[str, Sequence[Mapping[str, Any]] | None],
    *,
    dry_run: bool,
    run: HandoffRun,
) -> Authority:
    """The authority of one requested job (see the module doc). ``flags_by_run``: run id -> that
    sweep's history flag rows (None = no history of it); ``run``: this sweep_cancel run."""
    e = ledger.jobs.get(f"{cluster}|{job_id}")
    rec = e.cancel_handoff if e else {}
    if not rec:
        return _by_hand("no sweep handed this job off (no hand-off record in the ledger)")
    giver = rec.get("run", "")
    if rec.get("dry_run") and not dry_run:
        return _by_hand(f"handed off by the dry-run sweep {giver}: that backs a dry run only")
    if not rec.get("dry_run") and e is not None and e.handoffs.get(KIND) != giver:
        return _by_hand(f"the hand-off of {giver} is no longer held in the ledger (released or replaced)")
    want = rec.get("cancel_run", "")
    if not want:
        return _by_hand(f"the hand-off of {giver} names no sweep_cancel run (recorded before runs were named)")
    if run.run_id != want:
        return _by_hand(f"this run is not the hand-off run {giver} triggered ({want})")
    if run.user != rec.get("cancel_user", ""):
        return _by_hand(
            f"this run was triggered by {run.user or 'no user'}, the hand-off run of {giver} by "
            f"{rec.get('cancel_user') or 'no user'}"
        )
    if rec.get("name") != name or rec.get("action") != action:
        return _by_hand(
            f"the request differs from the hand-off of {giver} (name {rec.get('name')!r}, action {rec.get('action')!r})"
        )
    flag_run, rule, flag_action = rec.get("flag_run", ""), rec.get("rule", ""), rec.get("flag_action", "")
    row_rule = rec.get("flag_rule", rule)  # a deep-dive KILL: its rule is not the flag row's ("" = any)
    rows = flags_by_run.get(flag_run)
    if rows is None:
        return _by_hand(f"no history of the sweep {flag_run} that flagged it")
    if not any(
        str(r.get("cluster")) == cluster
        and str(r.get("job_id")) == job_id
        and str(r.get("action")) == flag_action
        and (not row_rule or str(r.get("rule")) == row_rule)
        for r in rows
    ):
        return _by_hand(f"the history of sweep {flag_run} has no [{row_rule or '?'}] → {flag_action} flag of this job")
    via = f"; via {giver}" if giver != flag_run else ""
    evidence = rec.get("evidence", "")
    severity = rec.get("severity", "")  # (one stored before it kept it: given it by state migration 0005)
    why = f"handed off by sweep {flag_run} ([{rule}] → {flag_action}{via})"
    return Authority(SWEEP, evidence, why, rule, severity)


def flag_runs(ledger: Ledger, keys: Iterable[tuple[str, str]]) -> list[str]:
    """The sweeps whose history flag rows back the hand-offs of these (cluster, job id) jobs."""
    out: list[str] = []
    for cluster, job_id in keys:
        e = ledger.jobs.get(f"{cluster}|{job_id}")
        run = (e.cancel_handoff.get("flag_run") or "") if e else ""
        if run and run not in out:
            out.append(run)
    return out


def authorize(
    decisions: Sequence[Any],
    ledger: Ledger,
    flags_by_run: Mapping[str, Sequence[Mapping[str, Any]] | None],
    *,
    dry_run: bool,
    run: HandoffRun,
) -> None:
    """Each plan.CancelDecision (in place): ``by_hand``, ``authority`` and the request's evidence
    and flag rule and severity (the sweep's, "" by hand); the conf's evidence stays only in
    ``request.asked_evidence``."""
    for d in decisions:
        r = d.request
        a = judge(r.cluster, r.job_id, r.name, r.action, ledger, flags_by_run, dry_run=dry_run, run=run)
        d.request = replace(r, evidence=a.evidence, rule=a.rule, severity=a.severity)
        d.by_hand, d.authority = a.by_hand, a.why


def give_kills(
    ledger: Ledger,
    jobs: Iterable[Mapping[str, Any]],
    run_id: str,
    *,
    dry_run: bool,
    flag_run: str | None = None,
    cancel_run: HandoffRun | None = None,
) -> list[str]:
    """A deep-dive run's KILL requests as cancel hand-offs it gives (in place): backed by the sweep
    that handed the job to the deep-dive (its ``deep-dive`` flag row, whichever rule; ``flag_run``:
    that sweep, read off the ledger when None). A job no sweep handed to the deep-dive (a deep-dive
    run by hand) gets no record: its cancel is by hand. A job whose cancel request another run
    gave and no answer released yet is not given again. ``cancel_run``: the sweep_cancel run this
    deep-dive run triggers (recorded: only that run is the sweep's). The lines said."""
    from sweep_core.ledger.given import mark_given, split_given
    from sweep_core.records.vocab import Action

    said = []
    for job in jobs:
        e = ledger.jobs.get(f"{job['cluster']}|{job['job_id']}")
        run = flag_run if flag_run is not None else (e.handoffs.get("deep_dive", "") if e else "")
        if not run:
            said.append(f"{job['cluster']} {job['job_id']}: no sweep handed it to the deep-dive: its cancel is by hand")
            continue
        todo, given = split_given(ledger, KIND, [job], run_id)
        if not todo:
            said += given
            continue
        if not dry_run:
            mark_given(ledger, KIND, [job], run_id)
        record_handoffs(
            ledger,
            [job],
            run_id,
            dry_run=dry_run,
            flag_run=run,
            flag_action=Action.DEEP_DIVE.value,
            flag_rule="",
            cancel_run=cancel_run,
        )
        said.append(f"{job['cluster']} {job['job_id']}: cancel handed off by {run_id} (flagged by sweep {run})")
    return said
