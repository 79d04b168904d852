"""The configured command steps the gather runs in its ONE session (after INODE HEADROOM): the eval
listener's canary (ops.md ``eval_canary``) and the Daytona snapshot list (sweep.yaml ``daytona``,
on the cluster it names). ``step_lines`` builds their ``run`` lines; ``attach_steps`` reads their
records into ``ClusterSnapshot.checks`` (the rules ``eval_canary`` and ``snapshot_cap`` flag them).
"""

from __future__ import annotations

from sweep_core.config.steps_schema import DaytonaSection, EvalCanary
from sweep_core.health import eval_canary, snapshot_cap
from sweep_core.records.models import ClusterSnapshot
from sweep_core.slurm.gather import GatherOutput


def step_lines(cluster: str, canary: EvalCanary | None, daytona: DaytonaSection | None) -> str:
    """The ``run canary …`` / ``run snapshots …`` lines for this cluster ('' = no step runs here)."""
    return eval_canary.canary_line(eval_canary.canary_argv(canary)) + snapshot_cap.list_line(daytona, cluster)


def attach_steps(
    snap: ClusterSnapshot,
    output: GatherOutput,
    canary: EvalCanary | None,
    daytona: DaytonaSection | None,
    now: float,
) -> None:
    """Each step that ran here (its line was sent) gets its verdict in ``snap.checks``; ``now``:
    the remote clock (epoch) the snapshot ages are judged at."""
    if eval_canary.canary_argv(canary):
        snap.checks["canary"] = eval_canary.parse_canary(output.get(eval_canary.RECORD), canary.run)  # type: ignore[union-attr]
    if daytona is not None and snapshot_cap.list_line(daytona, snap.cluster):
        snap.checks["snapshots"] = snapshot_cap.judge_cap(output.get(snapshot_cap.RECORD), daytona, now)
