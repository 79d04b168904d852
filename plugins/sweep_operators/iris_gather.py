"""CoreWeave (iris) gather: state-poll the iris controller, count pods through KubernetesHook,
return the same snapshot shape as the SLURM gather. All calls synchronous with timeouts."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator

from sweep_core.config.ops import ClusterConfig, load_cluster
from sweep_core.fanin.digest import payload_line
from sweep_core.iris.setup import unready_snapshot
from sweep_core.iris.state import COUNTED, PodCount, iris_snapshot, pod_source, polled_snapshot
from sweep_core.records.models import ClusterSnapshot
from sweep_core.timing.window import is_past_window
from sweep_operators.iris_hook import IrisHook, IrisUnavailable
from sweep_operators.reliability import transport_only
from sweep_operators.window import catch_up_since, sweep_window


def gather_iris(
    cfg: ClusterConfig,
    start: dt.datetime,
    end: dt.datetime,
    log: Any = None,
    ended_since: dt.datetime | None = None,
    read: dict[str, Any] | None = None,
) -> ClusterSnapshot:
    """Poll one iris cluster; a controller/API failure is UNKNOWN (retryable), never terminal; a
    cluster not set up is not contacted (sweep_core.iris.setup.unready_snapshot). ``read``: RUNNING
    logs read on from the ledger's cursors (IrisHook.poll), else the window's newest ``iris_log_bytes``."""
    unready = unready_snapshot(cfg, start, end)
    if unready is not None:
        return unready
    hook = IrisHook.for_cluster(cfg)
    past = is_past_window(end, time.time())  # states and times only: pods and logs tell about now
    try:
        jobs, now = hook.poll(since_ms=int(start.timestamp() * 1000), logs=not past, read=read)
    except IrisUnavailable as exc:
        return iris_snapshot(
            cfg.name, None, {}, now=time.time(), window_start=start, window_end=end, source=hook.source, error=str(exc)
        )
    pods = _pods(cfg, jobs) if pod_source(cfg) and not past else {}
    snap = polled_snapshot(
        cfg,
        jobs,
        pods,
        now=now or time.time(),
        window_start=start,
        window_end=end,
        source=hook.source,
        ended_since=ended_since,
        past=past,
    )
    if log:
        log.info("%s: %d iris jobs via %s", cfg.name, len(jobs), hook.source)
    return snap


def cursor_request(cursors: dict[str, Any], literals: tuple[str, ...], limits: Any) -> dict[str, Any]:
    """What iris_poll.py ``--request`` reads with: the cursors, the metric literals (the last
    KEEP_LINES lines of each come back), sweep.yaml ``gather.log_budget_bytes`` and ``tail_bytes``."""
    from sweep_core.fanin.cursor import KEEP_LINES

    return {
        "cursors": cursors,
        "literals": list(literals),
        "keep": KEEP_LINES,
        "budget": limits.log_budget_bytes,
        "tail_bytes": limits.tail_bytes,
    }


def _pods(cfg: ClusterConfig, jobs: Any) -> dict[str, PodCount]:
    from sweep_operators.iris_pods import PodCounter

    counter = PodCounter(
        kubeconfig=cfg.kubeconfig, context=cfg.kube_context, namespace=cfg.kube_namespace, conn_id=cfg.kube_conn_id
    )
    return {job.job_id: counter.count(job.job_id) for job in jobs if job.state in COUNTED}


class IrisGatherOperator(BaseOperator):
    """State-poll one iris cluster named in include/ops; returns a snapshot dict."""

    template_fields: Sequence[str] = ("lookback_hours",)

    def __init__(
        self,
        *,
        cluster: str,
        ops_dir: str | Path,
        sweep_config_path: str | Path | None = None,
        lookback_hours: Any = "{{ params.lookback_hours }}",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.cluster = cluster
        self.sweep_config_path = str(sweep_config_path) if sweep_config_path else None
        self.ops_dir = str(ops_dir)
        self.lookback_hours = lookback_hours

    @transport_only  # a transport error is retried (sweep.yaml tasks.retries), anything else fails at once
    def execute(self, context: Any) -> dict[str, Any]:
        cfg = load_cluster(self.ops_dir, self.cluster)
        start, end = sweep_window(context, self.lookback_hours)
        if not self.sweep_config_path:
            snap = gather_iris(cfg, start, end, self.log, ended_since=self._catch_up(start, end, context))
        else:  # XCom carries metrics, evidence and capped excerpts, not log tails
            from sweep_core.config.sweep import load_sweep_config
            from sweep_core.fanin.cursor import before_digest, carry
            from sweep_core.pipeline.steps import digest_step

            config = load_sweep_config(self.sweep_config_path)
            ledger, read = self._cursor_read(config, context, end)
            snap = gather_iris(cfg, start, end, self.log, self._catch_up(start, end, context), read)
            before_digest(snap, ledger)  # a log read on from its cursor: the ledger's last lines before the new ones
            digest_step([snap], config)
            carry(snap, ledger)  # a metric the new entries did not show keeps the ledger's value, said so
        self.log.info("%s: %s; notes: %s", snap.cluster, snap.status, snap.notes)
        data = snap.to_dict()
        self.log.info("%s: XCom push %s", snap.cluster, payload_line(data))
        return data

    def _cursor_read(self, config: Any, context: Any, end: dt.datetime) -> tuple[Any, dict[str, Any]]:
        """(the ledger as this run will fold against it, read-only; the poll's cursor request)."""
        from sweep_core.fanin.cursor import iris_cursors_for, prefilter
        from sweep_core.fanin.metrics.config import metrics_config
        from sweep_core.ledger.store import ledger_for_run
        from sweep_operators.handoff_record import run_log_dir
        from sweep_operators.window import run_id_of

        ledger = ledger_for_run(run_log_dir(config), run_id_of(context), end.astimezone(dt.UTC).isoformat())
        literals, _ = prefilter(metrics_config(config.metrics))
        read = cursor_request(iris_cursors_for(ledger, self.cluster), literals, config.gather)
        return ledger, read

    def _catch_up(self, start: dt.datetime, end: dt.datetime, context: Any) -> dt.datetime | None:
        """Read ended jobs back to where the ledger last read this cluster (sweep_core.ledger.catch_up)."""
        if not self.sweep_config_path:
            return None
        from sweep_core.config.sweep import load_sweep_config
        from sweep_operators.handoff_record import run_log_dir

        config = load_sweep_config(self.sweep_config_path)
        since, _ = catch_up_since(context, run_log_dir(config), self.cluster, start, end, config.gather.catch_up_hours)
        return since if since < start else None
