"""Task callables and the approval operator of the sweep_cancel DAG: validate, approve, scancel, record.

Airflow-facing wiring only; the guards are sweep_core.handoffs.cancel.plan, the remote scripts
sweep_core.handoffs.cancel.remote. Nothing is cancelled unless validate said ``cancel`` for the job, a
human chose Approve (a timeout means Reject), the job still looks the same right before scancel,
and ``dry_run`` is false.
"""

from __future__ import annotations

import datetime as dt
import logging
import shlex
from collections import defaultdict
from typing import Any

from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.config.ops import OpsConfigError, load_cluster
from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.render import box_table
from sweep_core.handoffs.cancel.plan import (
    CancelConfig,
    CancelDecision,
    CancelRequest,
    approval_prompt,
    cancel_config,
    outcome,
)
from sweep_core.handoffs.cancel.plan import validate as decide
from sweep_core.handoffs.cancel.remote import ApprovedJob, build_scancel_script, build_validate_script, read_scancel
from sweep_core.slurm.gather import new_marker
from sweep_core.slurm.parse import SlurmOutputError, parse_squeue
from sweep_operators.cluster_ssh import run_checked
from sweep_operators.handoff_record import append_record

log = logging.getLogger(__name__)


def _config(sweep_yaml: str) -> tuple[CancelConfig, Any]:
    config = load_sweep_config(sweep_yaml)
    return cancel_config(config.cancel), config.gather


def validate(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """One squeue per cluster (one SSH session); a decision per requested job, as XCom."""
    _, limits = _config(sweep_yaml)
    decisions: list[CancelDecision] = []
    by_cluster: dict[str, list[CancelRequest]] = defaultdict(list)
    for raw in context["params"].get("jobs") or []:
        try:
            req = CancelRequest.from_dict(raw)
        except (ValueError, TypeError) as exc:
            log.warning("bad job entry: %s", exc)
            bad = CancelRequest("?", "?", str(raw)[:60], "?")
            decisions.append(CancelDecision(bad, "blocked", [str(exc)]))
            continue
        by_cluster[req.cluster].append(req)
    for cluster, reqs in by_cluster.items():
        try:
            cfg = load_cluster(ops_dir, cluster)
        except OpsConfigError as exc:
            decisions += [CancelDecision(r, "blocked", [f"ops.md: {exc}"]) for r in reqs]
            continue
        if cfg.scheduler != "slurm" or cfg.status != "active":
            why = f"{cluster} is {cfg.scheduler}/{cfg.status}: not an active SLURM cluster, not contacted"
            decisions += [CancelDecision(r, "blocked", [why]) for r in reqs]
            continue
        marker = new_marker()
        out, problem = run_checked(cfg, limits, log, build_validate_script(cfg.user, marker), marker, "cancel validate")
        rows = None
        if out is not None and not problem:
            sq = out.get("squeue")
            try:
                rows = parse_squeue(sq) if sq is not None else None
                problem = "" if sq is not None else "no squeue record"
            except SlurmOutputError as exc:
                problem = str(exc)
        decisions += decide(reqs, rows, problem)
    for d in decisions:
        log.info("%s %s %s %s: %s", d.verdict.upper(), d.request.cluster, d.request.job_id, d.request.name, d.reasons)
    return {"decisions": [d.to_dict() for d in decisions]}


def _decisions(context: dict[str, Any]) -> list[CancelDecision]:
    raw = context["ti"].xcom_pull(task_ids="validate") or {}
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
            context["ti"].xcom_push(key="answer", value=answer)
        return super().execute_complete(context, event)


def _answer(context: dict[str, Any]) -> dict[str, Any]:
    return context["ti"].xcom_pull(task_ids="approve", key="answer") or {}


def approved(context: dict[str, Any]) -> bool:
    """Whether a human chose Approve (not the timeout default)."""
    answer = _answer(context)
    return answer.get("chosen_options") == [ApprovalOperator.APPROVE] and not answer.get("timed_out")


def _scancel_line(user: str, j: ApprovedJob) -> str:
    q = shlex.quote
    return f"scancel -u {q(user)} -n {q(j.name)} -t {j.state} -- {j.job_id}"


def scancel(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, dict[str, str]]:
    """After approval: re-check + scancel + sacct confirm, one SSH session per cluster; dry_run prints."""
    if not approved(context):  # the ApprovalOperator skips this task on Reject; belt and braces
        raise AirflowSkipException("not approved: nothing cancelled")
    ccfg, limits = _config(sweep_yaml)
    todo = [d for d in _decisions(context) if d.verdict == "cancel"]
    dry = bool(context["params"].get("dry_run", True))
    results: dict[str, dict[str, str]] = {}
    for cluster in sorted({d.request.cluster for d in todo}):
        cfg = load_cluster(ops_dir, cluster)
        mine = [d for d in todo if d.request.cluster == cluster]
        jobs = [ApprovedJob(d.request.job_id, d.request.name, d.state) for d in mine]
        if dry:
            for j in jobs:
                print(f"DRY RUN: would run on {cluster}: {_scancel_line(cfg.user, j)}")
            results[cluster] = {j.job_id: "would scancel (dry run)" for j in jobs}
            continue
        marker = new_marker()
        script = build_scancel_script(cfg.user, jobs, marker, ccfg.confirm_timeout_s)
        out, problem = run_checked(cfg, limits, log, script, marker, "scancel")
        per_job, sacct, sacct_problem = read_scancel(out, jobs) if out else ([(None, "")] * len(jobs), {}, "")
        results[cluster] = {}
        for d, (rc, text) in zip(mine, per_job, strict=True):
            res = outcome(d, rc, text, sacct)
            if rc is None and problem:
                res = f"not run: {problem}"
            elif res.startswith("scancel sent") and sacct_problem:
                res += f" (sacct: {sacct_problem[:120]})"
            results[cluster][d.request.job_id] = res
            log.info("%s %s %s: %s", cluster, d.request.job_id, d.request.name, res)
    return results


def _approval_text(context: dict[str, Any]) -> str:
    answer = _answer(context)
    if not answer:
        return "no approval (not asked, or the approval task failed)"
    if answer.get("timed_out"):
        return "approval timed out: rejected"
    if approved(context):
        return f"approved by {answer.get('responded_by') or '?'}"
    return f"rejected by {answer.get('responded_by') or '?'}"


def record(sweep_yaml: str, **context: Any) -> str:
    """Print the outcome table and append it to the dated run log's actions section."""
    decisions = _decisions(context)
    done = context["ti"].xcom_pull(task_ids="scancel") or {}
    answer = _approval_text(context)
    rows = []
    for d in decisions:
        r = d.request
        if d.verdict != "cancel":
            result, why = "blocked: left alone", "; ".join(d.reasons)
        else:
            result = done.get(r.cluster, {}).get(r.job_id) or f"not cancelled: {answer}"
            why = f"{answer}; evidence: {r.evidence}" if r.evidence else answer
            if result == "cancelled" and r.action == "cancel+salvage":
                result += "; salvage next (rl-agentic-job-cleanup)"
        rows.append([r.cluster, r.job_id, r.name, r.action, d.state or "-", result, why])
    table = box_table(
        ["Cluster", "Job", "Name", "Action", "State", "Outcome", "Approval / why"],
        rows,
        [None, None, 40, None, None, 40, 70],
    )
    print(table)
    return str(append_record(context, sweep_yaml, "sweep_cancel", table))
