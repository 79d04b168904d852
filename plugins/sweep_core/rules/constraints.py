"""The standing-constraint rules (spec §5), one flag per cluster: tree_hygiene (the cluster clone's
piled-up files, behind/ahead), inode_headroom (quota OVER / NEAR / UNKNOWN), eval_canary (the eval
listener's canary traces not on the hub / not registered, or unknown) and snapshot_cap (Daytona at
its HARD cap: the STALE snapshots offered for cleanup through approval).
"""

from __future__ import annotations

from sweep_core.records.models import Flag
from sweep_core.records.vocab import Action, Severity
from sweep_core.rules.context import RuleContext


def rule_tree_hygiene(ctx: RuleContext) -> list[Flag]:
    """The cluster clone has piled-up files or is behind/ahead: what to do in the LOCAL clone."""
    out = []
    for s in ctx.snaps:
        tree = s.tree or {}
        if tree.get("error"):
            out.append(Flag(rule="tree_hygiene", severity=Severity.WARN, cluster=s.cluster, message=tree["error"]))
        elif tree and not tree.get("clean", True):
            items = tree.get("items", [])
            shown = "; ".join(f"{i['path']}: {i['suggestion']}" for i in items[:6])
            more = f"; … {len(items) - 6} more" if len(items) > 6 else ""
            out.append(
                Flag(
                    rule="tree_hygiene",
                    severity=Severity.WARN,
                    cluster=s.cluster,
                    message=f"{tree.get('summary', '')} — {shown}{more}".strip(" —"),
                    action=Action.TRIAGE_LOCAL,
                )
            )
    return out


def rule_inode_headroom(ctx: RuleContext) -> list[Flag]:
    """INODE HEADROOM: at/over the soft limit -> red flag + reclaim (the cleanup DAG over the
    completed-but-not-removed backlog); near it -> warn; unreadable -> UNKNOWN, never "fine"."""
    out = []
    for s in ctx.snaps:
        q = s.quota
        if not q:
            continue
        status = q.get("status")
        if status == "OVER":
            out.append(
                Flag(
                    rule="inode_headroom",
                    severity=Severity.CRITICAL,
                    cluster=s.cluster,
                    message=f"OVER the soft limit: {q.get('reason')}",
                    action=Action.RECLAIM,
                )
            )
        elif status == "NEAR":
            msg = f"near the soft limit: {q.get('reason')}"
            out.append(Flag(rule="inode_headroom", severity=Severity.WARN, cluster=s.cluster, message=msg))
        elif status == "UNKNOWN":
            msg = f"quota UNKNOWN: {q.get('reason')}"
            out.append(Flag(rule="inode_headroom", severity=Severity.WARN, cluster=s.cluster, message=msg))
    return out


def rule_eval_canary(ctx: RuleContext) -> list[Flag]:
    """The eval listener's canary (ops.md ``eval_canary``): its traces not on the hub or not
    registered -> warn (do not rely on the listener yet); its check unreadable -> UNKNOWN, said."""
    out = []
    for s in ctx.snaps:
        c = s.checks.get("canary")
        if not c or c.get("status") == "OK":
            continue
        msg = f"canary: {c.get('reason')}" if c.get("status") == "MISSING" else f"canary UNKNOWN: {c.get('reason')}"
        msg += ": do not rely on the eval listener until its canary's traces are on the hub and registered"
        out.append(Flag(rule="eval_canary", severity=Severity.WARN, cluster=s.cluster, message=msg))
    return out


def rule_snapshot_cap(ctx: RuleContext) -> list[Flag]:
    """Daytona at its HARD snapshot cap: critical; its STALE snapshots (by name) are handed to the
    snapshot cleanup, which deletes none before a human approves. Unreadable list -> UNKNOWN, said."""
    out = []
    for s in ctx.snaps:
        c = s.checks.get("snapshots")
        if not c or c.get("status") == "OK":
            continue
        if c.get("status") != "AT_CAP":
            msg = f"Daytona snapshots UNKNOWN: {c.get('reason')}"
            out.append(Flag(rule="snapshot_cap", severity=Severity.WARN, cluster=s.cluster, message=msg))
            continue
        stale = [x["name"] for x in c.get("stale", [])]
        shown = "; STALE: " + ", ".join(stale[:10]) + (f", … {len(stale) - 10} more" if len(stale) > 10 else "")
        refused = c.get("refused") or []
        msg = str(c.get("reason")) + (shown if stale else "")
        if refused:
            msg += f"; not offered (not plain names): {', '.join(refused[:5])}"
        act = Action.SNAPSHOT_CLEANUP if stale else ""
        out.append(Flag(rule="snapshot_cap", severity=Severity.CRITICAL, cluster=s.cluster, message=msg, action=act))
    return out
