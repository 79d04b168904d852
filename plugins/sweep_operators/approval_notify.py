"""The kill-approval notifier (sweep_cancel's HITL ``notifiers=``): the approvers named for the
clusters of the jobs awaiting approval get the prompt's evidence and the Required Actions link, by
e-mail (SMTP provider) and/or Slack (webhook provider); the sweep-overrun Deadline Alert's
callback; and the DAG-run callbacks that record how each sweep run ended and tell the channels
when the sweep keeps failing. Wiring only: who and what is sweep_core.alerts.approvals.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from airflow.sdk import BaseNotifier

from sweep_core.alerts.approvals import (
    approval_clusters,
    approval_message,
    approvers_for,
    failing_message,
    overrun_message,
    watch_failing_message,
)
from sweep_core.config.notify_schema import Channel
from sweep_core.config.sweep import load_sweep_config
from sweep_core.ledger.outcomes import record_outcome, record_watch_outcome, tells_failing
from sweep_core.records.vocab import NO_CHANNEL
from sweep_operators.handoff_record import run_log_dir
from sweep_operators.notify_tasks import send
from sweep_operators.task_ids import Cancel, DagId
from sweep_operators.window import dag_id_of, run_id_of

log = logging.getLogger(__name__)


def _base_url() -> str:
    from airflow.configuration import conf

    return (conf.get("api", "base_url", fallback="") or "http://localhost:8080").rstrip("/")


class ApprovalNotifier(BaseNotifier):
    """Tell the approvers of the job's cluster (each approval task asks about one job) that a kill
    waits for them; in sweep_snapshots, the approvers of the cluster whose snapshot list it read.

    No template fields: the prompt carries cluster text, which is never Jinja-rendered."""

    template_fields = ()

    def __init__(self, *, sweep_yaml: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sweep_yaml = sweep_yaml

    def notify(self, context: Any) -> None:
        from airflow.providers.standard.operators.hitl import HITLOperator

        cfg = load_sweep_config(self.sweep_yaml).notify
        raw = context["ti"].xcom_pull(task_ids=Cancel.VALIDATE, key="return_value", map_indexes=-1) or {}
        clusters = approval_clusters(raw, str(getattr(context["task"], "job_key", "") or ""))  # one job per task
        link = HITLOperator.generate_link_to_ui_from_context(context=context, base_url=_base_url())
        task = context["task"]
        msg = approval_message(str(task.subject), str(task.body or ""), link, clusters)
        to = approvers_for(clusters, cfg.approvers)
        channels = []
        if to and cfg.approval_conn_id:
            channels.append(Channel(name="approvers", kind="email", conn_id=cfg.approval_conn_id, to=tuple(to)))
        if cfg.approval_slack_conn_id:
            channels.append(Channel(name="approvers-slack", kind="slack", conn_id=cfg.approval_slack_conn_id))
        if not channels:
            log.info("approval notifier: no approvers for %s in sweep.yaml notify: nobody told", sorted(clusters))
        for ch in channels:  # a channel down must not stop the approval being asked (Required Actions)
            try:
                send(ch, msg, context)
                log.info("approval asked of %s (%s): %s", ch.name, ", ".join(ch.to) or ch.conn_id, link)
            except Exception as exc:
                log.error(
                    "approval notice to %s failed (the approval still waits in Required Actions): %s", ch.name, exc
                )


def overrun_alert(*, sweep_yaml: str, intervals: int, context: dict[str, Any] | None = None) -> None:
    """The Deadline Alert callback: a sweep still running ``intervals`` intervals after it was
    queued is told to every channel that hears critical."""
    cfg = load_sweep_config(sweep_yaml).notify
    run = (context or {}).get("dag_run") or {}
    dag_id, run_id = str(run.get("dag_id", "monitor_cron_sweep")), str(run.get("run_id", "?"))
    msg = overrun_message(
        dag_id, run_id, intervals, f"{_base_url()}/dags/{quote(dag_id)}/runs/{quote(run_id, safe='')}"
    )
    for ch in _hear_critical(cfg.channels, msg):
        send(ch, msg, context or {})
        log.info("overrun alert sent to %s", ch.name)


def _hear_critical(channels: Sequence[Channel], msg: Any) -> list[Channel]:
    """The channels that hear critical; with none, the alert is a WARNING line of this task's log."""
    told = [ch for ch in channels if "critical" in ch.severities]
    if not told:
        log.warning("ALERT (%s) %s", NO_CHANNEL, msg.text().replace("\n", " | "))
    return told


