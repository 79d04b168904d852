"""Files another interpreter runs, shipped with the package: the login node's bash scripts
(``*.sh``, fed to ``bash -s`` by ``sweep_core.slurm.remote_scripts``), its log reader
(``read_logs.py``), and the iris venv's read-only poll and re-checked stop (``iris_poll.py``,
``iris_stop.py``). Nothing here is imported by the sweep: these are data files of the package."""

from __future__ import annotations

from pathlib import Path

DIR = Path(__file__).resolve().parent
