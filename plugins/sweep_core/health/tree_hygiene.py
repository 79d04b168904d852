"""Cluster working-tree hygiene (spec §4): read ``git status`` of the cluster's clone, classify
what piled up, and say what to do in the LOCAL clone. The sweep never edits, commits, resets or
leaves files on a cluster; the only reconcile it suggests is a fast-forward pull.

Inputs are what the gather brings back: ``git -C <repo> status --porcelain=v1 -b -z`` and, for
each tracked-but-modified file, whether it equals the upstream version (``git diff --quiet @{u}``).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from dataclasses import dataclass, field

# Recurring transient/generated files: suggest .gitignore.
TRANSIENT = (
    "*.bak",
    "*.orig",
    "*.swp",
    "*~",
    "*_manifest.txt",
    "&1",
    "nohup.out",
    "reeval_priority_*",
    "*.pyc",
    "core.*",
    "slurm-*.out",
)
# Reusable files: where their tracked siblings live (first match wins); None = keep the path.
HOMES: tuple[tuple[str, str | None], ...] = (
    ("eval/lists/*", None),
    ("sft/lf_configs/*", None),
    ("scripts/*", None),
    ("*eval*list*.txt", "eval/lists/"),
    ("*_list.txt", "eval/lists/"),
    ("*lf*.yaml", "sft/lf_configs/"),
    ("*sft*.yaml", "sft/lf_configs/"),
    ("launch_*", "scripts/"),
    ("*.sh", "scripts/"),
    ("*.sbatch", "scripts/"),
)


@dataclass(frozen=True)
class HygieneItem:
    path: str
    status: str  # porcelain XY
    kind: str  # transient | reusable | modified-stale | modified-diverged | other
    suggestion: str


@dataclass
class TreeReport:
    branch: str = ""
    upstream: str = ""
    ahead: int = 0
    behind: int = 0
    items: list[HygieneItem] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.items and not self.ahead and not self.behind

    def summary(self) -> str:
        kinds: dict[str, int] = {}
        for it in self.items:
            kinds[it.kind] = kinds.get(it.kind, 0) + 1
        parts = [f"{n} {k}" for k, n in sorted(kinds.items())]
        if self.behind:
            parts.append(
                f"behind {self.upstream or 'upstream'} by {self.behind}: `git pull --ff-only` once no live "
                "job depends on the working tree (never reset --hard)"
            )
        if self.ahead:
            parts.append(f"{self.ahead} commit(s) made ON the cluster: move them to the local clone, push, pull")
        return "; ".join(parts) or "clean"


_BRANCH = re.compile(r"^## (?P<b>[^.\s]+(?:\.(?!\.)[^.\s]*)*)(?:\.\.\.(?P<u>\S+))?(?: \[(?P<t>[^\]]*)\])?")


def track_target(path: str) -> str | None:
    """Where a reusable untracked file is tracked (the path of its tracked siblings, HOMES); None = not reusable."""
    base = posixpath.basename(path.rstrip("/"))
    for pattern, home in HOMES:
        if fnmatch.fnmatch(path, pattern) or (home and fnmatch.fnmatch(base, pattern)):
            return path if home is None else home + base
    return None


def _classify_untracked(path: str) -> HygieneItem:
    base = posixpath.basename(path.rstrip("/"))
    if any(fnmatch.fnmatch(base, p) for p in TRANSIENT):
        return HygieneItem(path, "??", "transient", f"add `{ignore_pattern(base)}` to .gitignore (local clone)")
    target = track_target(path)
    if target is not None:
        return HygieneItem(
            path, "??", "reusable", f"track as {target} in the local clone: commit, push, then pull here"
        )
    return HygieneItem(path, "??", "other", "triage: copy to the local clone, then track it or ignore it")


def ignore_pattern(base: str) -> str:
    """The .gitignore pattern of a transient file's name (its TRANSIENT pattern, else the name)."""
    for p in TRANSIENT:
        if fnmatch.fnmatch(base, p):
            return p
    return base


def parse_tree_status(status_z: str, same_as_upstream: dict[str, bool]) -> TreeReport:
    """``git status --porcelain=v1 -b -z`` output -> classified items (renames take two fields)."""
    report = TreeReport()
    fields = status_z.split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if not entry:
            continue
        if entry.startswith("## "):
            m = _BRANCH.match(entry)
            if m:
                report.branch, report.upstream = m.group("b"), m.group("u") or ""
                for part in (m.group("t") or "").split(", "):
                    counted = re.fullmatch(r"(ahead|behind) (\d+)", part.strip())
                    if counted:
                        setattr(report, counted.group(1), int(counted.group(2)))
                    elif part.strip() and part.strip() != "gone":
                        report.problems.append(f"unreadable branch tracking {part[:80]!r}")
            continue
        if len(entry) < 4 or entry[2] != " ":
            report.problems.append(f"unreadable status entry {entry[:80]!r}")
            continue
        xy, path = entry[:2], entry[3:]
        if xy[0] in "RC":
            i += 1  # the original path follows as its own field
        if xy == "??":
            report.items.append(_classify_untracked(path))
        elif "M" in xy or xy[0] in "RC":
            same = same_as_upstream.get(path)
            if same:
                report.items.append(
                    HygieneItem(
                        path,
                        xy,
                        "modified-stale",
                        "identical to upstream: the clone's HEAD is stale, a ff pull fixes it",
                    )
                )
            else:
                report.items.append(
                    HygieneItem(
                        path,
                        xy,
                        "modified-diverged",
                        "edited on the cluster: bring the change to the local clone, "
                        "commit, push, pull (never hand-edit on a cluster)",
                    )
                )
        else:
            report.items.append(HygieneItem(path, xy, "other", f"status {xy.strip()}: triage in the local clone"))
    return report
