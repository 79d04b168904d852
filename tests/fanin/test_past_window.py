"""A past window (a backfill): squeue and log ages tell about now, not about that window, so its
RUNNING jobs get no liveness verdict and none is handed to cancel; a current window is unchanged."""

from __future__ import annotations

import datetime as dt

from sweep_core.handoffs.dispatch.triggers import plan_handoffs
from sweep_core.pipeline.steps import liveness_step
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.records.vocab import Action, Bucket, Severity
from sweep_core.rules.context import job_flag
from sweep_core.timing.window import PAST_WINDOW_GRACE_S, PAST_WINDOW_NOTE, is_past_window

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


def _recent(ended_s_ago: float) -> ClusterSnapshot:
    """A window that ended ``ended_s_ago`` before the gather read the cluster (within the grace)."""
    end = NOW.timestamp() - ended_s_ago
    quiet = Job("leo", "70", "rl__quiet", "RUNNING", "squeue", bucket=Bucket.RL, elapsed="2:00:00")
    quiet.log_mtime = end - 40 * 60  # silent 40 min at the window's end
    chatty = Job("leo", "71", "rl__chatty", "RUNNING", "squeue", bucket=Bucket.RL, elapsed="1:00:00")
    chatty.log_mtime = end + 30  # wrote 30 s after the end: live then (a recent window cannot tell more)
    late = Job("leo", "72", "rl__late", "RUNNING", "squeue", bucket=Bucket.RL, elapsed="0:30")  # started after
    late.log_mtime = NOW.timestamp() - 5
    held = Job("leo", "73", "rl__held", "PENDING", "squeue-pending", submit=str(int(end + 60)))
    early = Job("leo", "74", "rl__early", "PENDING", "squeue-pending", submit=str(int(end - 600)))
    return ClusterSnapshot(
        "leo", "slurm", ClusterStatus.OK, running=[quiet, chatty, late], finished=[], pending=[held, early],
        remote_now=NOW.timestamp(), window_start=dt.datetime.fromtimestamp(end - 300, dt.UTC).isoformat(),
        window_end=dt.datetime.fromtimestamp(end, dt.UTC).isoformat(),
    )  # fmt: skip


def test_a_recent_window_lists_no_job_started_after_its_end_and_judges_liveness_at_its_end() -> None:
    """A backfill of a window that ended 2 min before the gather (seen on a real scheduler at a
    2-minute cadence): a job submitted after the end was listed as RUNNING with 'last output 0 min
    ago'. Now it is not listed, and silence is measured at the window's end."""
    snap = _recent(120)
    liveness_step([snap], {"leo": {"RL": 30}})
    by = {j.name: j for j in snap.running or []}
    assert set(by) == {"rl__quiet", "rl__chatty"}  # rl__late started 30 s ago: after the end
    assert [j.name for j in snap.pending or []] == ["rl__early"]
    assert by["rl__quiet"].stale and round(by["rl__quiet"].minutes_since_output or 0) == 40  # not 42: at the end
    assert not by["rl__chatty"].stale and "after the window's end" in by["rl__chatty"].log_note
    assert any("recent window" in n and "2 job(s) that started after its end" in n for n in snap.notes)
    assert PAST_WINDOW_NOTE not in snap.notes


def test_a_current_window_is_judged_by_todays_clock_and_lists_every_job() -> None:
    snap = _recent(20)  # the settle wait and a gather: the window has just ended
    liveness_step([snap], {"leo": {"RL": 30}})
    assert {j.name for j in snap.running or []} == {"rl__quiet", "rl__chatty", "rl__late"}
    assert len(snap.pending or []) == 2 and not any("recent window" in n for n in snap.notes)
    quiet = next(j for j in snap.running or [] if j.name == "rl__quiet")
    assert round(quiet.minutes_since_output or 0) == 40  # 40 min + 20 s by today's clock
