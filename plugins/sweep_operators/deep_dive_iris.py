"""The deep-dive's iris (CoreWeave) reading, wired: the whole log since submission through the iris
client (IrisHook.stream_logs -> sweep_core's LogDigest, bounded memory), the rollouts at ops.md
``rollout_url`` (an ObjectStoragePath), and the pods' GPUs by ``nvidia-smi`` exec through the
KubernetesHook where ops.md ``gpu_exec`` allows it. Logic is in sweep_core.handoffs.deep_dive.iris_probe.
"""

from __future__ import annotations

import time
from typing import Any

from sweep_core.config.deep_dive_schema import DeepDiveSection
from sweep_core.config.ops import ClusterConfig
from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.handoffs.deep_dive.iris_probe import read_log_stream, read_rollouts, rollout_dir
from sweep_core.handoffs.deep_dive.remote import Gathered, ProbeJob
from sweep_operators.iris_hook import IrisHook


def _path(url: str) -> Any:
    if "://" not in url or url.startswith("file://"):
        from pathlib import Path

        return Path(url.removeprefix("file://"))
    from airflow.sdk import ObjectStoragePath

    return ObjectStoragePath(url)


def iris_probe(
    cfg: ClusterConfig, jobs: list[ProbeJob], dd: DeepDiveSection, mcfg: MetricsConfig, *, log_timeout_s: float = 600
) -> list[Gathered]:
    """What was read of each job of one iris cluster (never raises: an input not read is unknown)."""
    hook = IrisHook.for_cluster(cfg) if (cfg.iris_python or cfg.iris_binary) else None
    kinds = (("weight-sync", dd.weight_sync_patterns), ("engine-starvation", dd.starvation_patterns))
    ids = [j.job_id for j in jobs]
    events = hook.stream_logs(ids, log_timeout_s) if hook else iter([{"error": f"{cfg.path}: iris_python is unset"}])
    where = hook.where if hook else cfg.name
    got = read_log_stream(events, ids, mcfg, kinds, dd.log_bytes, int(time.time() * 1000), where)
    out = [got[j.job_id] for j in jobs]
    reader = None
    if cfg.gpu_exec and (cfg.kubeconfig or cfg.kube_conn_id):
        from sweep_operators.iris_pods import PodGpuReader

        reader = PodGpuReader(
            kubeconfig=cfg.kubeconfig, context=cfg.kube_context, namespace=cfg.kube_namespace, conn_id=cfg.kube_conn_id
        )
    for job, g in zip(jobs, out, strict=True):
        d = rollout_dir(cfg.rollout_url, job.job_id, job.name)
        if d:
            g.trace_dir = d
            g.files, g.trace_problem = read_rollouts(_path(d), dd.trace_files, dd.max_files, dd.file_bytes)
        else:
            g.trace_problem = f"rollouts not reachable: {cfg.path} rollout_url is unset"
        if reader is not None:
            g.gpus, g.gpu_note = reader.gpus(job.job_id)
        elif not cfg.gpu_exec:
            g.gpu_note = f"not probed: {cfg.path} gpu_exec is false (no pod exec on this cluster)"
        else:
            g.gpu_note = f"not probed: {cfg.path} gpu_exec needs kubeconfig (or kube_conn_id)"
    return out
