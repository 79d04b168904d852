"""ops.md ``whole_nodes`` on the real local Slurm: the bundled cluster has no GPU gres, as TACC has
none; named per partition, a job that ended shows the GPU-hours of its node's GPUs x NNodes x
Elapsed in its row (not "—"), from the real windowed sacct (issue 41)."""

from __future__ import annotations

import re

import pytest
from helpers import table_rows
from lab import copy_local
from sweep_runner import run_sweep

pytestmark = pytest.mark.cluster


def test_whole_nodes_gpus_give_gpu_hours_from_the_real_sacct(local_cluster, tag, tmp_path) -> None:
    ops = copy_local(tmp_path / "ops")
    md = ops / "local" / "ops.md"
    md.write_text(md.read_text().replace("quota:\n", "whole_nodes:\n  debug: {gpus: 4, memory: 1G}\nquota:\n", 1))
    job = local_cluster.submit(f"sft__{tag}_gh", "sleep 6", "-N", "2")
    local_cluster.wait_finished(job, "COMPLETED", timeout=120)
    local_cluster.wait_windowed(job)
    run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path / "logs", ops_dir=ops)
    assert run.state == "success", run.task_states
    got = run.job(f"sft__{tag}_gh")
    secs = got.efficiency["elapsed_s"]
    assert got.efficiency["nnodes"] == 2 and secs >= 6
    assert got.efficiency["gpu_hours"] == pytest.approx(4 * 2 * secs / 3600)
    assert got.efficiency["mem_req"] == 2 * 1024**3  # the node's memory x 2 nodes, not ReqMem
    row = next(r for r in table_rows(run.rendered["tables"]["SFT"]) if r["Name"] == f"sft__{tag}_gh")
    shown = re.search(r"([\d.e-]+) GPU-h", row["GPU / Efficiency"])
    assert shown and float(shown.group(1)) == pytest.approx(8 * secs / 3600, rel=0.01)
