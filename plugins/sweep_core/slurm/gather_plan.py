"""One SLURM cluster's gather, the pure ends (the SSH run between them is the Airflow side's):
the request built from its ops.md and sweep.yaml's gather limits, and the snapshot made of what the
failover run brought back (UNREACHABLE when no login node answered, a failover said in the notes:
which node's read it is, and why each one before it was passed over)."""

from __future__ import annotations

import datetime as dt

from sweep_core.config.ops import ClusterConfig
from sweep_core.config.steps_schema import DaytonaSection
from sweep_core.config.sweep import GatherLimits
from sweep_core.gpu.probe import probe_for_run
from sweep_core.records.models import ClusterSnapshot, ClusterStatus
from sweep_core.slurm.failover import FailoverResult
from sweep_core.slurm.gather import GatherRequest
from sweep_core.slurm.snapshot import snapshot_from_output
from sweep_core.slurm.steps import attach_steps, step_lines


def headroom_request(cfg: ClusterConfig) -> dict[str, object]:
    """What INODE HEADROOM asks of this cluster: nothing when ops.md says none or dormant."""
    if cfg.quota.kind == "none" or cfg.quota.dormant:
        return {}
    return {"df_paths": tuple(cfg.artifact_roots), "quota_command": cfg.quota.command}


def gather_request(
    cfg: ClusterConfig,
    limits: GatherLimits,
    window_start: dt.datetime,
    window_end: dt.datetime,
    *,
    gpu_patterns: tuple[str, ...] = (),
    trace_patterns: tuple[str, ...] = (),
    cursors: dict[str, tuple[int, int, int]] | None = None,
    literals: tuple[str, ...] = (),
    keep_lines: int = 50,
    sft_patterns: tuple[str, ...] = (),
    daytona: DaytonaSection | None = None,
    stream_names: tuple[str, ...] = (),
    stream_words: tuple[str, ...] = (),
    stream_cursors: dict[str, dict[str, tuple[int, ...]]] | None = None,
    watch: bool = False,
) -> GatherRequest:
    """The gather script's request (``cursors`` None: read every tail whole, not on from a cursor;
    ``literals``/``keep_lines``: the prefilter's, sweep_core.fanin.cursor; ``sft_patterns``: the SFT
    completions whose launch YAML is read; ``daytona``: its snapshot list runs here when it names
    this cluster, as the eval canary does when ops.md names one); ``stream_names``: the jobs whose
    ops.md metric_streams are read (the RL and SFT buckets' patterns), from ``stream_cursors``, their tags
    prefiltered by ``stream_words`` (sweep_core.fanin.streams); ``watch``: a watch run's, whose
    GPU source is gpu.probe.probe_for_run's: no srun-overlap probe."""
    return GatherRequest(
        user=cfg.user,
        window_start=int(window_start.timestamp()),
        window_end=int(window_end.timestamp()),
        tail_bytes=limits.tail_bytes,
        max_jobs=limits.max_jobs,
        settle_s=limits.sacct_settle_s,
        chain_prefixes=limits.chain_prefixes,
        log_pattern=cfg.log_pattern,
        repo_path=cfg.repo_path,
        python=cfg.login_python,
        bound_s=max(5, limits.command_timeout_s - 10),  # ends on the node before SSH gives up
        gpu_probe=probe_for_run(cfg.gpu_probe, watch=watch),
        gpu_max=cfg.gpu_probe_max,
        gpu_timeout_s=cfg.gpu_probe_timeout_s,
        gpu_patterns=gpu_patterns,
        artifact_roots=tuple(cfg.artifact_roots),
        trace_patterns=trace_patterns,
        incremental=cursors is not None,
        cursors=cursors or {},
        literals=literals,
        keep_lines=keep_lines,
        sft_patterns=sft_patterns,
        step_lines=step_lines(cfg.name, cfg.eval_canary, daytona),
        log_budget=limits.log_budget_bytes,
        stream_dirs=tuple(cfg.metric_streams),
        stream_names=stream_names,
        stream_words=stream_words,
        stream_cursors=stream_cursors or {},
        stream_file_bytes=limits.stream_file_bytes,
        stream_budget=limits.stream_budget_bytes,
        stream_points=limits.stream_points,
        **headroom_request(cfg),  # type: ignore[arg-type]
    )


def gathered_snapshot(
    cfg: ClusterConfig,
    req: GatherRequest,
    result: FailoverResult,
    window_start: str,
    window_end: str,
    daytona: DaytonaSection | None = None,
    now: float = 0.0,
) -> ClusterSnapshot:
    """The snapshot of what the run brought back, with the command steps' answers (the canary, the
    snapshot list) read at the login node's time (else ``now``); never raises for cluster-side trouble."""
    if result.output is None or result.node is None:
        why = "unreachable, skipped this sweep: " + " | ".join(result.attempts)
        return ClusterSnapshot(
            cfg.name, "slurm", ClusterStatus.UNREACHABLE, window_start=window_start, window_end=window_end, notes=[why]
        )
    snap = snapshot_from_output(
        cfg.name,
        result.output,
        result.node.name,
        window_start,
        window_end,
        cfg.quota,
        len(req.df_paths),
        cfg.gpu_probe_timeout_s,
        cfg.gpu_mem_ceiling,
        cfg.gpu_probe_max,
        req.gpu_probe,
        req.artifact_roots,
        {p: (n.gpus, n.memory) for p, n in cfg.whole_nodes.items()},
    )
    attach_steps(snap, result.output, cfg.eval_canary, daytona, snap.remote_now or now)
    if snap.tree is not None:
        snap.tree["triage"] = bool(cfg.local_clone)  # the hygiene hand-off is ON here
    if result.attempts:
        used = result.node.name
        if any(a.startswith(used + " (") for a in result.attempts):  # no node read it whole: its read kept
            head = f"failed over, no login node read it whole (kept {used}'s read)"
        else:
            head = f"failed over, read on {used}"
        snap.notes.insert(0, f"{head}: " + " | ".join(result.attempts))
    return snap
