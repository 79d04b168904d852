"""LIVENESS: RUNNING is not proof of progress. Log mtime vs the cluster's own clock."""

from __future__ import annotations

from sweep_core.models import ClusterSnapshot, Job


def apply_liveness(snap: ClusterSnapshot, cadence_for: dict[str, int]) -> None:
    """Set minutes_since_output and stale on each RUNNING job of ``snap``.

    ``cadence_for`` maps bucket -> minutes; jobs must be bucketed first. "Now" is the remote
    clock from the gather (no skew between the Airflow worker and the cluster).
    """
    for job in snap.running or []:
        job_liveness(job, snap.remote_now, cadence_for)


def job_liveness(job: Job, now: float | None, cadence_for: dict[str, int]) -> None:
    """apply_liveness for one RUNNING job (``now``: the cluster's clock, epoch seconds)."""
    job.minutes_since_output, job.stale = None, False
    if job.log_mtime is None or now is None:
        return
    minutes = max(0.0, (now - job.log_mtime) / 60.0)
    job.minutes_since_output = minutes
    job.stale = minutes > cadence_for.get(job.bucket, float("inf"))


def last_output_text(minutes: float | None, stale: bool, cadence: int | None, why: str = "") -> str:
    """The table cell: ``last output 7 min ago`` / ``last output 3h05m ago STALE (>30m)``."""
    if minutes is None:
        return f"last output ? ({why})" if why else "last output ?"
    if minutes < 90:
        age = f"{int(minutes)} min"
    else:
        total = int(minutes)
        age = f"{total // 60}h{total % 60:02d}m"
    text = f"last output {age} ago"
    if stale:
        return f"{text} STALE (>{cadence}m)"
    return text
