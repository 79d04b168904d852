"""The hygiene hand-off's use cases (sweep_hygiene): the sweep hands off a cluster whose clone is
not clean or is behind (``tree_jobs``: once per change of what it found, the fingerprint is the
"job"); ``validate`` reads the clone again (ONE read session: git status, the files the triage
brings, the RUNNING jobs' launch texts), commits the triage in the LOCAL clone (never pushed, never
on the cluster) and says whether a fast-forward pull may be offered; ``pull`` re-reads the tree
and the launches in the act session's own read right before, and pulls only when the gates still
hold. Nothing here imports Airflow.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from sweep_core.config.ops import ClusterConfig
from sweep_core.handoffs.hygiene.triage import PullOffer, prepare_local_commit, pull_offer, pull_script, triage_plan
from sweep_core.handoffs.ports import RunScript
from sweep_core.health.tree_hygiene import TreeReport
from sweep_core.records.models import ClusterSnapshot
from sweep_core.slurm.failover import not_done, outcome_unknown
from sweep_core.slurm.gather import GatherOutput, new_marker
from sweep_core.slurm.remote_scripts import compose
from sweep_core.slurm.snapshot import tree_report

MAX_FILE_BYTES = 256 * 1024  # one file brought to the local clone at most
MAX_TOTAL_BYTES = 2 * 1024 * 1024  # all of them in one read
MAX_GIT_FILES = 100  # modified files compared with upstream (as the gather)
BANNER_BYTES = 4096  # the head of a RUNNING job's log read for its launch text
MAX_BANNERS = 200  # logs read so in one session at most (the others: their Command alone)
LAUNCH_FIELDS = ("JobArrayID", "Command", "StdOut")  # squeue -O names, as the gather's PATHS_FIELDS
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


def _plain(rel: str) -> bool:
    p = PurePosixPath(rel)
    return bool(p.parts) and not p.is_absolute() and ".." not in p.parts and "\n" not in rel and "\0" not in rel


def read_script(cfg: ClusterConfig, paths: Sequence[str], marker: str) -> str:
    """ONE read session: the clone's status (tree_status.sh), the launches and ``paths``' bytes."""
    values = {
        "R": cfg.repo_path,
        "U": cfg.user,
        "MAX_GIT_FILES": MAX_GIT_FILES,
        "FILES": [p for p in paths if _plain(p)],
        "MAX_FILE_BYTES": MAX_FILE_BYTES,
        "MAX_TOTAL_BYTES": MAX_TOTAL_BYTES,
        "BANNER_BYTES": BANNER_BYTES,
        "MAX_BANNERS": MAX_BANNERS,
        "LAUNCH_FORMAT": ",".join(f"{f}:0{marker}" for f in LAUNCH_FIELDS),
    }
    return compose(marker, values, ("tree_status.sh", "hygiene_read.sh"))


@dataclass
class TreeRead:
    """One read of a cluster clone: its report (None: not read, ``why``), the files' bytes (path ->
    bytes), the files left out (path -> why) and each RUNNING job's launch text (None: not read)."""

    report: TreeReport | None
    why: str = ""
    status_sha1: str = ""  # of the git status read (the act pulls only while it is the same)
    contents: dict[str, bytes] = field(default_factory=dict)
    left: dict[str, str] = field(default_factory=dict)
    launches: dict[str, str | None] = field(default_factory=dict)


def _launches(out: GatherOutput) -> dict[str, str | None]:
    rec = out.get("launches")
    if rec is None or rec.rc != 0:
        return {"(squeue)": None}  # not read: no pull is offered
    got: dict[str, str | None] = {}
    for line in rec.stdout.splitlines():
        parts = line.split(out.marker)
        if len(parts) < 3 or not parts[0].strip():
            continue
        banner = out.get(f"banner:{parts[0].strip()}")
        text = "\n".join(
            [parts[1], parts[2], *((banner.stdout.splitlines()[:20]) if banner and banner.rc == 0 else [])]
        )
        got[parts[0].strip()] = text if parts[1].strip() or banner else None
    return got


def read_tree(out: GatherOutput, paths: Sequence[str]) -> TreeRead:
    """The records of ``read_script`` -> a TreeRead (a non-UTF-8 file is left out: never mangled)."""
    report = tree_report(out)
    if not isinstance(report, TreeReport):
        return TreeRead(None, report or "no git status record (repo_path unset?)")
    status = out.get("gitstatus")
    sha = hashlib.sha1(status.stdout.encode("utf-8")).hexdigest() if status else ""
    got = TreeRead(report, status_sha1=sha, launches=_launches(out))
    for k, path in enumerate([p for p in paths if _plain(p)], start=1):
        rec = out.get(f"file:{k}")
        if rec is None:
            got.left[path] = "not read (the script stopped early)"
        elif rec.rc != 0:
            got.left[path] = f"not brought: {rec.stderr.strip()[:200] or rec.rc}"
        elif "\ufffd" in rec.stdout:
            got.left[path] = "not UTF-8 text: not brought (copy it by hand)"
        else:
            got.contents[path] = rec.stdout.encode("utf-8")
    got.left.update({p: "not a plain relative path: refused" for p in paths if not _plain(p)})
    return got


def fresh_read(cfg: ClusterConfig, paths: Sequence[str], run_script: RunScript, what: str) -> TreeRead:
    """``read_script`` run now (ONE session): the TreeRead, or why nothing was read."""
    marker = new_marker()
    out, problem = run_script(cfg, read_script(cfg, paths, marker), marker, what)
    if out is None:
        return TreeRead(None, problem or "not read")
    return read_tree(out, paths)


