"""The rules' History read from the Parquet history equals the one read from the per-sweep JSON
state files (RECURRING signatures, RL names and series, launch fingerprints, oldest to newest)."""

from __future__ import annotations

import datetime as dt

from sweep_core.fanin.history import load_history, save_state, sweep_state
from sweep_core.history.rows import sweep_frame
from sweep_core.history.rules_history import load_rules_history
from sweep_core.history.store import HistoryStore
from sweep_core.models import ClusterSnapshot, ClusterStatus, Job

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


def test_parquet_history_equals_state_file_history(tmp_path) -> None:
    store = HistoryStore(tmp_path / "history")
    for i in range(10):
        end, snaps = T0 + i * H, _snaps(i)
        save_state(tmp_path, end, sweep_state(snaps, [], end))
        frame = sweep_frame(snaps, [], run_id=f"r{i}", window_start=end - H, window_end=end)
        store.append(frame, run_id=f"r{i}", window_end=end)
    now = T0 + 10 * H
    want, got = load_history(tmp_path, now), load_rules_history(store, now)
    assert got.known and got.rl_names == want.rl_names and got.rl_series == want.rl_series
    assert got.rl_fingerprints == want.rl_fingerprints
    assert got.failure_signatures == want.failure_signatures and len(got.failure_signatures["RuntimeError: boom"]) == 8
    assert not load_rules_history(store, T0).known
