"""Task callables and the approval operator of the sweep_cancel DAG: validate, standing, approve,
scancel, record.

Airflow-facing wiring only: params, XCom and the human's answer in, ops.md and SSH wired into the
use-cases (sweep_core.handoffs.cancel.usecase and .relaunch; the guards are .plan and
.relaunch_policy), log lines out. Nothing is cancelled or relaunched unless validate said ``cancel``
for the job, a human chose Cancel / Cancel and relaunch (a timeout means Reject) or a standing
permission covers it, the job still looks the same right before, and ``dry_run`` is false.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from airflow.providers.common.compat.sdk import SkipMixin
from airflow.providers.standard.operators.hitl import HITLOperator
from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.cancel.plan import CancelConfig, CancelDecision, approval_prompt, asked, cancel_config
from sweep_core.handoffs.cancel.usecase import approval_text, cancel_record, validate_jobs
from sweep_core.handoffs.upload.salvage import salvage_acts
from sweep_core.ledger.acts import record_acts
from sweep_operators import relaunch_tasks
from sweep_operators.handoff_io import iris_lister, ops_loader, ssh_runner
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
    ccfg, _ = _config(sweep_yaml)
    load = ops_loader(ops_dir)
    running: dict[str, int] = {}
    decisions = validate_jobs(jobs, load, ssh_runner(limits, log), iris_lister(), running)
    relaunch_tasks.judge(decisions, ccfg, load, limits, sweep_yaml, str(context.get("run_id") or ""),
                         running=running, context=context)  # fmt: skip
    for d in decisions:
        log.info("%s %s %s %s: %s %s %s", d.verdict.upper(), d.request.cluster, d.request.job_id, d.request.name,
                 d.reasons, d.offer.get("why", ""), d.offer.get("brake", ""))  # fmt: skip
    return {"decisions": [d.to_dict() for d in decisions]}


def standing(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, dict[str, str]]:
    """The jobs a standing permission covers: relaunched or cancelled now, without waiting for a
    human (re-checked right before in the same script), announced in the task log and the record."""
    mine = [d for d in _decisions(context) if d.verdict == "cancel" and d.offer.get("standing")]
    if not mine:
        return {}
    for d in mine:
        log.warning("STANDING PERMISSION (%s): %s %s %s, no human asked", d.offer["standing"],
                    d.request.cluster, d.request.job_id, d.request.name)  # fmt: skip
    return _act(mine, True, ops_dir, sweep_yaml, context, "standing permission")


def _act(
    decisions: list[CancelDecision], relaunch: bool, ops_dir: str, sweep_yaml: str, context: dict[str, Any], by: str
) -> dict[str, dict[str, str]]:
    """relaunch_tasks.act wired to this run's config, ops.md and dry_run param (``by``: who approved)."""
    ccfg, limits = _config(sweep_yaml)
    dry_run = bool(context["params"].get("dry_run", True))
    kw = {"ccfg": ccfg, "limits": limits, "load": ops_loader(ops_dir), "sweep_yaml": sweep_yaml, "context": context}
    return relaunch_tasks.act(decisions, relaunch, dry_run=dry_run, by=by, **kw)


def _decisions(context: dict[str, Any]) -> list[CancelDecision]:
    raw = context["ti"].xcom_pull(task_ids=Cancel.VALIDATE) or {}
    return [CancelDecision.from_dict(d) for d in raw.get("decisions", [])]


CANCEL, RELAUNCH, REJECT = "Cancel", "Cancel and relaunch", "Reject"


