"""Task callables and the approval operator of the sweep_hygiene DAG: validate, approve, pull,
record. Airflow-facing wiring only (each cluster's ops.md and SSH into
sweep_core.handoffs.hygiene.usecase): the triage is committed in the LOCAL clone only (never pushed,
never on a cluster); nothing is pulled unless an approver allowed for the cluster (sweep.yaml
``notify.approver_users``), not the user who triggered the run, chose that cluster, the gates read again right before still hold, and
``dry_run`` is false.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from airflow.providers.standard.operators.hitl import HITLOperator
from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.alerts.approvals import hitl_answer, hitl_assignees, may_answer, who_may
from sweep_core.config.handoffs_schema import MAX_APPROVAL_MINUTES
from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.hygiene.usecase import approval_body, pull, record_lines, validate_cluster
from sweep_core.handoffs.ports import active_slurm
from sweep_core.safe.text import md_text
from sweep_operators.handoff_io import ops_loader, ssh_runner
from sweep_operators.handoff_record import append_record
from sweep_operators.identity import ids_are_names, requester
from sweep_operators.task_ids import DagId, Hygiene

log = logging.getLogger(__name__)


def _jobs(context: Any) -> list[dict[str, Any]]:
    """The clusters to triage: the sweep's conf ``jobs``, or by hand ``cluster`` (its paths: none)."""
    params = context["params"]
    jobs = list(params.get("jobs") or [])
    if not jobs and params.get("cluster"):
        jobs = [{"cluster": params["cluster"], "paths": list(params.get("paths") or [])}]
    return jobs


def validate(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Per cluster, ONE read session, then the triage committed in its LOCAL clone and the pull offer."""
    config = load_sweep_config(sweep_yaml)
    load, run = ops_loader(ops_dir), ssh_runner(config.gather, log)
    dry, checked = bool(context["params"].get("dry_run", True)), []
    for job in _jobs(context):
        cfg, why = active_slurm(load, str(job["cluster"]), "the clone is read on an active SLURM cluster")
        if cfg is None:
            checked.append({"cluster": job["cluster"], "offer": False, "why": why})
            continue
        got = validate_cluster(cfg, [str(p) for p in job.get("paths") or []], run, dry)
        log.info("%s: commit %r; pull %s: %s", cfg.name, got.get("commit"), got["offer"], got["why"])
        checked.append(got)
    if not checked:
        raise AirflowSkipException("no cluster to triage (conf jobs / param cluster empty)")
    return {"checked": checked, "clusters": [c["cluster"] for c in checked if c.get("offer")]}


def _validated(context: Any) -> dict[str, Any]:
    return context["ti"].xcom_pull(task_ids=Hygiene.VALIDATE) or {}


def _allowed(sweep_yaml: str, clusters: list[str], who: str) -> list[str] | None:
    """Who may answer for all of ``clusters``, never ``who`` (the requester; None: anyone Airflow
    lets answer but the requester; []: nobody)."""
    users = load_sweep_config(sweep_yaml).notify.approver_users
    named = [may_answer(c, users, requester=who) for c in clusters]
    if any(n is None for n in named):
        return None
    return sorted(set.intersection(*(set(n or []) for n in named))) if named else []


class HygieneApprovalOperator(HITLOperator):
    """ONE answer: the clusters to pull on ("Pull (fast-forward) on <cluster>"), or Do not pull
    (also the answer when nobody answers in time). Only clusters validate offered are options; who
    may answer: the clusters' ``notify.approver_users``, never the user who triggered the run; timeout: ``cancel.approval_timeout_minutes``."""

    def __init__(self, *, sweep_yaml: str, **kwargs: Any) -> None:
        kwargs.setdefault("subject", "sweep_hygiene: fast-forward pull on the cluster clone?")
        kwargs.setdefault("response_timeout", dt.timedelta(minutes=MAX_APPROVAL_MINUTES))
        super().__init__(options=[Hygiene.NONE], defaults=[Hygiene.NONE], multiple=True, **kwargs)
        self.sweep_yaml = sweep_yaml

    def execute(self, context: Any) -> Any:
        got = _validated(context)
        if not got.get("clusters"):
            raise AirflowSkipException(
                "no fast-forward pull may be offered: "
                + "; ".join(f"{c.get('cluster')}: {c.get('why')}" for c in got.get("checked") or [])
            )
        who = requester(context)
        users = _allowed(self.sweep_yaml, got["clusters"], who)
        if users == []:
            raise AirflowSkipException(
                f"no approver of {', '.join(got['clusters'])} other than {who or 'nobody'}: nothing pulled"
            )
        self.assigned_users = hitl_assignees(users, ids_are_names=ids_are_names())
        minutes = load_sweep_config(self.sweep_yaml).cancel.approval_timeout_minutes
        self.response_timeout = dt.timedelta(minutes=min(minutes, MAX_APPROVAL_MINUTES))
        self.options = [Hygiene.NONE, *(Hygiene.option(c) for c in got["clusters"])]
        dry = bool(context["params"].get("dry_run", True))
        self.body = md_text(approval_body(got["checked"], dry)) + "\n\n" + md_text(who_may(users, who))
        self.subject = f"sweep_hygiene: pull (fast-forward) on {', '.join(got['clusters'])}?"
        return super().execute(context)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        """Keep the answer as XCom ``answer``: the clusters chosen, and whether it counts."""
        clusters = list(_validated(context).get("clusters") or [])
        self.options = [Hygiene.NONE, *(Hygiene.option(c) for c in clusters)]
        if "error" not in event:
            picked = set(event.get("chosen_options") or [])
            chosen = [c for c in clusters if Hygiene.option(c) in picked]
            who = requester(context)
            answer = hitl_answer(event, _allowed(self.sweep_yaml, clusters, who), chosen, requester=who)
            context["ti"].xcom_push(key=Hygiene.ANSWER_KEY, value=answer)
        return super().execute_complete(context, event)


def pull_approved(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Each approved cluster: the gates read again (the act's own read), then ONE act session pulls."""
    answer = context["ti"].xcom_pull(task_ids=Hygiene.APPROVE, key=Hygiene.ANSWER_KEY) or {}
    chosen = list(answer.get("chosen") or [])
    if not chosen:
        raise AirflowSkipException(f"no pull approved: {answer.get('refused') or 'Do not pull / no answer'}")
    config = load_sweep_config(sweep_yaml)
    load, run = ops_loader(ops_dir), ssh_runner(config.gather, log)
    dry = bool(context["params"].get("dry_run", True))
    acted = {}
    for name in chosen:
        cfg, why = active_slurm(load, name, "the clone is pulled on an active SLURM cluster")
        acted[name] = pull(cfg, run, dry) if cfg is not None else {"outcome": "not pulled", "why": why}
        log.info("%s: %s %s", name, acted[name]["outcome"], acted[name]["why"])
    return acted


def record(sweep_yaml: str, **context: Any) -> str:
    """The run log's section: the local commits, the offers and the answer, the pulls' outcomes."""
    ti = context["ti"]
    checked = _validated(context).get("checked") or []
    answer = ti.xcom_pull(task_ids=Hygiene.APPROVE, key=Hygiene.ANSWER_KEY) or {}
    acted = ti.xcom_pull(task_ids=Hygiene.PULL) or {}
    text = "\n".join(
        [
            "Working-tree hygiene (triage into the local clone; ff pull once approved)",
            *record_lines(checked, answer, acted),
        ]
    )
    print(text)
    return str(append_record(context, sweep_yaml, DagId.HYGIENE, text))
