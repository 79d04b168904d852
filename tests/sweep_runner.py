"""Run the real monitor_cron_sweep DAG with dag.test() against a real metadata DB, read its XComs.

The DAGs read the lab's config (tests/lab.py LAB_OPS, LAB_CONFIG) unless an ops dir or SWEEP_CONFIG is given."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab import LAB_CONFIG, LAB_OPS

from sweep_core.records.models import ClusterSnapshot

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class SweepRun:
    state: str
    task_states: dict[str, str]
    snapshots: dict[str, ClusterSnapshot] = field(default_factory=dict)
    rendered: dict[str, Any] = field(default_factory=dict)
    report_path: Path | None = None

    @property
    def report(self) -> str:
        return self.report_path.read_text() if self.report_path else ""

    def job(self, name: str):
        """The one job of that exact name across all clusters."""
        found = [j for s in self.snapshots.values() for j in s.all_jobs() if j.name == name]
        assert len(found) == 1, f"{name!r}: found {len(found)} jobs"
        return found[0]


def run_sweep(conf: dict[str, Any], run_log_dir: Path, ops_dir: Path | None = None, **test_kwargs: Any) -> SweepRun:
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    saved = {k: os.environ.get(k) for k in ("SWEEP_OPS_DIR", "SWEEP_CONFIG", "SWEEP_RUN_LOG_DIR")}
    os.environ["SWEEP_OPS_DIR"] = str(ops_dir or LAB_OPS)
    os.environ["SWEEP_CONFIG"] = saved["SWEEP_CONFIG"] or str(LAB_CONFIG)
    os.environ["SWEEP_RUN_LOG_DIR"] = str(run_log_dir)
    try:
        bag = DagBag(str(ROOT / "dags" / "monitor_cron_sweep.py"))  # its own file (dag.test syncs the folder)
        assert bag.import_errors == {}, bag.import_errors
        dag = bag.get_dag("monitor_cron_sweep")
        dr = dag.test(run_conf=conf, **test_kwargs)
    finally:  # as they were: a later test never reads this sweep's run-log dir by accident
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    with create_session() as session:
        rows = session.scalars(
            select(XComModel).where(
                XComModel.dag_id == dag.dag_id, XComModel.run_id == dr.run_id, XComModel.key == "return_value"
            )
        ).all()
        values = {r.task_id: XComModel.deserialize_value(r) for r in rows}
        states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances(session=session)}
        state = str(dr.state)
    # From the bucket task: metrics and flags attached, log tails dropped.
    bucketed = (values.get("bucket") or {}).get("snapshots") or []
    snaps = {d["cluster"]: ClusterSnapshot.from_dict(d) for d in bucketed}
    rendered = values.get("render") or {}
    report = rendered.get("run_log")
    return SweepRun(state, states, snaps, rendered, Path(report) if report else None)


@dataclass
class DagRun:
    state: str
    task_states: dict[str, str]
    values: dict[str, Any]
    run_id: str


def run_dag(
    dag_id: str,
    conf: dict[str, Any],
    run_log_dir: Path | str,
    ops_dir: Path | None = None,
    logical_date: Any = None,
    run_after: Any = None,
    run_id: str = "",
    **env: str,
) -> DagRun:
    """dag.test() any DAG of the project with ``conf``; its return-value XComs by task id.
    ``run_log_dir``: a folder, or an ObjectStoragePath URL (``s3://…``) as a string.
    ``logical_date`` sets the data interval (dag.test replaces an earlier run of the same logical
    date); the run id is ``manual__<run_after>`` (now by default: the same run_after again = the
    same run id, as an Airflow "clear" re-runs it), or ``run_id`` (e.g. the ``<sweep run>__cancel``
    a sweep's TriggerDagRunOperator names its hand-off run: dag.test takes no run id, so Airflow's
    run-id naming is replaced for this one call)."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    saved = {k: os.environ.get(k) for k in ("SWEEP_OPS_DIR", "SWEEP_CONFIG", "SWEEP_RUN_LOG_DIR", *env)}
    os.environ["SWEEP_OPS_DIR"] = str(ops_dir or LAB_OPS)
    os.environ["SWEEP_CONFIG"] = saved["SWEEP_CONFIG"] or str(LAB_CONFIG)
    os.environ["SWEEP_RUN_LOG_DIR"] = str(run_log_dir)
    os.environ.update(env)
    try:
        one = ROOT / "dags" / f"{dag_id}.py"  # its own file (every DAG file is parsed by dag.test's sync anyway)
        bag = DagBag(str(one if one.exists() else ROOT / "dags"))
        assert bag.import_errors == {}, bag.import_errors
        kwargs = {k: v for k, v in (("logical_date", logical_date), ("run_after", run_after)) if v is not None}
        if run_id:
            from airflow.models.dagrun import DagRun as AirflowDagRun

            naming = AirflowDagRun.generate_run_id
            AirflowDagRun.generate_run_id = staticmethod(lambda **_: run_id)  # type: ignore[method-assign]
        try:
            dr = bag.get_dag(dag_id).test(run_conf=conf, **kwargs)
        finally:
            if run_id:
                AirflowDagRun.generate_run_id = naming  # type: ignore[method-assign]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    with create_session() as session:
        rows = session.scalars(
            select(XComModel).where(
                XComModel.dag_id == dag_id, XComModel.run_id == dr.run_id, XComModel.key == "return_value"
            )
        ).all()
        values = {r.task_id: XComModel.deserialize_value(r) for r in rows}
        states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances(session=session)}
    return DagRun(str(dr.state), states, values, dr.run_id)


def minute_config(path: Path, **sections: Any) -> Path:
    """The lab's sweep.yaml at ``path`` with a one-minute schedule (each sweep reads a current window:
    a past window's liveness is not judged) and ``sections`` set over it."""
    import yaml

    conf = {**yaml.safe_load(LAB_CONFIG.read_text()), "schedule": "* * * * *", **sections}
    path.write_text(yaml.safe_dump(conf))
    return path


def minute_sweeps(
    run_log_dir: Path, n: int = 2, between: Callable[[int], None] | None = None, **env: str
) -> list[DagRun]:
    """``n`` report sweeps of the local cluster, each run as its one-minute window ends (the next
    minute tick first); ``between(i)`` after sweep i but the last. Each sweep's history is written."""
    import datetime as dt
    import time

    first_end = dt.datetime.fromtimestamp((int(time.time()) // 60 + 1) * 60, dt.UTC)
    runs = []
    for i in range(n):
        end = first_end + dt.timedelta(minutes=i)
        time.sleep(max(0.0, end.timestamp() - time.time()))
        run = run_dag(
            "monitor_cron_sweep", {"clusters": ["local"]}, run_log_dir, logical_date=end, run_after=end, **env
        )
        assert run.task_states["history"] == "success", run.task_states
        runs.append(run)
        if between is not None and i < n - 1:
            between(i)
    return runs
