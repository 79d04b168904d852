"""What one scrape of ``/sweeps/metrics`` reads (wiring for sweep_core.history.openmetrics): the
latest report sweep and watch run from their histories (read-only), the ledger's acts, and from
Airflow's metadata DB the two sweep DAGs' latest successful runs (duration, each cluster's gather
task) and the human approvals the package's DAGs wait for. A source that cannot be read is named in
``Facts.down`` with why (``sweep_source_up 0``); its series are absent, never zero.
Imported by the request handler only: it reads pandas, pyarrow and Airflow's models.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from sweep_core.config.sweep_schema import SweepConfig
from sweep_core.history.openmetrics import (
    REPORT_DAG,
    WATCH_DAG,
    Facts,
    RunFacts,
    acts_by_cluster,
    cadence_seconds,
    last_successes,
)
from sweep_core.history.page_view import latest_and_earlier
from sweep_operators.task_ids import DagId, Sweep

log = logging.getLogger(__name__)
APPROVAL_DAGS = (DagId.CANCEL, DagId.SNAPSHOTS, DagId.HYGIENE, DagId.CLEANUP, DagId.HF_CHAIN, DagId.DEEP_DIVE)


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:160]}"


def _history(facts: Facts, config: SweepConfig) -> None:
    from sweep_operators.history_location import history_store, watch_history_store

    for source, dag, store, attr in (
        ("history", REPORT_DAG, history_store, "report"),
        ("watch_history", WATCH_DAG, watch_history_store, "watch"),
    ):
        try:
            latest, frames = latest_and_earlier(store(config), config.openmetrics.history_files)
            setattr(facts, attr, latest)
            facts.last_ok = {**facts.last_ok, **last_successes(dag, frames)}
        except Exception as exc:  # noqa: BLE001 (an unreadable store: UNKNOWN this scrape, said, never a 500)
            facts.down[source] = _why(exc)
            log.warning("metrics: %s unreadable: %s", source, facts.down[source])


def _ledger(facts: Facts, config: SweepConfig) -> None:
    from sweep_core.ledger.store import acts_by_job
    from sweep_operators.handoff_record import run_log_dir

    try:
        facts.acts = acts_by_cluster(acts_by_job(run_log_dir(config)))  # the act rows alone, read-only
    except Exception as exc:  # noqa: BLE001
        facts.down["ledger"] = _why(exc)
        log.warning("metrics: ledger unreadable: %s", facts.down["ledger"])


def _run_facts(session: Any, dag_id: str, cadence: float | None) -> RunFacts:
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from sqlalchemy import select

    run = session.scalars(
        select(DagRun)
        .where(DagRun.dag_id == dag_id, DagRun.state == "success", DagRun.end_date.is_not(None))
        .order_by(DagRun.end_date.desc())
        .limit(1)
    ).first()
    if run is None:
        return RunFacts(dag_id, cadence_s=cadence)
    gathers = session.execute(
        select(TaskInstance.task_id, TaskInstance.duration).where(
            TaskInstance.dag_id == dag_id,
            TaskInstance.run_id == run.run_id,
            TaskInstance.task_id.like(f"%.{Sweep.GATHER}"),
            TaskInstance.duration.is_not(None),
        )
    ).all()
    took = (run.end_date - run.start_date).total_seconds() if run.start_date else None
    return RunFacts(dag_id, run.end_date, took, {t.rsplit(".", 1)[0]: float(d) for t, d in gathers}, cadence)


def _airflow_db(facts: Facts, config: SweepConfig) -> None:
    from airflow.models.hitl import HITLDetail
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    try:
        with create_session() as session:
            facts.runs = [
                _run_facts(session, REPORT_DAG, cadence_seconds(config.schedule, facts.now)),
                _run_facts(session, WATCH_DAG, cadence_seconds(config.watch.schedule, facts.now)),
            ]
            waiting = session.execute(
                select(TaskInstance.dag_id, HITLDetail.created_at)
                .join(TaskInstance, HITLDetail.ti_id == TaskInstance.id)
                .where(
                    HITLDetail.responded_at.is_(None),
                    TaskInstance.dag_id.in_(APPROVAL_DAGS),
                    TaskInstance.state == "deferred",
                )
            ).all()
            facts.approvals = [(str(d), t) for d, t in waiting]
    except Exception as exc:  # noqa: BLE001
        facts.down["airflow_db"] = _why(exc)
        log.warning("metrics: Airflow's DB unreadable: %s", facts.down["airflow_db"])


def gather_facts(config: SweepConfig, now: dt.datetime | None = None) -> Facts:
    """Everything one scrape shows, each source read on its own (one failing leaves the others)."""
    facts = Facts(now=now or dt.datetime.now(dt.UTC), job_series_limit=config.openmetrics.job_series_limit)
    _history(facts, config)
    _ledger(facts, config)
    _airflow_db(facts, config)
    return facts
