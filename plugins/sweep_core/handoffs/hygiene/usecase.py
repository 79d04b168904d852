"""The hygiene hand-off's use cases (sweep_hygiene): the sweep hands off a cluster whose clone is
not clean or is behind (``plan.tree_jobs``: once per change of what it found, the fingerprint is
the "job"); ``validate`` reads the clone again (ONE read session: git status, the files the triage
brings, the RUNNING jobs' launch texts), commits the triage in the LOCAL clone (never pushed, never
on the cluster) and says whether a fast-forward pull may be offered; ``pull`` re-reads the tree
and the launches in the act session's own read right before, and pulls only when the gates still
hold. Nothing here imports Airflow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from sweep_core.config.ops import ClusterConfig
from sweep_core.handoffs.harvest.commit import commit_tracker_files
from sweep_core.handoffs.hygiene.plan import PullOffer, TriagePlan, pull_offer, triage_plan
from sweep_core.handoffs.hygiene.remote import TreeRead, pull_script, read_script, read_tree
from sweep_core.handoffs.ports import RunScript
from sweep_core.slurm.failover import not_done, outcome_unknown
from sweep_core.slurm.gather import new_marker


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
