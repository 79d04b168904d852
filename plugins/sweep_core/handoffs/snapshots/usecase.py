"""The Daytona snapshot cleanup's steps (sweep_snapshots) as use-cases, its I/O given as
arguments (ports.RunScript): the list read again right before, then ONE act session deleting the
approved names the plan still counts STALE at the cap; a dry run deletes nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from sweep_core.config.steps_schema import DaytonaSection
from sweep_core.handoffs.ports import RunScript
from sweep_core.handoffs.snapshots.plan import delete_argv, still_stale
from sweep_core.handoffs.snapshots.remote import build_delete_script, build_list_script, read_delete
from sweep_core.health.snapshot_cap import RECORD, judge_cap
from sweep_core.slurm.gather import new_marker


def fresh_list(daytona: DaytonaSection, cfg: Any, run_script: RunScript, now: float) -> dict[str, Any]:
    """The snapshot list read again right before (ONE read session on ``daytona.cluster``), judged
    as the sweep judges it (health.snapshot_cap.judge_cap); UNKNOWN with why when not read."""
    marker = new_marker()
    out, problem = run_script(cfg, build_list_script(daytona, cfg.name, marker), marker, "snapshot list")
    if out is None:
        return {"status": "UNKNOWN", "count": None, "cap": daytona.cap, "stale": [], "reason": problem}
    return judge_cap(out.get(RECORD), daytona, now)


def delete_approved(
    daytona: DaytonaSection, cfg: Any, approved: Sequence[str], run_script: RunScript, now: float, dry_run: bool
) -> tuple[dict[str, tuple[str, str]], dict[str, Any]]:
    """(name -> outcome, the fresh list): the list read again, then ONE act session deletes the
    approved names it still counts STALE at the cap; the others are left, each with why. A dry
    run reads the list and deletes nothing (``would delete``)."""
    fresh = fresh_list(daytona, cfg, run_script, now)
    go, left = still_stale(approved, fresh)
    got: dict[str, tuple[str, str]] = {n: ("left", why) for n, why in left.items()}
    if dry_run:
        return {**got, **{n: ("would delete", shlex.join(delete_argv(daytona, n))) for n in go}}, fresh
    if go:
        marker = new_marker()
        script = build_delete_script([delete_argv(daytona, n) for n in go], marker)
        out, problem = run_script(cfg, script, marker, "snapshot delete")
        got.update(read_delete(out, go, problem))
    return got, fresh
