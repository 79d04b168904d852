"""Every task's Airflow ``execution_timeout``, sized from what it really waits for (sweep.yaml
``tasks:``, ``gather:``, the hand-off sections, each cluster's ops.md), and whether it may retry.

A remote step waits, per cluster, at most its sessions in turn: on SLURM each session may fail over
through every login node (connect + the one script's timeout each; an act's script is cut off on
the node before that, act_bounds); on iris one poll, its CLI fallback and the batched budget. An
approval waits for its human up to MAX_APPROVAL_MINUTES. A timeout is that wait plus
``tasks.margin_s``, never shorter: a task is not killed while a wait it owns is still running.
Only ``READ`` steps retry (on transport errors, sweep_core.timing.transport); an ``ACT`` never does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sweep_core.config.handoffs_schema import MAX_APPROVAL_MINUTES


class Kind(StrEnum):
    """What a task does, for Airflow's reliability settings."""

    LOCAL = "local"  # waits on no cluster: no retry
    READ = "read"  # read-only (or idempotent and guarded) remote step: retries on transport errors
    CHECK = "check"  # reads a cluster but writes records or alerts as it goes: not retried
    ACT = "act"  # changes something (scancel, sbatch, rm, upload, commit, ledger claim): never retried
    APPROVAL = "approval"  # a human-in-the-loop wait: never retried


@dataclass(frozen=True)
class Need:
    """What one task waits for: ``sessions`` per cluster (each as long as the cluster's reach) and
    ``extra_s`` besides (a verify poll, an approval)."""

    kind: Kind
    sessions: int = 0
    extra_s: int = 0


@dataclass(frozen=True)
class Limit:
    """A task's Airflow settings: execution timeout (s) and retries (0 for anything but READ)."""

    timeout_s: int
    retries: int
    retry_delay_s: int
    max_retry_delay_s: int


def reach_s(gather: Any, cluster: Any | None) -> int:
    """The longest one session to ``cluster`` may take: SLURM, every login node tried in turn
    (connect + the script's timeout); iris, the controller poll and its CLI fallback (ops.md
    ``iris_timeout_s`` each) plus the batched budget; an ops.md not readable at parse time, one node."""
    session = int(gather.connect_timeout_s) + int(gather.command_timeout_s)
    if cluster is None:
        return session
    if getattr(cluster, "scheduler", "slurm") == "iris":
        return 2 * int(cluster.iris_timeout_s) + session
    return max(1, len(cluster.login_nodes)) * session


def approval_wait_s() -> int:
    """The longest an approval task waits for its human (the param or sweep.yaml, at most this)."""
    return int(MAX_APPROVAL_MINUTES) * 60


def limit(need: Need, config: Any, clusters: Iterable[Any | None]) -> Limit:
    """``need``'s Airflow settings under ``config`` (SweepConfig) over ``clusters`` (ops.md configs
    the task may touch, None for one not readable): a remote step waits its sessions on each cluster."""
    t = config.tasks
    wait = need.extra_s + need.sessions * sum(reach_s(config.gather, c) for c in clusters)
    timeout = wait + int(t.margin_s)
    if need.kind is Kind.LOCAL:
        timeout = max(int(t.local_timeout_s), timeout)
    retries = int(t.retries) if need.kind is Kind.READ else 0
    return Limit(timeout, retries, int(t.retry_delay_s), int(t.max_retry_delay_s))
