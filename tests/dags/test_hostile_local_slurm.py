"""Hostile job output on the real local Slurm, over real SSH, through the whole sweep DAG."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import pytest
from lab import HOME, USER
from sweep_runner import ROOT, run_sweep

pytestmark = pytest.mark.cluster


def test_a_running_job_logging_nan_and_inf_is_reported_and_flagged(local_cluster, tag, tmp_path) -> None:
    """rl_nan.out (reward nan, grad inf) used to fail the metrics step on the XCom push: no tables,
    no run log, no collapse flag, for every cluster. Now the run succeeds and flags the job; a job
    whose metric dict is nested 100,000 deep shows ? with the reason, next to a healthy job."""
    c = local_cluster
    dst = Path(f"{HOME}/jobs/hostile-{tag}")
    dst.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "fixtures" / "logs" / "rl_nan.out", dst / "rl_nan.out")
    shutil.copy(ROOT / "tests" / "fixtures" / "logs" / "rl_healthy.out", dst / "rl_healthy.out")
    (dst / "deep.out").write_text(  # small enough for the gather's bounded tail, deeper than json can
        'WANDB_MIRROR {"a":' + "[" * 5000 + "}\nTotal optimization steps = " + "9" * 5000 + "\n"
        "Training Step Progress: 3/10\n"
    )
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(dst)], check=True)
    names = {"nan": f"rl__{tag}_nan", "ok": f"rl__{tag}_ok", "deep": f"rl__{tag}_deep"}
    ids = [
        c.submit(names["nan"], f"cat {dst}/rl_nan.out; sleep 900"),
        c.submit(names["ok"], f"cat {dst}/rl_healthy.out; sleep 900"),
        c.submit(names["deep"], f"cat {dst}/deep.out; sleep 900"),
    ]
    c.wait_running(*ids)
    for j in ids:
        c.wait_log(j)

    run = run_sweep({"clusters": ["local"], "lookback_hours": 0.1}, tmp_path)

    assert run.state == "success", run.task_states
    assert run.task_states["bucket"] == "success" and run.task_states["render"] == "success"
    nan_job = run.job(names["nan"])
    assert nan_job.state == "RUNNING"
    assert math.isnan(nan_job.metrics["reward"]) and nan_job.metrics["grad_norm"] == math.inf
    rl_table = run.rendered["tables"]["RL"]
    nan_row = next(ln for ln in rl_table.splitlines() if names["nan"] in ln)
    assert "17/100" in nan_row and " nan " in nan_row and " inf " in nan_row  # not a crash, not 0
    assert "[rl_collapse]" in nan_row
    report = run.report
    assert run.report_path is not None and run.report_path.exists()
    assert f"[rl_collapse] CRITICAL local RL {ids[0]} {names['nan']}" in report
    assert "NaN in ['reward']" in report
    ok_row = next(ln for ln in rl_table.splitlines() if names["ok"] in ln)
    assert "45/100" in ok_row and "0.345" in ok_row
    deep = run.job(names["deep"])
    assert deep.metrics["step"] == 3 and deep.metrics["reward"] is None
    assert any("nested too deeply" in p for p in deep.metric_problems)
