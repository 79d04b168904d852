"""The Daytona snapshot cleanup's pure part (runbook: at the HARD cap clean STALE snapshots, never
raise the cap). The sweep flags the STALE snapshots (rules ``snapshot_cap``); the cleanup lists them
again right before (``fresh``: the same list command, one read session), a human approves by name,
and only a name that is approved AND still STALE in the fresh list is deleted: ONE act session,
one ``delete_command`` per snapshot, ``{snapshot}`` its own argv element, every element
shell-quoted, the name checked plain. Nothing here touches a cluster.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from sweep_core.config.steps_schema import DaytonaSection
from sweep_core.handoffs.ports import RunScript
from sweep_core.health.snapshot_cap import AT_CAP, RECORD, judge_cap, list_line, snapshot_name_ok
from sweep_core.slurm.failover import not_done, outcome_unknown
from sweep_core.slurm.gather import GatherOutput, new_marker
from sweep_core.slurm.remote_scripts import compose

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


def build_delete_script(argvs: Sequence[Sequence[str]], marker: str) -> str:
    """ONE act script: ``run del:<k> <argv…>`` per approved snapshot, every element shell-quoted."""
    lines = "".join(f"run del:{k} " + " ".join(shlex.quote(a) for a in argv) + "\n" for k, argv in enumerate(argvs))
    return compose(marker, {}, (), trailer=lines, act=True)


def read_delete(out: GatherOutput | None, names: Sequence[str], problem: str) -> dict[str, tuple[str, str]]:
    """name -> (deleted | failed | UNKNOWN | not sent, why): an UNKNOWN one is never sent again
    blind (the next sweep's list says whether it is gone)."""
    got = {}
    for k, name in enumerate(names):
        rec = out.get(f"del:{k}") if out else None
        if rec is not None and rec.rc == 0:
            got[name] = (DELETED, "")
        elif rec is not None:
            got[name] = (FAILED, f"exit {rec.rc}: {(rec.stderr.strip() or rec.stdout.strip() or 'no output')[-200:]}")
        elif out is None and not outcome_unknown(problem):
            got[name] = (NOT_SENT, not_done(problem))
        else:
            got[name] = (UNKNOWN, not_done(problem or "no record"))
    return got


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


def fresh_list(daytona: DaytonaSection, cfg: Any, run_script: RunScript, now: float) -> dict[str, Any]:
    """The snapshot list read again right before (ONE read session on ``daytona.cluster``), judged
    as the sweep judges it (health.snapshot_cap.judge_cap); UNKNOWN with why when not read."""
    marker = new_marker()
    out, problem = run_script(
        cfg, compose(marker, {}, (), trailer=list_line(daytona, cfg.name)), marker, "snapshot list"
    )
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
