"""The rules' History read from the Parquet history (RECURRING signatures, RL names and series,
launch fingerprints, oldest to newest; the last 8 sweeps before the window)."""

from __future__ import annotations

import datetime as dt

from sweep_core.history.rows import sweep_frame
from sweep_core.history.rules_history import load_rules_history
from sweep_core.history.store import HistoryStore
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)
H = dt.timedelta(hours=3)


def _snaps(i: int) -> list[ClusterSnapshot]:
    fp = {"model": f"m{i}", "config": None if i % 2 else "c.yaml", "nodes": 2}
    running = [
        Job("c1", f"{i}1", f"rl__series_a_link{i}", "RUNNING", "squeue", bucket="RL",
            metrics={"run_series": "rl__series_a", "fingerprint": fp}),
        Job("c1", f"{i}2", "sft__x", "RUNNING", "squeue", bucket="SFT", metrics={}),
    ]  # fmt: skip
    finished = [
        Job("c1", f"{i}3", f"rl__series_b{i}", "FAILED", "sacct", bucket="RL",
            metrics={"run_series": "rl__series_b", "fingerprint": {"image": f"img{i}.sif"},
                     "failure_signature": "RuntimeError: boom"}),
    ]  # fmt: skip
    return [ClusterSnapshot("c1", "slurm", ClusterStatus.OK, running=running, finished=finished)]


def test_rules_read_the_last_eight_sweeps_before_their_window(tmp_path) -> None:
    store = HistoryStore(tmp_path / "history")
    for i in range(10):
        end, snaps = T0 + i * H, _snaps(i)
        frame = sweep_frame(snaps, [], run_id=f"r{i}", window_start=end - H, window_end=end)
        store.append(frame, run_id=f"r{i}", window_end=end)
    got = load_rules_history(store, T0 + 10 * H)
    assert got.known and got.rl_series == {"rl__series_a", "rl__series_b"}
    assert got.rl_names == {f"rl__series_a_link{i}" for i in range(2, 10)} | {f"rl__series_b{i}" for i in range(2, 10)}
    # the newest known field wins; a field the newest sweep could not read keeps the older value
    assert got.rl_fingerprints["rl__series_a"] == {"model": "m9", "config": "c.yaml", "nodes": 2}
    assert got.rl_fingerprints["rl__series_b"] == {"image": "img9.sif"}
    assert got.failure_signatures["RuntimeError: boom"] == {f"c1|{i}3" for i in range(2, 10)}
    assert not load_rules_history(store, T0).known  # nothing before the first window
    rerun = load_rules_history(store, T0 + 9 * H)  # a re-run of the last sweep does not read itself
    assert "rl__series_b9" not in rerun.rl_names and "rl__series_b8" in rerun.rl_names