class CancelApprovalOperator(HITLOperator, SkipMixin):
    """Cancel / Cancel and relaunch / Reject of the validated jobs no standing permission covers;
    subject and body carry the evidence (Cancel and relaunch is left out when no job may be relaunched).

    Both are built in ``execute`` from validate's XCom (never Jinja-rendered: job names and log
    lines come from the cluster). ``response_timeout`` comes from the ``approval_timeout_minutes``
    param, else sweep.yaml ``cancel.approval_timeout_minutes``; the default on timeout is Reject,
    which skips the act (as Airflow's ApprovalOperator does).
    """

    inherits_from_skipmixin = True
    CANCEL, RELAUNCH, REJECT = CANCEL, RELAUNCH, REJECT

    def __init__(self, *, sweep_yaml: str, **kwargs: Any) -> None:
        kwargs.setdefault("subject", "sweep_cancel: approve scancel?")
        super().__init__(options=[CANCEL, RELAUNCH, REJECT], defaults=REJECT, multiple=False, **kwargs)
        self.sweep_yaml = sweep_yaml

    def execute(self, context: Any) -> Any:
        decisions = _decisions(context)
        todo = asked(decisions)
        if not todo:
            raise AirflowSkipException("no job to ask about (none passed validation, or a standing permission acted)")
        ccfg, _ = _config(self.sweep_yaml)
        minutes = float(context["params"].get("approval_timeout_minutes") or ccfg.approval_timeout_minutes)
        self.response_timeout = dt.timedelta(minutes=minutes)
        dry = bool(context["params"].get("dry_run", True))
        self.subject, self.body = approval_prompt(decisions, dry_run=dry, timeout_minutes=minutes)
        if not any(d.offer.get("relaunch") for d in todo):
            self.options = [CANCEL, REJECT]
        log.info("asking for approval (timeout %s min): %s\n%s", minutes, self.subject, self.body)
        return super().execute(context)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        """Keep the answer as XCom ``answer`` first; on Reject (or the timeout default) skip the act."""
        if "error" not in event:
            who = event.get("responded_by_user") or {}
            answer = {
                "chosen_options": list(event.get("chosen_options") or []),
                "responded_by": who.get("name") if isinstance(who, dict) else None,
                "timed_out": bool(event.get("timedout")),
            }
            context["ti"].xcom_push(key=Cancel.ANSWER_KEY, value=answer)
        ret = super().execute_complete(context, event)
        if ret["chosen_options"][0] == REJECT:
            tasks = [t for t in context["task"].get_direct_relatives(upstream=False) if not t.is_teardown]
            self.log.info("Rejected: skipping %s", [t.task_id for t in tasks])
            self.skip(ti=context["ti"], tasks=tasks)
        return ret


def _answer(context: dict[str, Any]) -> dict[str, Any]:
    return context["ti"].xcom_pull(task_ids=Cancel.APPROVE, key=Cancel.ANSWER_KEY) or {}


def approved(context: dict[str, Any]) -> bool:
    """Whether a human chose Cancel or Cancel and relaunch (not the timeout default)."""
    answer = _answer(context)
    return answer.get("chosen_options") in ([CANCEL], [RELAUNCH]) and not answer.get("timed_out")


def scancel(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, dict[str, str]]:
    """After approval: re-check + scancel + sacct confirm (or, on Cancel and relaunch, evidence saved
    + re-check + requeue for the jobs offered it), one SSH session per cluster; dry_run prints."""
    if not approved(context):  # the approval operator skips this task on Reject; belt and braces
        raise AirflowSkipException("not approved: nothing cancelled")
    decisions = asked(_decisions(context))
    answer = _answer(context)
    chose = answer.get("chosen_options") == [RELAUNCH]
    results = _act(decisions, chose, ops_dir, sweep_yaml, context, str(answer.get("responded_by") or ""))
    names = {(d.request.cluster, d.request.job_id): d.request.name for d in decisions}
    for cluster, per_job in results.items():
        for job_id, res in per_job.items():
            log.info("%s %s %s: %s", cluster, job_id, names.get((cluster, job_id), "?"), res)
    return results


def record(sweep_yaml: str, **context: Any) -> str:
    """Print the outcome table, append it to the dated run log's actions section, and tell the
    ledger what was done or answered."""
    ti = context["ti"]
    done = ti.xcom_pull(task_ids=Cancel.SCANCEL) or {}
    stood = ti.xcom_pull(task_ids=Cancel.STANDING) or {}
    decisions, answer = _decisions(context), _answer(context)
    both = {c: {**done.get(c, {}), **stood.get(c, {})} for c in {*done, *stood}}
    table = cancel_record(decisions, both, approval_text(answer, approved(context)))
    print(table)
    dry = bool(context["params"].get("dry_run", True))
    relaunch_tasks.remember(sweep_yaml, context, decisions, done, answer, stood, dry)
    salvage = salvage_acts(decisions, both, dt.datetime.now(dt.UTC).isoformat())
    if salvage and not dry:  # sweep_cleanup uploads the last healthy step, then cleans up
        record_acts(relaunch_tasks.ledger_dir(sweep_yaml), salvage)
    told = relaunch_tasks.announce(sweep_yaml, context, decisions, both, dry)
    if told:
        table += "\nannounced: " + "; ".join(told) + "\n"
    return str(append_record(context, sweep_yaml, DagId.CANCEL, table))
