"""Task callables and the approval operator of the sweep_cancel DAG: validate, approve, scancel, record.

Airflow-facing wiring only: params, XCom and the human's answer in, ops.md and SSH wired into the
use-cases (sweep_core.handoffs.cancel.usecase; the guards are sweep_core.handoffs.cancel.plan), log
lines out. Nothing is cancelled unless validate said ``cancel`` for the job, a human chose Approve
(a timeout means Reject), the job still looks the same right before scancel, and ``dry_run`` is false.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.cancel.plan import CancelConfig, CancelDecision, approval_prompt, cancel_config
from sweep_core.handoffs.cancel.usecase import approval_text, cancel_record, scancel_approved, validate_jobs
from sweep_operators.handoff_io import iris_lister, iris_stopper, ops_loader, ssh_runner
from sweep_operators.handoff_record import append_record
from sweep_operators.task_ids import Cancel, DagId

log = logging.getLogger(__name__)


def _config(sweep_yaml: str) -> tuple[CancelConfig, Any]:
    config = load_sweep_config(sweep_yaml)
    return cancel_config(config.cancel), config.gather


def validate(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """One squeue per cluster (one SSH session); a decision per requested job, as XCom."""
    _, limits = _config(sweep_yaml)
    jobs = context["params"].get("jobs") or []
    decisions = validate_jobs(jobs, ops_loader(ops_dir), ssh_runner(limits, log), iris_lister())
    for d in decisions:
        log.info("%s %s %s %s: %s", d.verdict.upper(), d.request.cluster, d.request.job_id, d.request.name, d.reasons)
    return {"decisions": [d.to_dict() for d in decisions]}


def _decisions(context: dict[str, Any]) -> list[CancelDecision]:
    raw = context["ti"].xcom_pull(task_ids=Cancel.VALIDATE) or {}
    return [CancelDecision.from_dict(d) for d in raw.get("decisions", [])]


class CancelApprovalOperator(ApprovalOperator):
    """Approve/Reject of the validated jobs; subject and body carry the evidence.

    Both are built in ``execute`` from validate's XCom (never Jinja-rendered: job names and log
    lines come from the cluster). ``response_timeout`` comes from the ``approval_timeout_minutes``
    param, else sweep.yaml ``cancel.approval_timeout_minutes``; the default on timeout is Reject.
    """

    def __init__(self, *, sweep_yaml: str, **kwargs: Any) -> None:
        kwargs.setdefault("subject", "sweep_cancel: approve scancel?")
        super().__init__(defaults=self.REJECT, **kwargs)
        self.sweep_yaml = sweep_yaml

    def execute(self, context: Any) -> Any:
        decisions = _decisions(context)
        if not any(d.verdict == "cancel" for d in decisions):
            raise AirflowSkipException("no requested job passed validation: no approval asked, nothing cancelled")
        ccfg, _ = _config(self.sweep_yaml)
        minutes = float(context["params"].get("approval_timeout_minutes") or ccfg.approval_timeout_minutes)
        self.response_timeout = dt.timedelta(minutes=minutes)
        dry = bool(context["params"].get("dry_run", True))
        self.subject, self.body = approval_prompt(decisions, dry_run=dry, timeout_minutes=minutes)
        log.info("asking for approval (timeout %s min): %s\n%s", minutes, self.subject, self.body)
        return super().execute(context)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        """Keep the answer as XCom ``answer`` first: on Reject the skip ends the task before any
        return value is pushed."""
        if "error" not in event:
            who = event.get("responded_by_user") or {}
            answer = {
                "chosen_options": list(event.get("chosen_options") or []),
                "responded_by": who.get("name") if isinstance(who, dict) else None,
                "timed_out": bool(event.get("timedout")),
            }
            context["ti"].xcom_push(key=Cancel.ANSWER_KEY, value=answer)
        return super().execute_complete(context, event)


def _answer(context: dict[str, Any]) -> dict[str, Any]:
    return context["ti"].xcom_pull(task_ids=Cancel.APPROVE, key=Cancel.ANSWER_KEY) or {}


def approved(context: dict[str, Any]) -> bool:
    """Whether a human chose Approve (not the timeout default)."""
    answer = _answer(context)
    return answer.get("chosen_options") == [ApprovalOperator.APPROVE] and not answer.get("timed_out")


def scancel(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, dict[str, str]]:
    """After approval: re-check + scancel + sacct confirm, one SSH session per cluster; dry_run prints."""
    if not approved(context):  # the ApprovalOperator skips this task on Reject; belt and braces
        raise AirflowSkipException("not approved: nothing cancelled")
    ccfg, limits = _config(sweep_yaml)
    decisions = _decisions(context)
    results = scancel_approved(
        decisions,
        confirm_timeout_s=ccfg.confirm_timeout_s,
        dry_run=bool(context["params"].get("dry_run", True)),
        load_cluster=ops_loader(ops_dir),
        run_script=ssh_runner(limits, log),
        say=print,
        stop_iris=iris_stopper(),
    )
    names = {(d.request.cluster, d.request.job_id): d.request.name for d in decisions}
    for cluster, per_job in results.items():
        for job_id, res in per_job.items():
            log.info("%s %s %s: %s", cluster, job_id, names.get((cluster, job_id), "?"), res)
    return results


def record(sweep_yaml: str, **context: Any) -> str:
    """Print the outcome table and append it to the dated run log's actions section."""
    done = context["ti"].xcom_pull(task_ids=Cancel.SCANCEL) or {}
    table = cancel_record(_decisions(context), done, approval_text(_answer(context), approved(context)))
    print(table)
    return str(append_record(context, sweep_yaml, DagId.CANCEL, table))
