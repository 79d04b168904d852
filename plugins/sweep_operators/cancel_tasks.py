"""Task callables and the approval operator of the sweep_cancel DAG: validate, standing, approve,
scancel, record.

Airflow-facing wiring only: params, XCom and the human's answer in, ops.md and SSH wired into the
use-cases (sweep_core.handoffs.cancel.usecase and handoffs.relaunch.usecase; the guards are
cancel.plan and relaunch.plan; whose request a job is, cancel.authority), log lines out. Nothing is cancelled or
relaunched unless validate said ``cancel`` for the job, an approver chose Cancel / Cancel and
relaunch for THAT job (a timeout means Reject; the requester's answer does not count) or a
standing permission covers it (the sweep's own requests only), the job still looks the same right
before, and ``dry_run`` is false.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from airflow.providers.standard.operators.hitl import HITLOperator
from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.alerts.approvals import answer_counts, hitl_assignees, may_answer, responder_key, who_may
from sweep_core.config.handoffs_schema import MAX_APPROVAL_MINUTES
from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.cancel.outcome import Outcomes, from_xcom, to_xcom
from sweep_core.handoffs.cancel.plan import (
    CANCEL,
    OVERRIDES_FIELD,
    REJECT,
    RELAUNCH,
    RELAUNCH_WITH,
    CancelConfig,
    CancelDecision,
    approval_options,
    approval_prompt,
    approved,
    approved_batches,
    asked,
    cancel_config,
    job_key,
    override_answer,
    standing_acts,
)
from sweep_core.handoffs.cancel.usecase import approval_text, cancel_record, validate_jobs
from sweep_core.handoffs.upload.salvage import salvage_acts
from sweep_core.ledger.acts import record_acts
from sweep_core.rules.cleanup import rl_flavor_of_name
from sweep_core.safe.text import md_text
from sweep_operators import relaunch_tasks
from sweep_operators.cancel_authority import authorize_decisions
from sweep_operators.handoff_io import iris_lister, ops_loader, ssh_runner
from sweep_operators.handoff_record import append_record
from sweep_operators.identity import ids_are_names, requester
from sweep_operators.task_ids import Cancel, DagId

log = logging.getLogger(__name__)


def _config(sweep_yaml: str) -> tuple[CancelConfig, Any]:
    config = load_sweep_config(sweep_yaml)
    return cancel_config(config.cancel), config.gather


def validate(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """One squeue per cluster (one SSH session); whose request each job is (the sweep's records,
    never the conf); a decision per requested job, the jobs to ask about one by one, and who
    triggered the run, as XCom."""
    ccfg, limits = _config(sweep_yaml)
    params = context["params"]
    jobs = params.get("jobs") or []
    load = ops_loader(ops_dir)
    running: dict[str, int] = {}
    decisions = validate_jobs(jobs, load, ssh_runner(limits, log), iris_lister(), running)
    run_id, who = str(context.get("run_id") or ""), requester(context)
    authorize_decisions(decisions, sweep_yaml, run_id, who, dry_run=bool(params.get("dry_run", True)))
    relaunch_tasks.judge(decisions, ccfg, load, limits, sweep_yaml, run_id, running=running, context=context)
    _log_decisions(decisions, who)
    keys = [job_key(d.request.cluster, d.request.job_id) for d in asked(decisions)]
    return {"decisions": [d.to_dict() for d in decisions], "asked": keys, "requested_by": who}


def _log_decisions(decisions: list[Any], who: str) -> None:
    """One task-log line per decision; a warning for each job requested by hand."""
    for d in decisions:
        log.info(
            "%s %s %s %s: %s %s %s",
            d.verdict.upper(),
            d.request.cluster,
            d.request.job_id,
            d.request.name,
            d.reasons,
            d.offer.get("why", ""),
            d.offer.get("brake", ""),
        )
        if d.by_hand and d.request.cluster != "?":
            log.warning(
                "BY HAND (requested by %s) %s %s %s: %s; evidence given by hand, not used: %r",
                who or "?",
                d.request.cluster,
                d.request.job_id,
                d.request.name,
                d.authority,
                d.request.asked_evidence[:200],
            )


def to_ask(**context: Any) -> list[str]:
    """The job keys the approval task is mapped over: one human answer per job."""
    return list(_validated(context).get("asked") or [])


def standing(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """The jobs a standing permission covers (the sweep's requests only, never by hand): relaunched
    or cancelled now, without waiting for a human (re-checked right before in the same script),
    announced in the task log and the record."""
    mine = standing_acts(_decisions(context))
    if not mine:
        return {}
    for d in mine:
        log.warning(
            "STANDING PERMISSION (%s): %s %s %s, no human asked",
            d.offer["standing"],
            d.request.cluster,
            d.request.job_id,
            d.request.name,
        )
    return to_xcom(_act(mine, True, ops_dir, sweep_yaml, context, "standing permission"))


def _act(
    decisions: list[CancelDecision], relaunch: bool, ops_dir: str, sweep_yaml: str, context: dict[str, Any], by: str
) -> Outcomes:
    """relaunch_tasks.act wired to this run's config, ops.md and dry_run param (``by``: who approved)."""
    ccfg, limits = _config(sweep_yaml)
    dry_run = bool(context["params"].get("dry_run", True))
    kw = {"ccfg": ccfg, "limits": limits, "load": ops_loader(ops_dir), "sweep_yaml": sweep_yaml, "context": context}
    return relaunch_tasks.act(decisions, relaunch, dry_run=dry_run, by=by, **kw)


def _validated(context: dict[str, Any]) -> dict[str, Any]:
    return context["ti"].xcom_pull(task_ids=Cancel.VALIDATE, key="return_value", map_indexes=-1) or {}


def _decisions(context: dict[str, Any]) -> list[CancelDecision]:
    return [CancelDecision.from_dict(d) for d in _validated(context).get("decisions", [])]


class CancelApprovalOperator(HITLOperator):
    """Cancel / Cancel and relaunch / Reject of ONE validated job (mapped: one answer per job) no
    standing permission covers; subject and body carry its evidence and whose request it is
    (Cancel and relaunch is left out when it may not be relaunched).

    Both are built in ``execute`` from validate's XCom (never Jinja-rendered: job names and log
    lines come from the cluster). Who may answer: sweep.yaml ``notify.approver_users`` for its
    cluster (HITL ``assigned_users``, enforced by Airflow where ids are names), never the user who
    triggered the run (left out of them, and an answer from them is not counted). ``response_timeout``: the
    ``approval_timeout_minutes`` param, else sweep.yaml ``cancel.approval_timeout_minutes`` (at most
    MAX_APPROVAL_MINUTES); no answer = Reject. The answer is XCom ``answer`` (per map index).
    """

    CANCEL, RELAUNCH, RELAUNCH_WITH, REJECT = CANCEL, RELAUNCH, RELAUNCH_WITH, REJECT

    def __init__(self, *, sweep_yaml: str, job_key: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("subject", "sweep_cancel: approve scancel?")
        # set again in execute; given here so HITLOperator keeps the task's execution_timeout
        # (without a response_timeout it would take the execution_timeout as one and clear it)
        kwargs.setdefault("response_timeout", dt.timedelta(minutes=MAX_APPROVAL_MINUTES))
        super().__init__(options=[CANCEL, RELAUNCH, RELAUNCH_WITH, REJECT], defaults=REJECT, multiple=False, **kwargs)
        self.sweep_yaml = sweep_yaml
        self.job_key = job_key

    def _mine(self, context: Any) -> tuple[CancelDecision | None, str, list[str] | None]:
        """(this job's decision, the run's requester, the user names that may answer; None = any)."""
        raw = _validated(context)
        who = str(raw.get("requested_by") or "")
        mine = [d for d in asked(_decisions(context)) if job_key(d.request.cluster, d.request.job_id) == self.job_key]
        if not mine:
            return None, who, None
        users = load_sweep_config(self.sweep_yaml).notify.approver_users
        return mine[0], who, may_answer(mine[0].request.cluster, users, requester=who)

    def execute(self, context: Any) -> Any:
        d, who, users = self._mine(context)
        if d is None:
            raise AirflowSkipException(f"{self.job_key}: not a job to ask about")
        if users == []:
            why = f"no approver of {d.request.cluster} other than {who}, who requested it: nothing done"
            context["ti"].xcom_push(key=Cancel.ANSWER_KEY, value={"job": self.job_key, "refused": why})
            raise AirflowSkipException(why)
        ccfg, _ = _config(self.sweep_yaml)
        minutes = min(
            float(context["params"].get("approval_timeout_minutes") or ccfg.approval_timeout_minutes),
            float(MAX_APPROVAL_MINUTES),
        )
        self.response_timeout = dt.timedelta(minutes=minutes)
        self.assigned_users = hitl_assignees(users, ids_are_names=ids_are_names())
        dry = bool(context["params"].get("dry_run", True))
        self.subject, body = approval_prompt([d], dry_run=dry, timeout_minutes=minutes, requester=who)
        self.body = body + "\n" + md_text(who_may(users, who))
        self.options = approval_options(d)
        if RELAUNCH_WITH in self.options:  # the corrected setting, validated when answered (never a shell)
            self.params = _overrides_form()
        log.info("asking for approval of %s (timeout %s min): %s\n%s", self.job_key, minutes, self.subject, self.body)
        return super().execute(context)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        """Keep the answer as XCom ``answer`` first: whether it counts (the requester's, or a user's
        not allowed to answer, does not: it acts on nothing); people compared by user name."""
        if "error" not in event:
            d, who, users = self._mine(context)
            responder = responder_key(event.get("responded_by_user"))
            timed_out = bool(event.get("timedout"))
            ok, why = answer_counts(responder, users, requester=who, timed_out=timed_out)
            chosen = list(event.get("chosen_options") or [])
            overrides, bad = override_answer(chosen, event.get("params_input"))
            why = why or bad
            answer = {
                "job": self.job_key,
                "chosen_options": chosen,
                "overrides": list(overrides),
                "responded_by": responder or None,
                "timed_out": timed_out,
                "refused": why,
            }
            if why:
                log.error("%s: %s", self.job_key, why)
            context["ti"].xcom_push(key=Cancel.ANSWER_KEY, value=answer)
        return super().execute_complete(context, event)


def _overrides_form() -> Any:
    """The approval form's field for Cancel and relaunch with …: the ops.md command's overrides."""
    from airflow.sdk import Param
    from airflow.sdk.definitions.param import ParamsDict

    field = Param(
        "",
        type="string",
        maxLength=4000,
        title="Corrected setting (for Cancel and relaunch with …)",
        description="overrides for the ops.md relaunch command: key=value ..., e.g. "
        "actor.lr=1e-6 rollout.n=8; a bad one is refused and nothing is done",
    )
    return ParamsDict({OVERRIDES_FIELD: field})


def _answers(context: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Job key -> the answer its approval task kept."""
    got = context["ti"].xcom_pull(task_ids=Cancel.APPROVE, key=Cancel.ANSWER_KEY)
    got = [got] if isinstance(got, dict) else list(got or [])
    return {str(a["job"]): a for a in got if isinstance(a, dict) and a.get("job")}


def scancel(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """After approval, per job: re-check + scancel + sacct confirm (or, on Cancel and relaunch,
    evidence kept + re-check + requeue for the jobs offered it), one SSH session per cluster;
    dry_run prints. A job whose answer was Reject, timed out or did not count is left alone
    (handoffs.cancel.plan.approved_batches: one act call per answer and approver)."""
    batches = approved_batches(asked(_decisions(context)), _answers(context))
    if not batches:
        raise AirflowSkipException("no job approved: nothing cancelled")
    results: Outcomes = {}
    for (relaunch, by), batch in batches.items():
        for cluster, per in _act(batch, relaunch, ops_dir, sweep_yaml, context, by).items():
            results.setdefault(cluster, {}).update(per)
    for cluster, per_job in results.items():
        for job_id, res in per_job.items():
            log.info("%s %s: %s", cluster, job_id, res)
    return to_xcom(results)


def record(sweep_yaml: str, **context: Any) -> str:
    """Print the outcome table, append it to the dated run log's actions section, and tell the
    ledger what was done or answered (per job)."""
    ti = context["ti"]
    done = from_xcom(ti.xcom_pull(task_ids=Cancel.SCANCEL))
    stood = from_xcom(ti.xcom_pull(task_ids=Cancel.STANDING))
    decisions, answers = _decisions(context), _answers(context)
    both = {c: {**done.get(c, {}), **stood.get(c, {})} for c in {*done, *stood}}
    said = {k: a.get("refused") or approval_text(a, approved(a)) for k, a in answers.items()}
    tags = load_sweep_config(sweep_yaml).rules.agentic_rl_tags  # a salvage is in the job's own flavor
    flavor_of = lambda name: rl_flavor_of_name(name, tags)  # noqa: E731
    table = cancel_record(decisions, both, said, flavor_of)
    print(table)
    dry = bool(context["params"].get("dry_run", True))
    relaunch_tasks.remember(sweep_yaml, context, decisions, done, answers, stood, dry)
    salvage = salvage_acts(decisions, both, dt.datetime.now(dt.UTC).isoformat(), flavor_of)
    if salvage and not dry:  # sweep_cleanup uploads the last healthy step, then cleans up
        record_acts(relaunch_tasks.ledger_dir(sweep_yaml), salvage)
    told = relaunch_tasks.announce(sweep_yaml, context, decisions, both, dry)
    if told:
        table += "\nannounced: " + "; ".join(told) + "\n"
    return str(append_record(context, sweep_yaml, DagId.CANCEL, table))
