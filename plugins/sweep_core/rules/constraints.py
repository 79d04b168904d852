"""The standing-constraint rules (spec §5), one flag per cluster: tree_hygiene (the cluster clone's
piled-up files, behind/ahead) and inode_headroom (quota OVER / NEAR / UNKNOWN).
"""

from __future__ import annotations

from sweep_core.models import Flag
from sweep_core.rules.context import RuleContext
from sweep_core.vocab import Action, Severity


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
