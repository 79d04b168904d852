"""One sweep as rows of one table (column ``record``): a ``job`` row per job (cluster, bucket, id,
name, state, elapsed, last-output age, every metric as ``m.<name>``, its flags, its log's last lines,
the restart its log states: ``restart_line``, ``restart_step``), a ``cluster`` row
per cluster (status, login node, quota/headroom), a ``flag`` row per flag and a ``point`` row per
(step, value) of a metric read this sweep (``metric``, ``step``, ``value``: the series), each with the run id,
the window and the run log's name. One table per sweep keeps the write of a sweep a single atomic file.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sweep_core.records.models import ClusterSnapshot, Flag, Job, json_safe
from sweep_core.safe.text import clean

if TYPE_CHECKING:  # imported where used: a DAG file's parse and most tasks need no pandas
    import pandas as pd

JOB, CLUSTER, FLAG, POINT = "job", "cluster", "flag", "point"
SCHEMA_VERSION = "1"
METRIC_PREFIX, QUOTA_PREFIX = "m.", "quota."
BASE_COLUMNS = ("record", "run_id", "window_start", "window_end", "cluster")
RESTART_EVIDENCE = "restart"  # the key of the tail's restart line in Job.evidence (fanin.step_check.RESTART_KEY)
RESTART_LINE, RESTART_STEP = "restart_line", "restart_step"  # its job-row columns
RESTART_CHARS = 200
# the step a restart line names: "step 1200", "global_step=1200", "global_step_1200", "checkpoint-1200",
# Megatron-LM's "at iteration 1200" and its checkpoint folder "iter_0001200"
_RESTART_STEP = re.compile(
    r"(?:global[_ ]step|\bstep|checkpoint|\biteration)[-_ =:/]*(\d{1,12})\b|\biter_(\d{1,12})\b", re.IGNORECASE
)


def restart_of(job: Job) -> tuple[str | None, float | None]:
    """The restart the job's log itself states this sweep (its tail's last resume/restart line, as
    fanin.step_check.restart_evidence found it): the line, one clean line of at most RESTART_CHARS,
    and the step it names (the last ``step N`` / ``global_step_N`` / ``checkpoint-N`` / ``iteration N`` /
    ``iter_N`` in it; None when it names none); (None, None) when the log states no restart."""
    said = job.evidence.get(RESTART_EVIDENCE)
    if not isinstance(said, str) or not said.strip():
        return None, None
    line = clean(said, newlines=False).strip()[:RESTART_CHARS]
    steps = [a or b for a, b in _RESTART_STEP.findall(line)]
    return line, (float(steps[-1]) if steps else None)


def signature(flag: Flag) -> str:
    """What makes a flag the same flag from sweep to sweep: rule, cluster, job (not its message)."""
    return f"{flag.rule}|{flag.cluster}|{flag.job_id}"


def cluster_signature(cluster: str, status: str) -> str:
    """A cluster problem (UNKNOWN, UNREACHABLE, ERROR...) as a flag-like signature."""
    return f"cluster-{status.lower()}|{cluster}|"


def _scalar(value: Any) -> float | str | None:
    """A metric value a Parquet column can hold: numbers as floats, text as text, the rest JSON."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if value is None or isinstance(value, str):
        return value
    return json.dumps(json_safe(value), sort_keys=True)


