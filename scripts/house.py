"""Draw the house: the rooms of ``plugins/`` (each top-level module or sub-package of sweep_core,
each module or sub-package of ``sweep_core.handoffs`` (its hand-offs), and sweep_operators) on floors, from their own imports, read with ``ast``; a room stands above
every room it imports. ``python scripts/house.py`` prints the floors (top first) with the rooms
each room imports, then every cycle between rooms (an arrow that would have to run back up).
Exit 1 when there is a cycle."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ROOT / "plugins"


INSIDE = ("handoffs",)  # sub-packages of sweep_core whose own modules and sub-packages are rooms


def room_of(module: str) -> str | None:
    """``sweep_core.fanin.render`` -> ``sweep_core.fanin``; ``sweep_core.handoffs.cancel.plan`` ->
    ``sweep_core.handoffs.cancel`` (each hand-off a room); ``sweep_operators.x`` -> ``sweep_operators``."""
    parts = module.split(".")
    if parts[0] == "sweep_operators":
        return "sweep_operators"
    if parts[0] == "sweep_core" and len(parts) > 2 and parts[1] in INSIDE:
        return f"sweep_core.{parts[1]}.{parts[2]}"
    if parts[0] == "sweep_core" and len(parts) > 1:
        return f"sweep_core.{parts[1]}"
    return None


def rooms() -> dict[str, set[str]]:
    """room -> the other rooms its modules import (every import, in functions too)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PLUGINS.rglob("*.py")):
        rel = path.relative_to(PLUGINS).with_suffix("")
        if rel.parts[0] not in ("sweep_core", "sweep_operators") or rel.parts[1:2] == ("programs",):
            continue  # programs/ are run by another interpreter, never imported
        here = room_of(".".join(p for p in rel.parts if p != "__init__"))
        if here is None:
            continue
        edges[here]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                there = room_of(name)
                if there and there != here and not there.endswith(".programs") and _exists(there):
                    edges[here].add(there)
    return dict(edges)


def _exists(room: str) -> bool:
    rel = Path(*room.split("."))
    return (PLUGINS / rel).is_dir() or (PLUGINS / rel).with_suffix(".py").is_file()


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one room (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def floors(edges: dict[str, set[str]]) -> dict[str, int]:
    """Each room's floor: 1 + the highest floor it imports (1 for a room that imports none)."""
    memo: dict[str, int] = {}

    def floor(v: str, seen: frozenset[str]) -> int:
        if v not in memo:
            below = [floor(w, seen | {v}) for w in edges.get(v, ()) if w not in seen]
            memo[v] = 1 + max(below, default=0)
        return memo[v]

    for v in edges:
        floor(v, frozenset())
    return memo


def main() -> int:
    edges = rooms()
    level = floors(edges)
    for f in sorted(set(level.values()), reverse=True):
        for room in sorted(r for r in level if level[r] == f):
            imports = ", ".join(sorted(x.split(".")[-1] for x in edges[room])) or "-"
            print(f"floor {f:2d}  {room:32s} imports {imports}")
    loops = cycles(edges)
    for group in loops:
        print("CYCLE (an arrow runs back up): " + " <-> ".join(group))
    print(f"{len(edges)} rooms, {sum(map(len, edges.values()))} arrows, {len(loops)} cycles")
    return 1 if loops else 0


if __name__ == "__main__":
    sys.exit(main())
