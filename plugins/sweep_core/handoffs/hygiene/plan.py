"""The hygiene hand-off's plan (runbook: local clone = ground truth), pure, from the classified
``git status`` (health.tree_hygiene.TreeReport):

- ``tree_jobs``: which trusted clusters the sweep hands off (a clone not clean or behind), once per
  change of what it found (``tree_fingerprint`` is the "job");
- ``triage_plan``: what the LOCAL clone gets: the transient patterns into .gitignore, each reusable
  file tracked at the path of its tracked siblings, each file edited on the cluster (diverged) at
  its own path (``usecase.prepare_local_commit`` writes them there and commits, never pushed);
- ``pull_offer``: whether a fast-forward ``git pull`` on the cluster may be offered (through
  approval; ``remote.pull_script`` is what runs once approved): only when the tree is clean and no
  RUNNING job was launched from an uncommitted file.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweep_core.health.tree_hygiene import HygieneItem, TreeReport, ignore_pattern, track_target
from sweep_core.records.models import ClusterSnapshot

KINDS_BROUGHT = ("reusable", "modified-diverged")


def tree_fingerprint(tree: Mapping[str, Any]) -> str:
    """What the sweep found in one clone, as a short hash: a new one = a change worth a hand-off."""
    items = sorted((i["path"], i["status"], i["kind"]) for i in tree.get("items", []))
    seen = [tree.get("branch", ""), tree.get("behind", 0), tree.get("ahead", 0), items]
    return hashlib.sha1(json.dumps(seen).encode()).hexdigest()[:12]


def tree_jobs(snaps: Sequence[ClusterSnapshot], clusters: set[str]) -> list[dict[str, Any]]:
    """One hand-off item per trusted cluster (of ``clusters``) whose clone is not clean or is behind
    and whose ops.md turns hygiene on (``tree["triage"]``): ``job_id`` ``tree:<fingerprint>`` (the
    ledger gives it once; kept as an ended job seen at ``seen``, so an unchanged tree is handed off
    again after ledger.fold.KEEP_ENDED_DAYS), ``paths`` the files the triage brings to the local clone."""
    out = []
    for s in snaps:
        tree = s.tree or {}
        if s.cluster not in clusters or not tree.get("triage") or tree.get("error") or tree.get("clean", True):
            continue
        paths = [i["path"] for i in tree.get("items", []) if i.get("kind") in KINDS_BROUGHT]
        out.append(
            {
                "cluster": s.cluster,
                "job_id": f"tree:{tree_fingerprint(tree)}",
                "name": str(tree.get("summary", ""))[:120],
                "paths": paths,
                "seen": s.window_end,
            }
        )
    return out


@dataclass
class TriagePlan:
    """What the local clone gets for one cluster's tree."""

    ignore: list[str] = field(default_factory=list)  # .gitignore patterns (transient)
    track: dict[str, str] = field(default_factory=dict)  # cluster path -> local path (reusable, diverged)
    left: list[str] = field(default_factory=list)  # items a person triages (other, stale HEAD: nothing to bring)


def triage_plan(report: TreeReport) -> TriagePlan:
    """The local-clone side of the report's items (paths relative to the clone's top)."""
    plan = TriagePlan()
    for it in report.items:
        if it.kind == "transient":
            pat = ignore_pattern(posixpath.basename(it.path.rstrip("/")))
            if pat not in plan.ignore:
                plan.ignore.append(pat)
        elif it.kind == "reusable":
            plan.track[it.path] = track_target(it.path) or it.path
        elif it.kind == "modified-diverged":
            plan.track[it.path] = it.path
        else:
            plan.left.append(f"{it.path} ({it.kind}): {it.suggestion}")
    return plan


@dataclass(frozen=True)
class PullOffer:
    """Whether ``git pull --ff-only`` may be offered for approval on the cluster clone, and why."""

    offer: bool
    why: str
    argv: tuple[str, ...] = ()

    def command(self) -> str:
        """The command as the cluster would run it (every value shell-quoted)."""
        return shlex.join(self.argv)


def _blocking(it: HygieneItem) -> bool:
    # an untracked transient file does not stop a ff pull (its pattern is ignored by the triage
    # commit); anything modified does (git refuses even a copy identical to upstream: stale HEAD,
    # restored by a person first), and so does a file still to be brought to the local clone
    return it.kind != "transient"


def pull_offer(report: TreeReport, repo_path: str, launches: Mapping[str, str | None]) -> PullOffer:
    """``launches``: each RUNNING job of the cluster user (id) -> the text it was launched with
    (its Command and log banner), None = not read. Offered only when there is something to pull,
    it fast-forwards, the tree is clean, and no RUNNING job names an uncommitted file."""
    if not repo_path.startswith("/") or "\n" in repo_path or "\0" in repo_path:
        return PullOffer(False, f"repo_path {repo_path!r} is not an absolute single-line path")
    if report.problems:
        return PullOffer(False, "git status not fully read: " + "; ".join(report.problems))
    if not report.upstream:
        return PullOffer(False, f"branch {report.branch or '?'} has no upstream: nothing to pull from")
    if report.ahead:
        return PullOffer(
            False, f"{report.ahead} commit(s) made ON the cluster: not a fast-forward (never reset --hard)"
        )
    if not report.behind:
        return PullOffer(False, f"up to date with {report.upstream}: nothing to pull")
    dirty = [it for it in report.items if _blocking(it)]
    if dirty:
        shown = ", ".join(f"{it.path} ({it.kind})" for it in dirty[:5]) + (" …" if len(dirty) > 5 else "")
        return PullOffer(False, f"tree not clean: {shown}: triage them to the local clone first")
    unread = sorted(j for j, text in launches.items() if text is None)
    if unread:
        return PullOffer(False, f"launch of RUNNING job(s) {', '.join(unread[:5])} not read: cannot tell what they use")
    root = repo_path.rstrip("/")
    for job, text in sorted(launches.items()):
        for it in report.items:
            if f"{root}/{it.path}" in (text or ""):
                return PullOffer(False, f"RUNNING job {job} was launched from uncommitted {it.path}")
    argv = ("git", "-C", repo_path, "pull", "--ff-only")
    return PullOffer(True, f"behind {report.upstream} by {report.behind}, tree clean, no RUNNING job uses it", argv)