def sweep_outcome(context: Any, *, sweep_yaml: str, ok: bool) -> None:
    """The sweep DAG's on_success / on_failure callback: record the run's end in the ledger; after
    ``notify.failed_sweeps`` failed runs in a row (and every as many more), tell every channel that
    hears critical. A channel down is logged, never raised (a callback's error is only logged)."""
    config = load_sweep_config(sweep_yaml)
    run_id = str(context.get("run_id") or getattr(context.get("dag_run"), "run_id", "?"))
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    streak, last_success = record_outcome(run_log_dir(config), run_id, ok, now)
    if ok or not tells_failing(streak, config.notify.failed_sweeps):
        return
    dag_id = str(getattr(context.get("dag"), "dag_id", "monitor_cron_sweep"))
    link = f"{_base_url()}/dags/{quote(dag_id)}/runs/{quote(run_id, safe='')}"
    msg = failing_message(dag_id, streak, last_success, link)
    for ch in _hear_critical(config.notify.channels, msg):
        try:
            send(ch, msg, context)
            log.info("failing-sweep alert (%d in a row) sent to %s", streak, ch.name)
        except Exception as exc:
            log.error("failing-sweep alert to %s failed: %s", ch.name, exc)


def _window_of(context: Any) -> tuple[str, str]:
    """The run's data interval (ISO UTC); a run without one: its run_after (or now) as both ends."""
    dag_run = context.get("dag_run")
    now = dt.datetime.now(dt.UTC)
    end = getattr(dag_run, "data_interval_end", None) or getattr(dag_run, "run_after", None) or now
    start = getattr(dag_run, "data_interval_start", None) or end
    return start.astimezone(dt.UTC).isoformat(), end.astimezone(dt.UTC).isoformat()


def watch_outcome(context: Any, *, sweep_yaml: str, ok: bool) -> None:
    """The watch DAG's on_success / on_failure callback: its own failing streak in the ledger (never
    the report sweep's); a streak ``watch.failing_minutes`` long is told to every channel that hears
    critical, then again every ``watch.failing_repeat_minutes`` while it lasts. Errors are logged."""
    config = load_sweep_config(sweep_yaml)
    run_id = run_id_of(context) or "?"
    start, end = _window_of(context)
    w = config.watch
    told = record_watch_outcome(
        run_log_dir(config),
        run_id,
        ok,
        start=start,
        end=end,
        after_minutes=w.failing_minutes,
        repeat_minutes=w.failing_repeat_minutes,
    )
    if told is None:
        return
    dag_id = dag_id_of(context) or DagId.WATCH
    dag_run_id = str(context.get("run_id") or getattr(context.get("dag_run"), "run_id", "?"))
    link = f"{_base_url()}/dags/{quote(dag_id)}/runs/{quote(dag_run_id, safe='')}"
    msg = watch_failing_message(dag_id, told.runs, told.since, told.latest, told.last_success, link)
    for ch in _hear_critical(config.notify.channels, msg):
        try:
            send(ch, msg, context)
            log.info("failing-watch alert (%d runs in a row) sent to %s", told.runs, ch.name)
        except Exception as exc:
            log.error("failing-watch alert to %s failed: %s", ch.name, exc)


def overrun_deadline(sweep_yaml: str, schedule: str, intervals: int) -> Any:
    """The DAG's DeadlineAlert: queued-at + ``intervals`` schedule intervals -> overrun_alert."""
    from airflow.sdk.definitions.callback import SyncCallback
    from airflow.sdk.definitions.deadline import DeadlineAlert, DeadlineReference
    from croniter import croniter

    it = croniter(schedule, dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    first = it.get_next(dt.datetime)
    interval = it.get_next(dt.datetime) - first
    return DeadlineAlert(
        reference=DeadlineReference.DAGRUN_QUEUED_AT,
        interval=interval * intervals,
        callback=SyncCallback(
            "sweep_operators.approval_notify.overrun_alert", kwargs={"sweep_yaml": sweep_yaml, "intervals": intervals}
        ),
        name="sweep_overrun",
    )


OVERRUN_OFF_ENV = "SWEEP_OVERRUN_ALERT"


def sweep_deadline(sweep_yaml: str, schedule: str, intervals: int) -> Any:
    """The sweep DAG's ``deadline=``: on unless sweep.yaml ``notify.overrun_intervals`` is 0, or
    ``SWEEP_OVERRUN_ALERT=off`` is set where the DAG is parsed (``airflow dags test`` / ``dag.test()``
    cannot run a DAG with a deadline in Airflow 3.3.2: the tests and the demo set it)."""
    import os

    if not intervals or os.environ.get(OVERRUN_OFF_ENV, "").strip().lower() == "off":
        return None
    return overrun_deadline(sweep_yaml, schedule, intervals)
