"""A recent window: one that ended a little before the gather read the cluster, but within the
past-window grace (a catch-up run after a scheduler pause, a backfill of the last hour). squeue and
the log mtimes tell about now, so the jobs that started after the window's end are not listed, and
liveness is judged at the window's end, never from output written after it.

A current window (the gather read the cluster within RECENT_TOLERANCE_S of its end: the settle
wait plus a gather) is judged by today's clock as before.
"""

from __future__ import annotations

import os

from sweep_core.fanin.liveness import elapsed_minutes, epoch_of
from sweep_core.records.models import ClusterSnapshot, Job
from sweep_core.timing.window import epoch_of_time, is_past_window

RECENT_TOLERANCE_S = 90  # $SWEEP_RECENT_WINDOW_TOLERANCE_S overrides it (the tests' short windows)
_SLACK_S = 2.0  # squeue's elapsed and the gather's clock are read a moment apart
AFTER_END_NOTE = "log written after the window's end: judged live at its end"


def recent_tolerance_s() -> int:
    """RECENT_TOLERANCE_S, or $SWEEP_RECENT_WINDOW_TOLERANCE_S when that is a whole number of seconds."""
    raw = os.environ.get("SWEEP_RECENT_WINDOW_TOLERANCE_S", "").strip()
    return int(raw) if raw.isdigit() else RECENT_TOLERANCE_S


def recent_end(snap: ClusterSnapshot) -> float | None:
    """The window's end (epoch seconds) when ``snap`` is a recent window, else None (a current
    window, a past one, or a time not known)."""
    now = snap.remote_now
    if now is None or not snap.window_end or is_past_window(snap.window_end, now):
        return None
    end = epoch_of_time(snap.window_end)
    return end if end is not None and now - end > recent_tolerance_s() else None


def started_after(job: Job, now: float, end: float) -> bool:
    """Whether a RUNNING job started after ``end`` (its start = ``now`` - its elapsed time)."""
    ran = elapsed_minutes(job.elapsed)
    return ran is not None and now - ran * 60.0 > end + _SLACK_S


def submitted_after(job: Job, end: float) -> bool:
    """Whether a PENDING job was submitted after ``end``."""
    submit = epoch_of(job.submit)
    return submit is not None and submit > end + _SLACK_S


def trim_recent(snap: ClusterSnapshot) -> float | None:
    """For a recent window: drop the RUNNING jobs that started and the PENDING jobs submitted
    after its end (the cluster's note counts them) and return the time to judge liveness at (its
    end); None for any other window (nothing changed)."""
    end = recent_end(snap)
    if end is None:
        return None
    now = float(snap.remote_now or 0.0)
    dropped = 0
    if snap.running is not None:
        keep = [j for j in snap.running if not started_after(j, now, end)]
        dropped += len(snap.running) - len(keep)
        snap.running = keep
    if snap.pending is not None:
        keep = [j for j in snap.pending if not submitted_after(j, end)]
        dropped += len(snap.pending) - len(keep)
        snap.pending = keep
    note = (
        f"recent window (ended {int((now - end) // 60)} min {int((now - end) % 60)} s before the gather): "
        "liveness judged at its end; metrics as read now"
    )
    if dropped:
        note += f"; {dropped} job(s) that started after its end not listed"
    snap.notes.append(note)
    return end


def judge_at_end(job: Job, end: float) -> None:
    """After job_liveness judged ``job`` at ``end``: a log written after the end says the job was
    still live then (never stale, age 0), and the row says so."""
    if job.log_mtime is not None and job.log_mtime > end:
        job.minutes_since_output, job.stale = 0.0, False
        job.log_note = f"{job.log_note}; {AFTER_END_NOTE}" if job.log_note else AFTER_END_NOTE
