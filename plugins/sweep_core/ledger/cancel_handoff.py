"""The ledger's record of each cancel hand-off a sweep gives: the run, the flag it came from (its
rule, severity and action, as handoffs.flag_record.FlagRecord carries them), the evidence it was
judged on, and the exact sweep_cancel run it triggers (its run id and the user it runs as).
``sweep_cancel`` trusts this record, never a conf or a run id's shape (handoffs.cancel.authority)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sweep_core.ledger.entries import Ledger, LedgerEntry

KIND = "cancel"  # the per-job hand-off kind (ledger.runs.PER_JOB)


@dataclass(frozen=True)
class HandoffRun:
    """A sweep_cancel run as Airflow names it: its run id and the user it runs as (the DAG run's
    ``triggering_user_name``; "" = none: a scheduled sweep and the runs it triggers)."""

    run_id: str
    user: str = ""


def handoff_record(
    job: Mapping[str, Any],
    run_id: str,
    *,
    dry_run: bool,
    flag_run: str = "",
    flag_action: str = "",
    flag_rule: str | None = None,
    cancel_run: HandoffRun | None = None,
) -> dict[str, str]:
    """The ledger's record of one cancel hand-off the run ``run_id`` gives (``job``: the conf entry
    that run built from its own flag). ``flag_run``/``flag_action``: the sweep whose history flag
    row backs it and that row's action, when they are not this run and this action (a deep-dive);
    ``flag_rule``: that row's rule when it is not the job's ("" = any rule with that action);
    ``cancel_run``: the sweep_cancel run ``run_id`` triggers for it (None: none recorded, and no run
    is then the sweep's)."""
    action = str(job.get("action") or "")
    extra = {} if flag_rule is None else {"flag_rule": flag_rule}
    if cancel_run is not None:
        extra |= {"cancel_run": cancel_run.run_id, "cancel_user": cancel_run.user}
    return extra | {
        "run": run_id,
        "flag_run": flag_run or run_id,
        "rule": str(job.get("rule") or ""),
        "severity": str(job.get("severity") or ""),
        "action": action,
        "flag_action": flag_action or action,
        "name": str(job.get("name") or ""),
        "evidence": str(job.get("evidence") or ""),
        "dry_run": "true" if dry_run else "",
    }


def record_handoffs(
    ledger: Ledger, jobs: Iterable[Mapping[str, Any]], run_id: str, *, dry_run: bool, **flag: Any
) -> Ledger:
    """Each job's ``cancel_handoff`` set to what ``run_id`` hands off (in place). A dry run never
    replaces the record of a real hand-off still held (``handoffs["cancel"]`` set)."""
    for job in jobs:
        key = f"{job['cluster']}|{job['job_id']}"
        e = ledger.jobs.get(key)
        if e is None:
            e = ledger.jobs[key] = LedgerEntry(str(job["cluster"]), str(job["job_id"]), str(job.get("name") or ""))
        if dry_run and e.handoffs.get(KIND) and e.cancel_handoff and not e.cancel_handoff.get("dry_run"):
            continue
        e.cancel_handoff = handoff_record(job, run_id, dry_run=dry_run, **flag)
    return ledger
