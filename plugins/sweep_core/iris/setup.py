"""Is an iris cluster's ops.md filled in, on this machine? The fields a user must set (controller
address or CLI cluster, a python that imports the client or the CLI) are checked at gather time,
per cluster: unset is UNCONFIGURED (the shipped state: never contacted, a note, the run goes on);
set but absent on this worker is an ERROR naming the file, the field and the path.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass

from sweep_core.config.ops import ClusterConfig
from sweep_core.records.models import ClusterSnapshot, ClusterStatus

FILL_IN = "set it in the ops.md front matter (docs/configuration.md: Adding a CoreWeave (iris) cluster)"


@dataclass(frozen=True)
class SetupProblem:
    """One field that keeps the cluster from being polled; ``unset`` = not filled in yet."""

    field: str
    message: str
    unset: bool

    def line(self, path: str) -> str:
        return f"{path}: field '{self.field}' {self.message}"


def iris_setup_problems(cfg: ClusterConfig) -> list[SetupProblem]:
    """Every field that keeps ``cfg`` from being polled on this machine (empty: ready)."""
    out: list[SetupProblem] = []
    if not (cfg.controller_url or cfg.iris_cluster):
        out.append(
            SetupProblem(
                "controller_url", f"is unset (and no iris_cluster): the controller address to poll; {FILL_IN}", True
            )
        )
    if not (cfg.iris_python or cfg.iris_binary):
        out.append(
            SetupProblem(
                "iris_python",
                f"is unset (and no iris_binary): a python that imports the iris client "
                f"(pip install -r requirements-iris.txt); {FILL_IN}",
                True,
            )
        )
    usable = [p for p in (cfg.iris_python, cfg.iris_binary) if p and os.access(os.path.expanduser(p), os.X_OK)]
    if (cfg.iris_python or cfg.iris_binary) and not usable:
        for key in ("iris_python", "iris_binary"):
            value = getattr(cfg, key)
            if value:
                out.append(SetupProblem(key, f"{value!r} does not exist or is not executable on this worker", False))
    if cfg.iris_python and not cfg.controller_url and not cfg.iris_binary and cfg.iris_cluster:
        out.append(
            SetupProblem("controller_url", "is unset: the client poll needs it (iris_cluster is for iris_binary)", True)
        )
    return out


def unready_snapshot(cfg: ClusterConfig, start: dt.datetime, end: dt.datetime) -> ClusterSnapshot | None:
    """The snapshot of an iris cluster not to be contacted (None = ready): fields not filled in yet
    UNCONFIGURED, a client path absent on this worker ERROR; both name the file and the field."""
    problems = iris_setup_problems(cfg)
    if not problems:
        return None
    status = ClusterStatus.UNCONFIGURED if all(p.unset for p in problems) else ClusterStatus.ERROR
    return ClusterSnapshot(
        cfg.name,
        "iris",
        status,
        notes=[p.line(cfg.path) for p in problems],
        window_start=start.isoformat(),
        window_end=end.isoformat(),
    )
