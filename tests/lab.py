"""The lab one test process sweeps: its Slurm user on the bundled local cluster, that user's home,
and an ops dir whose ``local`` cluster is that user's.

The cluster tests run in parallel lanes (pytest-xdist workers, scripts/test.sh): lane k is the
Slurm user ``sweep`` (k = 0) or ``sweep<k+1>``, so each lane's sweeps see only its own jobs (the
gather asks ``squeue -u``/``sacct -u`` of the ops.md user) and each lane cancels only its own jobs
after a test. Tests that stop a daemon or fail a node run alone (marker ``exclusive``), before the
lanes start. Out of xdist there is one lane: ``SWEEP_CLUSTER_USER`` (default ``sweep``).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, …; "" out of xdist
LANE = int(WORKER[2:]) if WORKER.startswith("gw") and WORKER[2:].isdigit() else 0
USER = ("sweep" if LANE == 0 else f"sweep{LANE + 1}") if WORKER else os.environ.get("SWEEP_CLUSTER_USER", "sweep")
HOME = Path(f"/home/{USER}")
LOGS = HOME / "jobs" / "logs"
ARTIFACTS = HOME / "jobs" / "artifacts"


def lane_text(text: str) -> str:
    """ops.md text of the bundled cluster (user ``sweep``) made this lane's: its user and home."""
    text = re.sub(r"(?m)^user: sweep\s*$", f"user: {USER}", text)
    return text.replace("/home/sweep/", f"{HOME}/").replace("/home/sweep\n", f"{HOME}\n")


def _lab_ops() -> Path:
    """A copy of include/ops (every shipped cluster) whose ``local`` is this lane's: made once per process."""
    ops = Path(tempfile.mkdtemp(prefix=f"sweep-lab-{USER}-")) / "ops"
    shutil.copytree(ROOT / "include" / "ops", ops)
    local = ops / "local" / "ops.md"
    local.write_text(lane_text(local.read_text()))
    return ops


LAB_OPS = _lab_ops()


def copy_local(ops: Path) -> Path:
    """This lane's ``local`` cluster copied into ops dir ``ops`` (created); returns ``ops``."""
    ops.mkdir(parents=True, exist_ok=True)
    shutil.copytree(LAB_OPS / "local", ops / "local")
    return ops
