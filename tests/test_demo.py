"""The README's main command, `scripts/demo.sh`, as a user runs it: one sweep of the bundled Slurm
cluster AND the bundled local iris controller, whose jobs show in the same unified tables."""

from __future__ import annotations

import os
import subprocess
import urllib.request

import pytest
from lab import USER
from sweep_runner import ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.exclusive]
IRIS = "http://127.0.0.1:22310"


def _iris_up() -> bool:
    try:
        urllib.request.urlopen(f"{IRIS}/health", timeout=2)
        return True
    except OSError:
        return False


def test_demo_sweeps_slurm_and_iris_into_one_set_of_tables(local_cluster, tmp_path) -> None:
    was_up = _iris_up()
    env = {**os.environ, "SWEEP_RUN_LOG_DIR": str(tmp_path / "logs")}
    try:
        res = subprocess.run(["bash", "scripts/demo.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=900)  # fmt: skip
    finally:
        if not was_up:
            subprocess.run(["bash", "scripts/local_iris.sh", "down"], cwd=ROOT, env=env, timeout=60)
    out = res.stdout
    assert res.returncode == 0, (out[-3000:], res.stderr[-3000:])
    assert "[demo] run state=success" in out
    assert "Clusters: coreweave-local OK, local OK" in out
    rows = [ln for ln in out.splitlines() if ln.startswith("│ coreweave-local")]
    assert any(f"/{USER}/rl__demo_cw_grpo_llama8b" in r and "RUNNING" in r for r in rows), rows
    assert any(f"/{USER}/sft__demo_cw_cell7" in r and "RUNNING" in r for r in rows), rows
    assert any(f"/{USER}/eval-demo_cw_aime" in r and "FAILED" in r and "KeyError: model_name" in r for r in rows), rows
    assert any(ln.startswith("│ local") and "rl__demo_wedged" in ln for ln in out.splitlines())
    assert "[liveness_stale] WARN local RL" in out and "rl__demo_wedged" in out
