"""Hygiene triage of a cluster clone (runbook: local clone = ground truth), from the classified
``git status`` (health.tree_hygiene.TreeReport):

- ``triage_plan``: what the LOCAL clone gets: the transient patterns into .gitignore, each reusable
  file tracked at the path of its tracked siblings, each file edited on the cluster (diverged) at
  its own path; ``prepare_local_commit`` writes them there and commits (never pushed, never on a
  cluster: the contents come from a bounded read of the cluster's files, passed in);
- ``pull_offer``: whether a fast-forward ``git pull`` on the cluster may be offered (through
  approval; ``pull_script`` is what runs once approved): only when the tree is clean and no
  RUNNING job was launched from an uncommitted file.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from sweep_core.handoffs.harvest.commit import commit_tracker_files
from sweep_core.health.tree_hygiene import HygieneItem, TreeReport, ignore_pattern, track_target
from sweep_core.slurm.remote_scripts import compose


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


def _inside(clone: Path, rel: str) -> Path:
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise ValueError(f"{rel!r} is not a path inside the clone")
    return clone.joinpath(*p.parts)


def prepare_local_commit(
    clone: Path, plan: TriagePlan, contents: Mapping[str, bytes], cluster: str
) -> tuple[str, list[str]]:
    """Write ``plan`` into the LOCAL clone (``contents``: cluster path -> its bytes, read from the
    cluster) and commit it there; never pushed. Returns (the short commit id, '' = nothing to
    commit, or "commit failed: …"; what was left out and why)."""
    written: list[Path] = []
    left = list(plan.left)
    if plan.ignore:
        gi = clone / ".gitignore"
        old = gi.read_text(encoding="utf-8") if gi.exists() else ""
        have = {ln.strip() for ln in old.splitlines()}
        new = [p for p in plan.ignore if p not in have]
        if new:
            sep = "" if not old or old.endswith("\n") else "\n"
            gi.write_text(old + sep + "".join(f"{p}\n" for p in new), encoding="utf-8")
            written.append(gi)
    for src, dst in sorted(plan.track.items()):
        if src not in contents:
            left.append(f"{src}: not read from {cluster}: not brought")
            continue
        try:
            target = _inside(clone, dst)
        except ValueError as exc:
            left.append(f"{src}: {exc}")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(contents[src])
        written.append(target)
    if not written:
        return "", left
    what = ", ".join(f"{s} -> {d}" if s != d else s for s, d in sorted(plan.track.items()) if s in contents)
    message = f"tree hygiene ({cluster}): {len(plan.ignore)} ignore pattern(s)" + (f"; tracked {what}" if what else "")
    return commit_tracker_files(clone, written, message), left


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


CHANGED_RC = 97  # the pull's record when the tree is not the one the gates were judged on


def pull_script(offer: PullOffer, marker: str, status_sha1: str = "") -> str:
    """The act run once the offer is approved: ``git -C <repo> pull --ff-only``, record ``pull``.
    ``status_sha1``: the sha1 of the ``git status --porcelain=v1 -b -z`` the gates were judged on
    right before; the act session pulls only when its own status still hashes to it (else record
    ``pull`` with rc CHANGED_RC)."""
    if not offer.offer or offer.argv[:2] != ("git", "-C") or offer.argv[3:] != ("pull", "--ff-only"):
        raise ValueError(f"not an approvable ff pull: {offer.why}")
    run = f"run pull {offer.command()}\n"
    if status_sha1:
        status = shlex.join(["git", "-C", offer.argv[2], "status", "--porcelain=v1", "-b", "-z"])
        changed = "the tree changed since the check right before: not pulled"
        run = (
            f'if [ "$({status} | sha1sum)" = {shlex.quote(status_sha1 + "  -")} ]; then {run.strip()}; '
            f'else echo {shlex.quote(changed)} >"$T/e"; : >"$T/o"; rec pull {CHANGED_RC}; fi\n'
        )
    return compose(marker, {}, (), trailer=run, act=True)