def _job_row(job: Job) -> dict[str, Any]:
    row: dict[str, Any] = {
        "record": JOB,
        "cluster": job.cluster,
        "bucket": str(job.bucket),
        "job_id": job.job_id,
        "name": job.name,
        "state": job.state,
        "source": job.source,
        "elapsed": job.elapsed,
        "partition": job.partition,
        "nodes": job.nodes,
        "exit_code": job.exit_code,
        "minutes_since_output": job.minutes_since_output,
        "stale": job.stale,
        "job_flags": " ".join(sorted({str(f.get("rule", "")) for f in job.flags})),
        "run_series": str(job.metrics.get("run_series") or ""),
        "tail": job.log_tail or None,  # the last lines the fan-in kept (pipeline.drop_tails)
        # the GPU probe's mean utilisation (None: not probed / unknown): the serving LUT learns from it
        "gpu_mean_util": None if not job.gpu or job.gpu.get("why") else _scalar(job.gpu.get("mean_util")),
    }
    row[RESTART_LINE], row[RESTART_STEP] = restart_of(job)
    for key, value in sorted(job.metrics.items()):
        v = _scalar(value)
        if isinstance(v, float) and not math.isfinite(v):
            v = None if math.isnan(v) else v
        row[METRIC_PREFIX + key] = v
    return row


def _cluster_row(s: ClusterSnapshot) -> dict[str, Any]:
    quota = s.quota or {}
    row: dict[str, Any] = {
        "record": CLUSTER,
        "cluster": s.cluster,
        "scheduler": s.scheduler,
        "status": str(s.status),
        "login_node": s.login_node,
        "notes": "; ".join(s.notes),
        "running": None if s.running is None else float(len(s.running)),
        "finished": None if s.finished is None else float(len(s.finished)),
        "quota_status": str(quota.get("status") or ""),
        "quota_reason": str(quota.get("reason") or ""),
    }
    worst = quota.get("worst") if isinstance(quota.get("worst"), dict) else {}
    for key, value in sorted(worst.items()):
        row[QUOTA_PREFIX + key] = _scalar(value)
    return row


def _point_rows(job: Job) -> list[dict[str, Any]]:
    """A ``point`` row per (step, value) this sweep read of the job (``Job.points``: its metric
    streams', else its console series'; bounded by gather.stream_points per column)."""
    return [
        {
            "record": POINT,
            "cluster": job.cluster,
            "job_id": job.job_id,
            "name": job.name,
            "bucket": str(job.bucket),
            "metric": metric,
            "step": float(step),
            "value": float(value),
        }
        for metric, points in sorted(job.points.items())
        for step, value in points
    ]


def _flag_row(f: Flag) -> dict[str, Any]:
    return {
        "record": FLAG,
        "cluster": f.cluster,
        "signature": signature(f),
        "rule": f.rule,
        "severity": str(f.severity),
        "bucket": str(f.bucket),
        "job_id": f.job_id,
        "name": f.job_name,
        "message": f.message,
        "action": str(f.action),
    }


def sweep_frame(
    snaps: Sequence[ClusterSnapshot],
    flags: Sequence[Flag],
    *,
    run_id: str,
    window_start: dt.datetime,
    window_end: dt.datetime,
    run_log: str = "",
) -> pd.DataFrame:
    """The rows of one sweep (jobs, clusters, flags), each carrying the run id, the window and the
    name of the sweep's run log in the run-log store (the Sweeps page links it)."""
    import pandas as pd

    rows = [_cluster_row(s) for s in snaps]
    rows += [_job_row(j) for s in snaps for j in s.all_jobs()]
    rows += [_flag_row(f) for f in flags]
    points = [p for s in snaps for j in s.all_jobs() for p in _point_rows(j)]
    rows += sorted(points, key=lambda p: (p["cluster"], p["job_id"]))  # by job: a one-job read skips row groups
    frame = pd.DataFrame(rows, columns=list(dict.fromkeys([*BASE_COLUMNS, *(k for r in rows for k in r)])))
    frame["run_id"] = run_id
    frame["window_start"] = pd.Timestamp(window_start.astimezone(dt.UTC))
    frame["window_end"] = pd.Timestamp(window_end.astimezone(dt.UTC))
    frame["run_log"] = run_log
    for col in frame.columns:
        if col == "stale":
            frame[col] = frame[col].astype("boolean")
        elif frame[col].dtype == object:
            frame[col] = frame[col].astype("string")
    return frame
