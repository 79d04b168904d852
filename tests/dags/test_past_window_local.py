"""A past window swept on the REAL local Slurm (issue 11, backfill semantics): its tables are what
sacct knows about that window, never what squeue says now. A job submitted after the window ended
is absent; a job that ran through the window's end and has ended since is RUNNING as it was then;
a job that failed in the window is FAILED; the report says liveness is not judged.

The past-window grace is cut to a few seconds ($SWEEP_PAST_WINDOW_GRACE_S) so the window can be
past a few seconds after it ends instead of 15 minutes.
"""

from __future__ import annotations

import datetime as dt
import re
import time

import pytest
from lab import HOME
from sweep_runner import run_sweep

from sweep_core.slurm.past_window import PAST_RUNNING_LOG_NOTE
from sweep_core.slurm.snapshot import PAST_WINDOW_SOURCE
from sweep_core.timing.window import PAST_WINDOW_NOTE

pytestmark = pytest.mark.cluster
GRACE_S = 5
JOBS = HOME / "jobs"


def test_a_past_window_lists_what_sacct_knew_then_not_what_runs_now(local_cluster, tag, tmp_path, monkeypatch) -> None:
    c = local_cluster
    gate = JOBS / f"{tag}-through.go"
    through = c.submit(f"sft__{tag}_through", f"echo started; while [ ! -e {gate} ]; do sleep 1; done; exit 0")
    failed = c.submit(f"sft__{tag}_failed", "echo started; sleep 2; exit 3")
    c.wait_running(through)
    c.wait_finished(failed, "FAILED")
    end = dt.datetime.fromtimestamp(int(time.time()) + 2, dt.UTC)  # the window: [end - 6 min, end)
    time.sleep(max(0.0, end.timestamp() - time.time()) + 1)
    gate.touch()
    after = c.submit(f"sft__{tag}_after", "echo started; sleep 900")  # submitted after the window ended
    c.wait_running(after)
    c.wait_finished(through, "COMPLETED")
    time.sleep(max(0.0, end.timestamp() + GRACE_S + 1 - time.time()))

    monkeypatch.setenv("SWEEP_PAST_WINDOW_GRACE_S", str(GRACE_S))
    run = run_sweep({"clusters": ["local"], "lookback_hours": 0.1}, tmp_path / "logs", logical_date=end, run_after=end)
    assert run.task_states["render"] == "success", run.task_states
    local = run.snapshots["local"]
    assert local.window_end == end.isoformat() and PAST_WINDOW_SOURCE in local.notes
    names = [j.name for j in local.all_jobs()]
    assert f"sft__{tag}_after" not in names, names  # RUNNING now, but submitted after the window
    then = run.job(f"sft__{tag}_through")
    assert (then.state, then.source) == ("RUNNING", "squeue") and then in (local.running or [])
    assert "now COMPLETED" in then.note and then.log_note == PAST_RUNNING_LOG_NOTE
    assert not then.stale and then.minutes_since_output is None
    assert run.job(f"sft__{tag}_failed").state == "FAILED"
    assert PAST_WINDOW_NOTE in local.notes and "liveness cannot" in run.report  # the Clusters table says it
    table = re.sub(r"[│\s]+", " ", run.rendered["tables"]["SFT"])  # the Note column (the last) unwrapped
    assert "running at the window's end (sacct); now COMPLETED" in table  # and what became of it
