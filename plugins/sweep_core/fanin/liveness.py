"""LIVENESS: RUNNING is not proof of progress. Log mtime vs the cluster's own clock."""

from __future__ import annotations

import datetime as dt
import re

from sweep_core.records.models import ClusterSnapshot, Job

# A log older than its job by more than this (minutes; squeue's elapsed and the gather's clock
# are read a moment apart) was last written before the job started.
_SLACK_MIN = 2.0


def elapsed_minutes(text: str) -> float | None:
    """Slurm elapsed ``[D-]HH:MM:SS`` / ``MM:SS`` -> minutes."""
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", text.strip())
    if not m:
        return None
    d, h, mi, s = (int(x) if x else 0 for x in m.groups())
    return d * 1440 + h * 60 + mi + s / 60


def elapsed_text(text: str) -> str:
    """Elapsed in one form, sacct's ``[D-]HH:MM:SS``: squeue's ``3:23`` -> ``00:03:23``,
    ``1:02:03`` -> ``01:02:03``, ``2-3:04:05`` -> ``2-03:04:05``; anything else (``INVALID``,
    empty) is returned as it came."""
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", text.strip())
    if not m:
        return text
    d, h, mi, s = m.groups()
    return (f"{int(d)}-" if d else "") + f"{int(h or 0):02d}:{int(mi):02d}:{int(s):02d}"


def epoch_of(text: str) -> float | None:
    """An epoch-seconds field (squeue with SLURM_TIME_FORMAT=%s); None for N/A, empty or anything else."""
    return float(text) if text.strip().isdigit() else None


def pending_minutes(job: Job, now: float | None) -> float | None:
    """Minutes a PENDING job has waited since its submit time (remote clock); None when unknown."""
    submit = epoch_of(job.submit)
    return None if submit is None or now is None else max(0.0, (now - submit) / 60.0)


def utc_text(epoch: float) -> str:
    """``2026-12-03 17:05 UTC``: an epoch time as the report prints it."""
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def age_text(minutes: float) -> str:
    """``7 min`` under 90 minutes, else ``3h05m``."""
    if minutes < 90:
        return f"{int(minutes)} min"
    total = int(minutes)
    return f"{total // 60}h{total % 60:02d}m"


def predates_job(job: Job) -> float | None:
    """The job's elapsed minutes when its log was last written before it started (a reused log
    file: silence older than the job itself is no evidence about this job), else None."""
    ran = elapsed_minutes(job.elapsed)
    if ran is None or job.minutes_since_output is None or job.minutes_since_output <= ran + _SLACK_MIN:
        return None
    return ran


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
    if job.base_state == "SUSPENDED":  # stopped by Slurm: silence is expected, not a hang
        note = "suspended: its silence is not judged"
        job.log_note = f"{job.log_note}; {note}" if job.log_note else note
        return
    job.stale = minutes > cadence_for.get(job.bucket, float("inf"))
    ran = predates_job(job)
    if ran is not None:
        note = f"log last written before this job started (the job has run {int(ran)} min)"
        job.log_note = f"{job.log_note}; {note}" if job.log_note else note


def last_output_text(minutes: float | None, stale: bool, cadence: int | None, why: str = "") -> str:
    """The table cell: ``last output 7 min ago`` / ``last output 3h05m ago STALE (>30m)``."""
    if minutes is None:
        return f"last output ? ({why})" if why else "last output ?"
    text = f"last output {age_text(minutes)} ago"
    if stale:
        return f"{text} STALE (>{cadence}m)"
    return text
