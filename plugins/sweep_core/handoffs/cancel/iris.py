"""sweep_cancel on an iris (CoreWeave) cluster, the pure part: the controller's job list read as the
rows validate decides from (the same guards as squeue: listed under the user, the same name, an
allowed state), the stop line a dry run prints, and what the stop step reported per job.
The stop itself re-checks each job right before ``terminate`` (sweep_core/programs/iris_stop.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sweep_core.config.ops import ClusterConfig
from sweep_core.handoffs.cancel.fresh import on_silence
from sweep_core.handoffs.cancel.outcome import ActOutcome, Did, left_alone
from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.iris.state import TO_SWEEP, IrisJob
from sweep_core.slurm.parse import SqueueRow

# cluster's ops.md -> (its jobs as the controller lists them now | None when it did not answer, problem)
IrisList = Callable[[ClusterConfig], tuple[list[IrisJob] | None, str]]
# (ops.md, approved [{job_id, name, state, quiet_since_ms?}], confirm timeout s) -> (job id -> {rc, text, state} | None, problem)
IrisStop = Callable[[ClusterConfig, list[dict[str, Any]], int], tuple[dict[str, dict[str, Any]] | None, str]]


def iris_rows(jobs: Sequence[IrisJob]) -> list[SqueueRow]:
    """The controller's jobs as validate's rows: the sweep state (BUILDING is PENDING), iris words."""
    return [
        SqueueRow(
            job_id=j.job_id,
            raw_id=j.job_id,
            state=TO_SWEEP[j.state],
            elapsed="",
            time_limit="",
            nodes="?",
            partition="",
            reason=f"iris {j.state}",
            name=j.name,
        )
        for j in jobs
    ]


def approved_stops(decisions: Sequence[CancelDecision]) -> list[dict[str, Any]]:
    """The stop step's jobs: ``{job_id, name, state}`` as approved, and for a job flagged for its
    log's silence ``quiet_since_ms``, the newest log line's time validation read (a line after it
    = the job moved: left alone, never stopped)."""
    out = []
    for d in decisions:
        job: dict[str, Any] = {"job_id": d.request.job_id, "name": d.request.name, "state": d.state}
        last = (d.evidence or {}).get("last_output_ms")
        if on_silence(d) and isinstance(last, int):
            job["quiet_since_ms"] = last
        out.append(job)
    return out


def stop_line(job_id: str, state: str) -> str:
    """What a dry run prints (the stop step runs the same, after its re-check)."""
    return f"iris job stop {job_id} (re-checked {state} under its name first)"


def stop_outcome(rec: dict[str, Any] | None, problem: str) -> ActOutcome:
    """One job's result: STOPPED only when the controller then says KILLED."""
    if rec is None:
        return ActOutcome(Did.NOT_RUN, f"not run: {problem}" if problem else "not run (stop cut short)")
    rc, text, state = rec.get("rc"), str(rec.get("text") or ""), str(rec.get("state") or "")
    if rc == 2:
        return ActOutcome(Did.REFUSED, f"refused before stop: {text}")
    if rc == 4:  # its log was written since it was judged: the next sweep hands it again if it wedges again
        return left_alone(text)
    if rc != 0:
        return ActOutcome(Did.FAILED, f"iris stop failed: {text[:200]}")
    if state == "KILLED":
        return ActOutcome(Did.STOPPED, "stopped (iris KILLED)")
    return ActOutcome(Did.SENT, f"stop sent; iris says {state or '?'}")
