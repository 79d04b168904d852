"""The standing-constraint rules (spec §5), one flag per cluster: tree_hygiene (the cluster clone's
piled-up files, behind/ahead) and inode_headroom (quota OVER / NEAR / UNKNOWN).
"""

from __future__ import annotations

from sweep_core.models import Flag
from sweep_core.rules.context import RuleContext


def rule_tree_hygiene(ctx: RuleContext) -> list[Flag]:
    """The cluster clone has piled-up files or is behind/ahead: what to do in the LOCAL clone."""
    out = []
    for s in ctx.snaps:
        tree = s.tree or {}
        if tree.get("error"):
            out.append(Flag("tree_hygiene", "warn", s.cluster, "", "", "", tree["error"]))
        elif tree and not tree.get("clean", True):
            items = tree.get("items", [])
            shown = "; ".join(f"{i['path']}: {i['suggestion']}" for i in items[:6])
            more = f"; … {len(items) - 6} more" if len(items) > 6 else ""
            out.append(
                Flag(
                    "tree_hygiene",
                    "warn",
                    s.cluster,
                    "",
                    "",
                    "",
                    f"{tree.get('summary', '')} — {shown}{more}".strip(" —"),
                    "triage-local",
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
                    "inode_headroom",
                    "critical",
                    s.cluster,
                    "",
                    "",
                    "",
                    f"OVER the soft limit: {q.get('reason')}",
                    "reclaim",
                )
            )
        elif status == "NEAR":
            out.append(Flag("inode_headroom", "warn", s.cluster, "", "", "", f"near the soft limit: {q.get('reason')}"))
        elif status == "UNKNOWN":
            out.append(Flag("inode_headroom", "warn", s.cluster, "", "", "", f"quota UNKNOWN: {q.get('reason')}"))
    return out
