"""A past window (a backfill): squeue and log ages tell about now, not about that window, so its
RUNNING jobs get no liveness verdict and none is handed to cancel; a current window is unchanged."""

from __future__ import annotations

import datetime as dt

from sweep_core.fanin.steps import liveness_step
from sweep_core.handoffs.triggers import plan_handoffs
from sweep_core.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.rules.context import job_flag
from sweep_core.vocab import Action, Bucket, Severity
from sweep_core.window import PAST_WINDOW_GRACE_S, PAST_WINDOW_NOTE, is_past_window

NOW = dt.datetime(2026, 12, 3, 18, 50, tzinfo=dt.UTC)


def _snap(window_end: dt.datetime) -> ClusterSnapshot:
    quiet = Job("leo", "68", "rl__quiet", "RUNNING", "squeue", bucket=Bucket.RL)
    quiet.log_mtime = NOW.timestamp() - 3 * 3600  # silent for 3 h by today's clock
    return ClusterSnapshot(
        "leo", "slurm", ClusterStatus.OK, running=[quiet], finished=[], remote_now=NOW.timestamp(),
        window_start=(window_end - dt.timedelta(minutes=3)).isoformat(), window_end=window_end.isoformat(),
    )  # fmt: skip


def test_the_boundary_of_a_past_window() -> None:
    grace = dt.timedelta(seconds=PAST_WINDOW_GRACE_S)
    assert is_past_window((NOW - grace - dt.timedelta(seconds=1)).isoformat(), NOW.timestamp())
    assert not is_past_window((NOW - grace + dt.timedelta(seconds=1)).isoformat(), NOW.timestamp())
    assert not is_past_window(NOW.isoformat(), None) and not is_past_window("", NOW.timestamp())


def test_a_past_windows_running_jobs_get_no_stall_mark_and_the_cluster_says_why() -> None:
    past, current = _snap(NOW - dt.timedelta(hours=2)), _snap(NOW)
    liveness_step([past, current], {"leo": {"RL": 30}})
    assert current.running[0].stale and PAST_WINDOW_NOTE not in current.notes  # type: ignore[index]
    job = past.running[0]  # type: ignore[index]
    assert not job.stale and job.minutes_since_output is None
    assert "liveness cannot be judged for a past window" in past.notes[-1]
    liveness_step([past], {"leo": {"RL": 30}})
    assert past.notes.count(PAST_WINDOW_NOTE) == 1  # said once


def test_a_past_windows_running_rows_are_never_handed_to_cancel() -> None:
    def cancel_jobs(snap: ClusterSnapshot) -> list[str]:
        flag = job_flag("rl_collapse", Severity.CRITICAL, snap.running[0], "grad_norm 9>5", Action.CANCEL_SALVAGE)  # type: ignore[index]
        conf = plan_handoffs([snap], [flag], dry_run=False, run_log="x.md", trackers=False, hf_chain=False)["cancel"]
        return [j["job_id"] for j in conf["jobs"]] if conf else []

    assert cancel_jobs(_snap(NOW)) == ["68"]
    assert cancel_jobs(_snap(NOW - dt.timedelta(hours=2))) == []
