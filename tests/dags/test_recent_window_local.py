"""A recent window swept on the REAL local Slurm: a backfill of a window that ended moments before
the gather (within the past-window grace, so squeue is still asked). Seen on a real scheduler with
2-minute windows: such a run listed a job submitted after the window's end as RUNNING, with today's
'last output 0 min ago'. Now it is not listed, and a job's silence is measured at the window's end.

The recent-window tolerance is cut to a few seconds ($SWEEP_RECENT_WINDOW_TOLERANCE_S) so a window
that ended seconds ago counts as recent, not current.
"""

from __future__ import annotations

import datetime as dt
import os
import time

import pytest
from sweep_runner import run_sweep

from sweep_core.timing.window import PAST_WINDOW_NOTE

pytestmark = pytest.mark.cluster


def test_a_recent_window_lists_no_later_job_and_measures_silence_at_its_end(
    local_cluster, tag, tmp_path, monkeypatch
) -> None:
    c = local_cluster
    quiet = c.submit(f"sft__{tag}_quiet", "echo 'Training Step Progress: 3/600'; exec sleep 900")
    c.wait_running(quiet)
    log = c.wait_log(quiet)
    end = dt.datetime.fromtimestamp(int(time.time()) + 2, dt.UTC)  # the window: [end - 6 min, end)
    silent_since = end.timestamp() - 40 * 60
    os.utime(log, (silent_since, silent_since))  # its last output 40 min before the window's end
    time.sleep(max(0.0, end.timestamp() - time.time()) + 4)  # clear of the start-time slack (2 s)
    after = c.submit(f"sft__{tag}_after", "echo started; exec sleep 900")  # submitted after the end
    c.wait_running(after)
    time.sleep(max(0.0, end.timestamp() + 8 - time.time()))

    monkeypatch.setenv("SWEEP_RECENT_WINDOW_TOLERANCE_S", "3")
    run = run_sweep({"clusters": ["local"], "lookback_hours": 0.1}, tmp_path / "logs", logical_date=end, run_after=end)
    assert run.task_states["render"] == "success", run.task_states
    local = run.snapshots["local"]
    assert local.window_end == end.isoformat() and PAST_WINDOW_NOTE not in local.notes
    names = [j.name for j in local.all_jobs()]
    assert f"sft__{tag}_after" not in names, names  # RUNNING now, but started after the window
    job = run.job(f"sft__{tag}_quiet")
    assert job.state == "RUNNING" and job.stale
    assert 39.5 <= (job.minutes_since_output or 0) <= 40.5, job.minutes_since_output  # at the end, not now
    assert any("recent window" in n and "started after its end not listed" in n for n in local.notes), local.notes
    assert "recent window" in run.report  # the Clusters table says how it was judged
