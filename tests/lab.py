"""The lab one test process sweeps: its Slurm user on the bundled local cluster, that user's home,
and the lab's config (``lab-config/``, never the shipped ``include/``): an ops dir whose ``local`` cluster
is that user's (LAB_OPS) and the lab's sweep.yaml (LAB_CONFIG: the stub hub's org, ...).

The cluster tests run in parallel lanes (pytest-xdist workers, scripts/test.sh): lane k is the
Slurm user ``sweep`` (k = 0) or ``sweep<k+1>``, so each lane's sweeps see only its own jobs (the
gather asks ``squeue -u``/``sacct -u`` of the ops.md user) and each lane cancels only its own jobs
after a test. Tests that stop a daemon or fail a node run alone (marker ``exclusive``), before the
lanes start. Out of xdist there is one lane: ``SWEEP_CLUSTER_USER`` (default ``sweep``).
"""

from __future__ import annotations

import importlib.util
import os
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

_spec = importlib.util.spec_from_file_location("lab_config", ROOT / "lab-config" / "lab_config.py")
assert _spec is not None and _spec.loader is not None
lab_config = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab_config)


def _lab() -> tuple[Path, Path]:
    """This lane's lab config (lab-config/lab_config.py): include/ops (every shipped cluster) plus lab-config/ops
    (the bundled ``local``, made this lane's), and include/sweep.yaml with lab-config/sweep.yaml over it.
    Made once per process."""
    return lab_config.write_lab(Path(tempfile.mkdtemp(prefix=f"sweep-lab-{USER}-")), USER)


LAB_OPS, LAB_CONFIG = _lab()


def copy_local(ops: Path) -> Path:
    """This lane's ``local`` cluster copied into ops dir ``ops`` (created); returns ``ops``."""
    ops.mkdir(parents=True, exist_ok=True)
    shutil.copytree(LAB_OPS / "local", ops / "local")
    return ops
