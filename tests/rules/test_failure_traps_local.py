"""The runbook's sig53 trap reproduced on the real local Slurm (DESIGN.md: a job whose ``--output``
the job user cannot write fails at once with ExitCode ``0:53``): the sweep names it as the trap with
its fix, not as a plain failure whose log was not found."""

from __future__ import annotations

import os
import shutil

import pytest
from lab import HOME
from sweep_runner import run_sweep

pytestmark = pytest.mark.cluster


def test_unwritable_output_dir_is_the_sig53_trap(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    locked = HOME / "jobs" / f"locked-{tag}"  # root's, mode 0755: the job user cannot create its -o file
    locked.mkdir(parents=True)
    os.chmod(locked, 0o755)
    try:
        job = c.submit(f"sft__{tag}_sig53", "echo never printed", output=f"{locked}/%x-%j.out")
        c.wait_finished(job, "FAILED")
        c.wait_windowed(job)
        run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    finally:
        shutil.rmtree(locked, ignore_errors=True)
    assert run.state == "success", run.task_states
    got = run.job(f"sft__{tag}_sig53")
    assert got.state == "FAILED" and got.exit_code == "0:53"  # what Slurm really says
    line = next(ln for ln in run.report.splitlines() if f"[genuine_failure] CRITICAL local SFT {job} " in ln)
    assert "exit 0:53: sig53 trap (exit 0:53: Slurm could not open the job's output file" in line
    assert "fix: make the job's --output dir exist and writable by the job user" in line
    assert "log not found" not in line
