"""Bad nodes named in a wedged job's saved log tail (NCCL/XID/ECC lines, sweep.yaml
``cancel.relaunch.bad_nodes``): only a node that is one of the job's own nodes (its Slurm NodeList,
expanded here) counts, and only up to ``max_nodes`` of them (more means the fault is not one node's).
What is found is excluded from the relaunch and from the series' PENDING jobs (relaunch.remote).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

NODE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_TRIM = ".,:;)]}'\""


def expand_nodelist(nodelist: str, limit: int = 4096) -> list[str]:
    """Slurm's compressed host list (``gpu[01-03,7],cpu1``) as names; [] when it is not one."""
    out: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,\[]*", nodelist.strip()):
        m = re.fullmatch(r"([^\[\]]*)\[([^\]]*)\]([^\[\]]*)", part)
        if not m:
            out.append(part)
            continue
        head, ranges, tail = m.groups()
        for r in ranges.split(","):
            lo, _, hi = r.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                return []
            for n in range(int(lo), int(hi or lo) + 1):
                out.append(f"{head}{str(n).zfill(len(lo))}{tail}")
                if len(out) > limit:
                    return []
    return [n for n in out if NODE_RE.match(n)]


@dataclass(frozen=True)
class BadNodes:
    """The nodes to exclude and why ("" = nothing to say)."""

    nodes: tuple[str, ...] = ()
    note: str = ""


def find_bad_nodes(tail: str, patterns: Iterable[re.Pattern[str]], nodelist: str, max_nodes: int) -> BadNodes:
    """The job's own nodes that ``patterns`` (group 1 = the node) name in ``tail``."""
    named: list[str] = []
    for p in patterns:
        for m in p.finditer(tail):
            try:
                node = (m.group(1) or "").strip(_TRIM)
            except IndexError:
                continue
            if NODE_RE.match(node) and node not in named:
                named.append(node)
    if not named:
        return BadNodes()
    mine = expand_nodelist(nodelist)
    if not mine:
        return BadNodes(
            (),
            f"log names node(s) {', '.join(named[:5])}, but the job's NodeList "
            f"{nodelist or '?'} was not read: nothing excluded",
        )
    ours = [n for n in named if n in mine]
    other = [n for n in named if n not in mine]
    if not ours:
        return BadNodes(
            (), f"log names node(s) {', '.join(named[:5])}, none of the job's ({nodelist}): nothing excluded"
        )
    if len(ours) > max_nodes:
        return BadNodes(
            (), f"log names {len(ours)} of the job's nodes (> {max_nodes}): not one bad node, nothing excluded"
        )
    note = f"bad node(s) named in the log: {', '.join(ours)}"
    if other:
        note += f" (also named, not the job's: {', '.join(other[:5])})"
    return BadNodes(tuple(ours), note)


def merged_exclude(existing: str, bad: Iterable[str]) -> str:
    """The job's ExcNodeList with ``bad`` added (Slurm's ``(null)`` = none)."""
    have = [] if existing in ("", "(null)") else [existing]
    return ",".join([*have, *bad])