def validate_cluster(cfg: ClusterConfig, paths: Sequence[str], run_script: RunScript, dry_run: bool) -> dict[str, Any]:
    """Re-read the clone, commit the triage in ``cfg.local_clone`` (never pushed; a dry run commits
    nothing: ``would commit``), judge the pull offer: what ``approve`` asks and ``record`` writes."""
    base: dict[str, Any] = {"cluster": cfg.name, "repo_path": cfg.repo_path, "local_clone": cfg.local_clone}
    clone = Path(cfg.local_clone)
    if not cfg.local_clone or not cfg.repo_path:
        return {**base, "offer": False, "why": "hygiene needs repo_path and local_clone in ops.md: not triaged"}
    if not (clone / ".git").exists():
        return {**base, "offer": False, "why": f"local_clone {clone} is not a git clone: nothing committed"}
    got = fresh_read(cfg, paths, run_script, "hygiene read")
    if got.report is None:
        return {**base, "offer": False, "why": f"tree not read: {got.why}"}
    plan = triage_plan(got.report)
    if dry_run:
        commit, left = "DRY RUN: would commit (nothing written)", list(plan.left)
    else:
        commit, left = prepare_local_commit(clone, plan, got.contents, cfg.name)
    offer = pull_offer(got.report, cfg.repo_path, got.launches)
    return {
        **base,
        "summary": got.report.summary(),
        "commit": commit,
        "ignored": plan.ignore,
        "tracked": {s: d for s, d in plan.track.items() if s in got.contents},
        "left": left + [f"{p}: {why}" for p, why in got.left.items()],
        "offer": offer.offer,
        "why": offer.why,
        "command": offer.command(),
    }


def pull(cfg: ClusterConfig, run_script: RunScript, dry_run: bool) -> dict[str, Any]:
    """The gates read again right before (the act's own read session: a file appeared, a job
    started from one, the branch moved), then ``git pull --ff-only`` in ONE act session."""
    got = fresh_read(cfg, (), run_script, "hygiene recheck")
    if got.report is None:
        return {"outcome": "not pulled", "why": f"tree not read right before: {got.why}"}
    offer: PullOffer = pull_offer(got.report, cfg.repo_path, got.launches)
    if not offer.offer:
        return {"outcome": "not pulled", "why": f"gate failed right before: {offer.why}"}
    if dry_run:
        return {"outcome": "would pull", "why": offer.command()}
    marker = new_marker()
    out, problem = run_script(cfg, pull_script(offer, marker, got.status_sha1), marker, "hygiene pull")
    rec = out.get("pull") if out else None
    if rec is not None and rec.rc == 0:
        return {"outcome": "pulled", "why": (rec.stdout.strip().splitlines() or [""])[-1][:200]}
    if rec is not None:
        return {"outcome": "failed", "why": f"exit {rec.rc}: {(rec.stderr.strip() or rec.stdout.strip())[-200:]}"}
    if out is None and not outcome_unknown(problem):
        return {"outcome": "not sent", "why": not_done(problem)}
    return {"outcome": "UNKNOWN", "why": not_done(problem or "no record")}


def approval_body(checked: Sequence[Mapping[str, Any]], dry_run: bool) -> str:
    """What the approver reads: per cluster, what the local clone got and why a pull is offered."""
    lines = ["A fast-forward `git pull` on the cluster clone (never reset --hard, never a push).", ""]
    for c in checked:
        if c.get("offer"):
            lines.append(f"- {c['cluster']}: {c['why']}; runs `{c['command']}`")
            if c.get("commit"):
                lines.append(f"  local clone {c['local_clone']}: committed {c['commit']} (not pushed)")
    if dry_run:
        lines += ["", "DRY RUN: an approved pull is printed, not run."]
    return "\n".join(lines) + "\n"


def record_lines(
    checked: Sequence[Mapping[str, Any]], answer: Mapping[str, Any], acted: Mapping[str, Any]
) -> list[str]:
    """The run log's lines: per cluster, the local commit (hash), the offer and the answer, the pull."""
    chosen = set(answer.get("chosen") or [])
    out = []
    for c in checked:
        name = c.get("cluster", "?")
        commit = c.get("commit") or "nothing committed"
        tracked = ", ".join(f"{s} -> {d}" if s != d else s for s, d in (c.get("tracked") or {}).items())
        out.append(f"### {name}: {c.get('summary', '')}".rstrip(": "))
        out.append(
            f"- local clone {c.get('local_clone') or '(none)'}: {commit}"
            + (f"; ignored {', '.join(c['ignored'])}" if c.get("ignored") else "")
            + (f"; tracked {tracked}" if tracked else "")
        )
        out += [f"- left for a person: {x}" for x in c.get("left") or []]
        if not c.get("offer"):
            out.append(f"- pull not offered: {c.get('why', '?')}")
            continue
        said = "Pull" if name in chosen else (answer.get("refused") or "Do not pull / no answer")
        out.append(
            f"- pull offered ({c.get('command')}): {said}"
            + (f" by {answer['responded_by']}" if name in chosen and answer.get("responded_by") else "")
        )
        result = acted.get(name)
        if result:
            out.append(f"- pull: {result['outcome']} {result.get('why', '')}".rstrip())
    return out
