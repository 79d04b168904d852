"""Airflow's own reliability settings on every task of a DAG: ``execution_timeout`` sized by
sweep_core.config.task_limits from sweep.yaml and ops.md, retries with exponential backoff for the
read-only steps only, and a callable wrapper that lets only a transport error be retried (anything
else fails at once: AirflowFailException). Every task must be named in the DAG's needs."""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from sweep_core.config.ops import ClusterConfig, OpsConfigError, cluster_names, load_cluster
from sweep_core.config.task_limits import Kind, Need, approval_wait_s, limit
from sweep_core.timing.transport import is_transport_error

log = logging.getLogger(__name__)

LOCAL = Need(Kind.LOCAL)
HUB_ASK_S = 10  # one hub check at most (sweep_operators.hf_hub: 2 attempts of 4 s, a pause)


def transport_only(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` whose failures are retried by Airflow only when they are transport errors: any other
    exception becomes AirflowFailException (no retry). Airflow's own exceptions (skip, fail, defer)
    pass unchanged, unless a plain AirflowException that was raised from a transport error."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (AirflowSkipException, AirflowFailException):
            raise
        except Exception as exc:
            if is_transport_error(exc):
                log.warning("transport error (%s: %s): Airflow retries this read-only step", type(exc).__name__, exc)
                raise
            if isinstance(exc, AirflowException) and type(exc) is not AirflowException:
                raise  # deferral and the other control-flow exceptions
            raise AirflowFailException(f"{type(exc).__name__}: {exc} (not a transport error: not retried)") from exc

    return run


def peek_clusters(ops_dir: str) -> list[ClusterConfig | None]:
    """Every ops.md cluster at parse time (None for one that does not validate: its tasks fail at
    run time with the error, sized as one login node)."""
    out: list[ClusterConfig | None] = []
    for name in cluster_names(ops_dir):
        try:
            out.append(load_cluster(ops_dir, name))
        except OpsConfigError:
            out.append(None)
    return out


def apply_limits(dag: Any, config: Any, needs: Mapping[str, Need], clusters: Mapping[str, list[Any]]) -> None:
    """Set ``execution_timeout`` and retries on every task of ``dag`` from ``needs`` (task id ->
    Need; a task id missing is an error at parse time, so no task is left without a timeout).
    ``clusters``: task id -> the ops.md configs its sessions reach (default: every cluster, key ``*``).
    A READ task's callable is wrapped with transport_only."""
    missing = [t.task_id for t in dag.tasks if t.task_id not in needs]
    if missing:
        raise ValueError(f"{dag.dag_id}: no execution_timeout sized for task(s) {missing} (reliability needs)")
    for task in dag.tasks:
        need = needs[task.task_id]
        got = limit(need, config, clusters.get(task.task_id, clusters.get("*", [])))
        task.execution_timeout = dt.timedelta(seconds=got.timeout_s)
        task.retries = got.retries
        if got.retries:
            task.retry_delay = dt.timedelta(seconds=got.retry_delay_s)
            task.retry_exponential_backoff = 2.0
            task.max_retry_delay = dt.timedelta(seconds=got.max_retry_delay_s)
            if hasattr(task, "python_callable"):
                task.python_callable = transport_only(task.python_callable)


def sweep_needs(config: Any, clusters: list[str]) -> dict[str, Need]:
    """monitor_cron_sweep: the gathers read (one session to their cluster), history and notify are
    idempotent (a re-run replaces its rows; a channel told is not told again) and retry; the rest
    is local, the ledger claims (handoffs) and the triggers included: never retried."""
    from sweep_operators.task_ids import HANDOFF_TRIGGERS, Sweep

    local_s = int(config.tasks.local_timeout_s)
    needs = {
        t: LOCAL
        for t in (
            Sweep.BUCKET,
            Sweep.RENDER,
            Sweep.FOLD,
            Sweep.VERDICT,
            Sweep.HANDOFFS,
            Sweep.HANDOFF_BRANCH,
            Sweep.NO_HANDOFF,
            *(task_id for task_id, _ in HANDOFF_TRIGGERS.values()),
        )
    }
    needs[Sweep.HISTORY] = needs[Sweep.NOTIFY] = Need(Kind.READ, extra_s=local_s)
    needs[Sweep.HANDOFFS] = Need(Kind.LOCAL, extra_s=HUB_ASK_S * int(config.cleanup.backlog_hub_asks))  # the backlog
    for name in clusters:
        needs[f"{name}.{Sweep.STEP0}"] = LOCAL
        needs[f"{name}.{Sweep.GATHER}"] = Need(Kind.READ, sessions=1)
    return needs


def handoff_needs(dag_id: str, config: Any) -> dict[str, Need]:
    """The hand-off DAGs, per task: its sessions per cluster (read from its use case) and waits."""
    from sweep_operators.task_ids import DagId

    needs = {
        DagId.CANCEL: _cancel_needs,
        DagId.CLEANUP: _cleanup_needs,
        DagId.HF_CHAIN: _chain_needs,
        DagId.HARVEST: _harvest_needs,
        DagId.DEEP_DIVE: _deep_dive_needs,
        DagId.SNAPSHOTS: _snapshots_needs,
        DagId.HYGIENE: _hygiene_needs,
    }
    if dag_id not in needs:
        raise ValueError(f"no reliability needs for DAG {dag_id!r}")
    return needs[dag_id](config)


def _cancel_needs(config: Any) -> dict[str, Need]:
    """scancel then requeue: two act sessions per cluster; iris: the stop's confirm and the ops.md
    relaunch command besides."""
    from sweep_operators.task_ids import Cancel

    cancel = config.cancel
    act = Need(Kind.ACT, sessions=2, extra_s=cancel.confirm_timeout_s + cancel.relaunch.command_timeout_s)
    return {
        Cancel.VALIDATE: Need(Kind.CHECK, sessions=2),  # squeue + evidence; writes the breaker's record
        Cancel.TO_ASK: LOCAL,
        Cancel.STANDING: act,
        Cancel.APPROVE: Need(Kind.APPROVAL, extra_s=approval_wait_s()),
        Cancel.SCANCEL: act,
        Cancel.RECORD: LOCAL,
    }


def _cleanup_needs(config: Any) -> dict[str, Need]:
    from sweep_operators.task_ids import Cleanup

    cleanup = config.cleanup
    return {
        Cleanup.CONSOLIDATE: Need(Kind.ACT, sessions=2),  # probe + submit
        Cleanup.PLAN: Need(Kind.READ, sessions=1),  # read-only probe; the backlog only grows (idempotent)
        Cleanup.UPLOAD: Need(Kind.ACT, sessions=1),
        # the launch-YAML read + ONE act session, each command bounded by register_timeout_s
        Cleanup.REGISTER: Need(Kind.ACT, sessions=2, extra_s=cleanup.register_timeout_s),
        Cleanup.DELETE: Need(Kind.ACT, sessions=1),
        # polls until verify_timeout_s (one more poll may start just before), then df -i / quota
        Cleanup.VERIFY: Need(Kind.READ, sessions=2, extra_s=cleanup.verify_timeout_s + cleanup.verify_poll_s),
        Cleanup.RECORD: LOCAL,
    }


def _chain_needs(config: Any) -> dict[str, Need]:
    """One probe + at most one submit session per series, and for a cluster's found series."""
    from sweep_operators.task_ids import Chain

    return {Chain.ADVANCE: Need(Kind.ACT, sessions=2 * (len(config.hf_chain.series) + 1)), Chain.RECORD: LOCAL}


def _harvest_needs(config: Any) -> dict[str, Need]:
    """One session per cluster, then the trackers written and committed."""
    from sweep_operators.task_ids import Harvest

    return {Harvest.HARVEST: Need(Kind.ACT, sessions=1), Harvest.RECORD: LOCAL}


def _deep_dive_needs(config: Any) -> dict[str, Need]:
    from sweep_operators.task_ids import DeepDive

    return {
        DeepDive.PROBE: Need(Kind.READ, sessions=1),  # one read-only session per cluster
        DeepDive.VERDICT: LOCAL,  # KILL / NO-KILL into the ledger
        **{t: LOCAL for t in (DeepDive.BRANCH, DeepDive.TRIGGER_CANCEL, DeepDive.NO_KILL, DeepDive.RECORD)},
    }


def _snapshots_needs(config: Any) -> dict[str, Need]:
    """The fresh list (read); the list again and the deletes (one act session)."""
    from sweep_operators.task_ids import Snapshots

    return {
        Snapshots.VALIDATE: Need(Kind.READ, sessions=1),
        Snapshots.APPROVE: Need(Kind.APPROVAL, extra_s=approval_wait_s()),
        Snapshots.DELETE: Need(Kind.ACT, sessions=2),
        Snapshots.RECORD: LOCAL,
    }


def _hygiene_needs(config: Any) -> dict[str, Need]:
    """One read per cluster (then the local commit); the pull: a read of the gates + one act session."""
    from sweep_operators.task_ids import Hygiene

    return {
        Hygiene.VALIDATE: Need(Kind.CHECK, sessions=1),  # a read, then the local-clone commit: not retried
        Hygiene.APPROVE: Need(Kind.APPROVAL, extra_s=approval_wait_s()),
        Hygiene.PULL: Need(Kind.ACT, sessions=2),
        Hygiene.RECORD: LOCAL,
    }


def sweep_limits(dag: Any, config: Any, ops_dir: str) -> None:
    """monitor_cron_sweep's timeouts and retries: each gather sized by its own cluster's ops.md."""
    from sweep_operators.task_ids import Sweep

    names = cluster_names(ops_dir)
    reach = {f"{n}.{Sweep.GATHER}": [c] for n, c in zip(names, peek_clusters(ops_dir), strict=True)}
    apply_limits(dag, config, sweep_needs(config, names), reach)


def handoff_limits(dag: Any, sweep_yaml: str, ops_dir: str) -> None:
    """A hand-off DAG's timeouts and retries: its remote steps sized over every ops.md cluster.
    A sweep.yaml that cannot be read or is invalid raises: the DAG file's import error naming the
    file and key (as the sweep DAGs do), never a warning followed by failed tasks."""
    from sweep_core.config.sweep import load_sweep_config

    config = load_sweep_config(sweep_yaml)
    needs = handoff_needs(dag.dag_id, config)
    apply_limits(dag, config, needs, {"*": peek_clusters(ops_dir)})
    apply_queues(dag, config, needs)


def apply_queues(dag: Any, config: Any, needs: Mapping[str, Need]) -> None:
    """Each task's Celery ``queue`` from sweep.yaml ``queues:`` (acts, and any task named by
    ``<dag_id>.<task_id>``); "" leaves Airflow's default queue. A named task the DAG lacks is an error."""
    unknown = config.queues.unknown(dag.dag_id, set(dag.task_ids))
    if unknown:
        raise ValueError(
            f"sweep.yaml queues.tasks names {unknown}: {dag.dag_id} has no such task ({sorted(dag.task_ids)})"
        )
    for task in dag.tasks:
        queue = config.queues.queue(dag.dag_id, task.task_id, needs[task.task_id].kind is Kind.ACT)
        if queue:
            task.queue = queue
