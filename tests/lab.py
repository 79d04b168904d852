"""The lab one test process sweeps: its Slurm user on the bundled local cluster, that user's home,
and the lab's config (``lab-config/``, never the shipped ``include/``): an ops dir whose ``local`` cluster
is that user's (LAB_OPS) and the lab's sweep.yaml (LAB_CONFIG: the stub hub's org, ...).

The cluster tests run in parallel lanes (pytest-xdist workers, scripts/test.sh): lane k is the
Slurm user ``sweep`` (k = 0) or ``sweep<k+1>``, so each lane's sweeps see only its own jobs (the
gather asks ``squeue -u``/``sacct -u`` of the ops.md user) and each lane cancels only its own jobs
after a test. Tests that stop a daemon or fail a node (marker ``exclusive``) do not share a cluster:
with ``SWEEP_LAB_SCRATCH`` (cluster dirs, one per worker) each worker uses its own scratch instance of
the cluster (scripts/local_cluster.sh, ``SWEEP_CLUSTER_INSTANCE``), whose ``cluster.env`` is loaded
into this process's environment here, before anything reads it: ``SLURM_CONF`` for the Slurm commands
tests run, the instance's dir, user and login ports. Out of xdist and scratch there is one lane:
``SWEEP_CLUSTER_USER`` (default ``sweep``).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import pwd
import shlex
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, …; "" out of xdist
LANE = int(WORKER[2:]) if WORKER.startswith("gw") and WORKER[2:].isdigit() else 0
SCRATCH = os.environ.get("SWEEP_LAB_SCRATCH", "").split()


def _load_cluster_env(path: Path) -> None:
    """``KEY=value`` lines of an instance's cluster.env (values as the shell reads them) into os.environ."""
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.startswith("#"):
            words = shlex.split(value)
            os.environ[key.strip()] = words[0] if len(words) == 1 else " ".join(words)


if SCRATCH:
    _load_cluster_env(Path(SCRATCH[LANE % len(SCRATCH)]) / "cluster.env")
    USER = os.environ["SWEEP_CLUSTER_USER"]
elif WORKER:
    USER = "sweep" if LANE == 0 else f"sweep{LANE + 1}"
else:
    USER = os.environ.get("SWEEP_CLUSTER_USER", "sweep")
LOGIN_PORTS = (int(os.environ.get("SWEEP_LOGIN01_PORT", "22201")), int(os.environ.get("SWEEP_LOGIN02_PORT", "22202")))
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


@functools.cache
def lab_user() -> pwd.struct_passwd:
    """This lane's Slurm user's passwd entry, looked up when a cluster test runs (not at collection: the
    tier without a cluster collects these modules on a machine where the user does not exist yet)."""
    return pwd.getpwnam(USER)
