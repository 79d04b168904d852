"""SLURM gather over the ssh provider's SSHHook: ONE SSH session, ONE batched script per sweep.

Airflow-facing wiring only: connections, XCom, logging. The script, its parsing, the failover
policy and the validation live in sweep_core.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowNotFoundException

from sweep_core.config.ops import ClusterConfig, load_cluster
from sweep_core.config.steps_schema import DaytonaSection
from sweep_core.config.sweep import GatherLimits, load_sweep_config
from sweep_core.fanin.cursor import KEEP_LINES, cursors_for, prefilter, stream_cursors_for
from sweep_core.fanin.digest import payload_line
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.fanin.streams import STREAM_WORDS
from sweep_core.gpu.probe import gpu_patterns
from sweep_core.ledger.store import ledger_for_run
from sweep_core.pipeline.steps import digest_gathered
from sweep_core.records.models import ClusterSnapshot, ClusterStatus
from sweep_core.records.vocab import Bucket
from sweep_core.slurm.gather import bucket_patterns, build_gather_script
from sweep_core.slurm.gather_plan import gather_request, gathered_snapshot
from sweep_core.timing.cadence import is_watch_run
from sweep_operators.cluster_ssh import run_batch
from sweep_operators.handoff_record import run_log_dir
from sweep_operators.reliability import transport_only
from sweep_operators.window import catch_up_since, run_id_of, sweep_window


def gather_slurm(
    cfg: ClusterConfig,
    limits: GatherLimits,
    window_start: dt.datetime,
    window_end: dt.datetime,
    log: Any = None,
    gpu_patterns: tuple[str, ...] = (),
    trace_patterns: tuple[str, ...] = (),
    cursors: dict[str, tuple[int, int, int]] | None = None,
    literals: tuple[str, ...] = (),
    sft_patterns: tuple[str, ...] = (),
    daytona: DaytonaSection | None = None,
    stream_cursors: dict[str, dict[str, tuple[int, ...]]] | None = None,
    watch: bool = False,
) -> ClusterSnapshot:
    """Gather one SLURM cluster over ONE SSH session (sweep_core.slurm.gather_plan builds the request
    and reads the snapshot); never raises for cluster-side trouble (it becomes the status).
    ``gpu_patterns``: the GPU buckets' name patterns (sweep_core.gpu.probe.gpu_patterns);
    ``trace_patterns``: the RL bucket's (completions whose artifact dir is checked for trace_jobs/);
    ``sft_patterns``: the SFT bucket's (completions whose launch YAML is read: HF-only or not);
    ``daytona``: sweep.yaml's section (its snapshot list runs here when it names this cluster);
    ``watch``: a watch run's gather (no srun-overlap GPU probe: sweep_core.gpu.probe.probe_for_run)."""
    req = gather_request(
        cfg,
        limits,
        window_start,
        window_end,
        gpu_patterns=gpu_patterns,
        trace_patterns=trace_patterns,
        cursors=cursors,
        literals=literals,
        keep_lines=KEEP_LINES,
        sft_patterns=sft_patterns,
        daytona=daytona,
        stream_names=trace_patterns + sft_patterns,
        stream_words=STREAM_WORDS,
        stream_cursors=stream_cursors,
        watch=watch,
    )
    script, marker = build_gather_script(req)
    result = run_batch(cfg, script, marker, limits.connect_timeout_s, limits.command_timeout_s, log, "gather")
    return gathered_snapshot(cfg, req, result, window_start.isoformat(), window_end.isoformat(), daytona, time.time())


class SlurmGatherOperator(BaseOperator):
    """Gather one SLURM cluster named in include/ops: squeue (validated), sacct over the data
    interval, StdOut mtimes and bounded log tails, over ONE SSH session. Returns a snapshot dict."""

    template_fields: Sequence[str] = ("lookback_hours",)

    def __init__(
        self,
        *,
        cluster: str,
        ops_dir: str | Path,
        sweep_config_path: str | Path,
        lookback_hours: Any = "{{ params.lookback_hours }}",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.cluster = cluster
        self.ops_dir = str(ops_dir)
        self.sweep_config_path = str(sweep_config_path)
        self.lookback_hours = lookback_hours

    @transport_only  # a transport error is retried (sweep.yaml tasks.retries), anything else fails at once
    def execute(self, context: Any) -> dict[str, Any]:
        cfg = load_cluster(self.ops_dir, self.cluster)
        config = load_sweep_config(self.sweep_config_path)
        start, end = sweep_window(context, self.lookback_hours)
        # the cursors this run reads on from: the ledger as this run will fold against it (read-only;
        # a re-run reads the same bytes again), the render task's fold stores the new ones
        ledger = ledger_for_run(run_log_dir(config), run_id_of(context), end.astimezone(dt.UTC).isoformat())
        try:
            snap = self._gather(cfg, config, ledger, start, end, context)
        except AirflowNotFoundException as exc:  # the cluster's Connection is not defined
            snap = ClusterSnapshot(
                cfg.name,
                "slurm",
                ClusterStatus.ERROR,
                window_start=start.isoformat(),
                window_end=end.isoformat(),
                notes=[f"configuration error: {exc}"],
            )
        digest_gathered(snap, ledger, config)  # XCom carries metrics, evidence and capped excerpts, not log tails
        self.log.info("%s: %s via %s; notes: %s", snap.cluster, snap.status, snap.login_node or "-", snap.notes)
        data = snap.to_dict()
        self.log.info("%s: XCom push %s", snap.cluster, payload_line(data))
        return data

    def _gather(
        self, cfg: ClusterConfig, config: Any, ledger: Any, start: dt.datetime, end: dt.datetime, context: Any
    ) -> ClusterSnapshot:
        """gather_slurm over the catch-up window (sacct reaches back where the ledger last read it)."""
        since, widened = catch_up_since(
            context, run_log_dir(config), cfg.name, start, end, config.gather.catch_up_hours
        )
        self.log.info("sacct window %s -> %s", since.isoformat(), end.isoformat())
        literals, _ = prefilter(metrics_config(config.metrics))
        snap = gather_slurm(
            cfg,
            config.gather,
            since,
            end,
            self.log,
            gpu_patterns(config.buckets),
            bucket_patterns(config.buckets, Bucket.RL),
            cursors_for(ledger, cfg.name),
            literals,
            bucket_patterns(config.buckets, Bucket.SFT),
            config.daytona,
            stream_cursors_for(ledger, cfg.name),
            is_watch_run(run_id_of(context)),
        )
        snap.window_start = start.isoformat()  # the sweep's own window; the note says sacct reached back
        if widened:
            snap.notes.append(widened)
        return snap
