"""The I/O a hand-off use-case is given, as slurm.failover is given ``RunOnNode``: run one batched
script on a cluster, read a cluster's ops.md, check a hub repo, print a line to the task log.
The Airflow callables wire SSH, Connections and the hub client in; tests pass plain fakes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from sweep_core.config.ops import ClusterConfig, OpsConfigError
from sweep_core.handoffs.hub_evidence import HubEvidence
from sweep_core.slurm.gather import GatherOutput

# (cluster, script, marker, what) -> (output, problem): ONE script to ``bash -s`` over ONE SSH
# session with login-node failover; problem is '' only when the script ran to its end record,
# output is None when no login node was reached.
RunScript = Callable[[ClusterConfig, str, str, str], tuple[GatherOutput | None, str]]
# cluster name -> its ops.md, read now; raises OpsConfigError.
LoadCluster = Callable[[str], ClusterConfig]


class HubCheck(Protocol):
    """(repo id, repo type, expected globs[, revision]) -> the evidence; never raises (UNKNOWN is
    ok=None). ``revision``: a commit sha (this job's own upload) instead of the branch head."""

    def __call__(self, repo_id: str, repo_type: str, expected: Sequence[str], revision: str = ...) -> HubEvidence: ...


# (repo, files, message) -> commit id, '' when not a git repo, or "commit failed: ...".
CommitFiles = Callable[[Path, list[Path], str], str]
# One line for the task log (the dry-run plan a person reads).
Say = Callable[[str], None]


def active_slurm(load: LoadCluster, cluster: str, inactive: str = "") -> tuple[ClusterConfig | None, str]:
    """The cluster's ops.md when it is an active SLURM cluster; else None and why not:
    ``ops.md: <error>``, or ``<cluster> is <scheduler>/<status>`` followed by ``: <inactive>``."""
    try:
        cfg = load(cluster)
    except OpsConfigError as exc:
        return None, f"ops.md: {exc}"
    if cfg.scheduler != "slurm" or cfg.status != "active":
        return None, f"{cluster} is {cfg.scheduler}/{cfg.status}" + (f": {inactive}" if inactive else "")
    return cfg, ""
