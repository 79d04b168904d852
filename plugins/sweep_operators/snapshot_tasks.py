"""Task callables and the approval operator of the sweep_snapshots DAG: validate, approve, delete,
record. Airflow-facing wiring only (sweep.yaml ``daytona``, the cluster's ops.md and SSH into
sweep_core.handoffs.snapshots): nothing is deleted unless an approver allowed for the cluster
(sweep.yaml ``notify.approver_users``), not the user who triggered the run, chose that snapshot by name, the fresh list right before
still counts it STALE at the cap, and ``dry_run`` is false. The cap is never raised.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from typing import Any

from airflow.providers.standard.operators.hitl import HITLOperator
from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.alerts.approvals import hitl_answer, hitl_assignees, may_answer, who_may
from sweep_core.config.handoffs_schema import MAX_APPROVAL_MINUTES
from sweep_core.config.steps_schema import DaytonaSection
from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.render import box_table
from sweep_core.handoffs.ports import active_slurm
from sweep_core.handoffs.snapshots.plan import approval_body
from sweep_core.handoffs.snapshots.usecase import delete_approved, fresh_list
from sweep_core.safe.text import md_text
from sweep_operators.handoff_io import ops_loader, ssh_runner
from sweep_operators.handoff_record import append_record
from sweep_operators.identity import ids_are_names, requester
from sweep_operators.task_ids import DagId, Snapshots

log = logging.getLogger(__name__)


def _daytona(sweep_yaml: str) -> tuple[DaytonaSection, Any]:
    config = load_sweep_config(sweep_yaml)
    if config.daytona is None or config.daytona.unset():
        raise AirflowSkipException("sweep.yaml daytona is not configured: nothing to list or delete")
    return config.daytona, config


def _cluster(ops_dir: str, daytona: DaytonaSection) -> Any:
    cfg, why = active_slurm(ops_loader(ops_dir), daytona.cluster, "the snapshot list runs on an active SLURM cluster")
    if cfg is None:
        raise AirflowSkipException(why)
    return cfg


def validate(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """The list read again now (ONE read session): the STALE snapshots a human is asked about (those
    the sweep offered, by conf, that are still STALE; by hand, every STALE one)."""
    daytona, config = _daytona(sweep_yaml)
    cfg = _cluster(ops_dir, daytona)
    fresh = fresh_list(daytona, cfg, ssh_runner(config.gather, log), time.time())
    offered = list(context["params"].get("offered") or [])
    stale = [s["name"] for s in fresh.get("stale", [])]
    ask = [n for n in stale if n in offered] if offered else stale
    log.info("%s: %s; asking about %s", cfg.name, fresh.get("reason"), ask)
    return {"cluster": cfg.name, "fresh": fresh, "ask": ask}


def _validated(context: Any) -> dict[str, Any]:
    return context["ti"].xcom_pull(task_ids=Snapshots.VALIDATE) or {}


class SnapshotApprovalOperator(HITLOperator):
    """ONE answer: the STALE snapshots to delete, by name (several may be chosen), or Delete none
    (also the answer when nobody answers in time). Subject and body are built in ``execute`` from
    validate's XCom (names come from Daytona: never Jinja-rendered). Who may answer: the cluster's
    ``notify.approver_users``, never the user who triggered the run; timeout: sweep.yaml ``cancel.approval_timeout_minutes``."""

    def __init__(self, *, sweep_yaml: str, **kwargs: Any) -> None:
        kwargs.setdefault("subject", "sweep_snapshots: delete STALE Daytona snapshots?")
        kwargs.setdefault("response_timeout", dt.timedelta(minutes=MAX_APPROVAL_MINUTES))
        super().__init__(options=[Snapshots.NONE], defaults=[Snapshots.NONE], multiple=True, **kwargs)
        self.sweep_yaml = sweep_yaml

    def execute(self, context: Any) -> Any:
        got = _validated(context)
        if not got.get("ask"):
            raise AirflowSkipException(f"no STALE snapshot to ask about: {got.get('fresh', {}).get('reason', '?')}")
        config = load_sweep_config(self.sweep_yaml)
        who = requester(context)
        users = may_answer(got["cluster"], config.notify.approver_users, requester=who)
        if users == []:
            raise AirflowSkipException(f"no approver of {got['cluster']} other than {who or 'nobody'}: nothing deleted")
        self.assigned_users = hitl_assignees(users, ids_are_names=ids_are_names())
        self.response_timeout = dt.timedelta(minutes=min(config.cancel.approval_timeout_minutes, MAX_APPROVAL_MINUTES))
        self.options = [Snapshots.NONE, *got["ask"]]
        dry = bool(context["params"].get("dry_run", True))
        self.body = md_text(approval_body(got["cluster"], got["fresh"], dry)) + "\n\n" + md_text(who_may(users, who))
        self.subject = f"sweep_snapshots: delete {len(got['ask'])} STALE Daytona snapshot(s) at the HARD cap?"
        return super().execute(context)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        """Keep the answer as XCom ``answer``: the names chosen, and whether it counts. The options
        are those execute asked (validate's names): this instance may be a fresh one on resume."""
        self.options = [Snapshots.NONE, *(_validated(context).get("ask") or [])]
        if "error" not in event:
            config = load_sweep_config(self.sweep_yaml)
            cluster = _validated(context).get("cluster", "")
            who = requester(context)
            users = may_answer(cluster, config.notify.approver_users, requester=who)
            chosen = [c for c in event.get("chosen_options") or [] if c != Snapshots.NONE]
            context["ti"].xcom_push(key=Snapshots.ANSWER_KEY, value=hitl_answer(event, users, chosen, requester=who))
        return super().execute_complete(context, event)


def delete(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """The approved names still STALE in a fresh list: one quoted delete command each (ONE act session)."""
    answer = context["ti"].xcom_pull(task_ids=Snapshots.APPROVE, key=Snapshots.ANSWER_KEY) or {}
    chosen = list(answer.get("chosen") or [])
    if not chosen:
        raise AirflowSkipException(f"no snapshot approved: {answer.get('refused') or 'Delete none / no answer'}")
    daytona, config = _daytona(sweep_yaml)
    if not daytona.delete_command:
        raise AirflowSkipException("sweep.yaml daytona.delete_command is not set: nothing deleted")
    cfg = _cluster(ops_dir, daytona)
    dry = bool(context["params"].get("dry_run", True))
    got, fresh = delete_approved(daytona, cfg, chosen, ssh_runner(config.gather, log), time.time(), dry)
    for name, (outcome, why) in got.items():
        log.info("%s %s: %s %s", cfg.name, name, outcome, why)
    return {"cluster": cfg.name, "by": answer.get("responded_by") or "", "results": got, "fresh": fresh}


def record(sweep_yaml: str, **context: Any) -> str:
    """The outcome table, appended to the dated run log's actions section."""
    ti = context["ti"]
    got = ti.xcom_pull(task_ids=Snapshots.DELETE) or {}
    checked = _validated(context)
    answer = ti.xcom_pull(task_ids=Snapshots.APPROVE, key=Snapshots.ANSWER_KEY) or {}
    head = f"Daytona snapshots on {checked.get('cluster', '?')}: {checked.get('fresh', {}).get('reason', '?')}"
    rows = [[name, outcome, why] for name, (outcome, why) in (got.get("results") or {}).items()]
    asked = checked.get("ask") or []
    rows += [
        [n, "not approved", answer.get("refused") or "left alone"] for n in asked if n not in (got.get("results") or {})
    ]
    text = head + ("\n" + box_table(["Snapshot", "Outcome", "Why"], rows, [60, None, 80]) if rows else "")
    print(text)
    return str(append_record(context, sweep_yaml, DagId.SNAPSHOTS, text))
