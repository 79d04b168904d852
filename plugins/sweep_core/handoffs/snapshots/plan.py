"""The Daytona snapshot cleanup's plan (runbook: at the HARD cap clean STALE snapshots, never
raise the cap). The sweep flags the STALE snapshots (rules ``snapshot_cap``); the cleanup lists them
again right before (``usecase.fresh_list``: the same list command, one read session), a human
approves by name, and only a name that is approved AND still STALE in the fresh list is deleted:
one ``delete_command`` per snapshot, ``{snapshot}`` its own argv element, the name checked plain.
Nothing here touches a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sweep_core.config.steps_schema import DaytonaSection
from sweep_core.health.snapshot_cap import AT_CAP, snapshot_name_ok

DELETED, FAILED, UNKNOWN, NOT_SENT = "deleted", "failed", "UNKNOWN", "not sent"


def still_stale(approved: Sequence[str], fresh: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """(the approved names to delete, name -> why one is left alone): only names the fresh list
    (``judge_cap``'s verdict read right before) still counts STALE, at the cap, with a plain name."""
    stale = {s["name"] for s in fresh.get("stale", [])}
    go, left = [], {}
    for name in approved:
        if fresh.get("status") != AT_CAP:
            left[name] = f"not at the cap now ({fresh.get('reason', '?')}): nothing deleted"
        elif not snapshot_name_ok(name):
            left[name] = "not a plain snapshot name: refused in any command"
        elif name not in stale:
            left[name] = "no longer STALE in the fresh list (used again, removed, or kept): left alone"
        else:
            go.append(name)
    return go, left


def delete_argv(daytona: DaytonaSection, name: str) -> tuple[str, ...]:
    """``delete_command`` with ``{snapshot}`` filled by one checked name (no other substitution)."""
    if not daytona.delete_command:
        raise ValueError("daytona.delete_command is not set: snapshots are listed, never deleted")
    if not snapshot_name_ok(name):
        raise ValueError(f"snapshot name {name[:80]!r} is not plain: refused in any command")
    return tuple(name if a == "{snapshot}" else a.replace("{snapshot}", name) for a in daytona.delete_command)


def approval_body(cluster: str, verdict: Mapping[str, Any], dry_run: bool) -> str:
    """What the approver reads: the count against the cap, each STALE snapshot and its idle days."""
    lines = [
        f"Daytona snapshots (listed on {cluster}): {verdict.get('reason', '?')}.",
        "The cap is HARD and is never raised: choose the STALE snapshots to delete (none = nothing deleted).",
        "",
    ]
    lines += [f"- {s['name']} ({s['state']}, unused {s['idle_days']} days)" for s in verdict.get("stale", [])]
    if dry_run:
        lines += ["", "DRY RUN: an approved snapshot is printed, not deleted."]
    return "\n".join(lines) + "\n"
