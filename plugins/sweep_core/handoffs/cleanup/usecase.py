"""sweep_cleanup's plan step: every guard of sweep_core.handoffs.cleanup.plan applied to the jobs a
sweep handed off (plus an inode reclaim's backlog), one read-only probe per cluster, the hub asked
only for targets the probe cleared. Its I/O comes in as arguments (handoffs.ports).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep_core.config.ops import ClusterConfig
from sweep_core.handoffs.cleanup.backlog import BacklogUnreadable, jobs_to_plan, load_backlog, remember, update_backlog
from sweep_core.handoffs.cleanup.plan import (
    CleanupConfig,
    CleanupDecision,
    CleanupTarget,
    FlavorSpec,
    HubArtifact,
    candidate_paths,
    decide,
    hub_repo_id,
    precheck,
)
from sweep_core.handoffs.cleanup.remote import ProbeRequest, build_probe_script, read_probe
from sweep_core.handoffs.cleanup.view import NO_HOLD, NOTHING_OPEN, CleanupView, Hold
from sweep_core.handoffs.hub_evidence import HubEvidence
from sweep_core.handoffs.kernel.attempt import to_row
from sweep_core.handoffs.kernel.hub import hub_attempt, hub_result, worth_recording
from sweep_core.handoffs.kernel.result import Outcome, Result
from sweep_core.handoffs.ports import HubCheck, LoadCluster, RunScript, active_slurm
from sweep_core.slurm.gather import GatherOutput, new_marker

log = logging.getLogger(__name__)


@dataclass
class CleanupPlan:
    """A decision per target, and each probed cluster's df -i / quota texts before any rm."""

    decisions: list[CleanupDecision] = field(default_factory=list)
    before: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what could not be planned (an unreadable backlog)

    def to_dict(self) -> dict[str, Any]:
        return {"decisions": [d.to_dict() for d in self.decisions], "before": self.before, "notes": self.notes}

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> CleanupPlan:
        raw = raw or {}
        decisions = [CleanupDecision.from_dict(d) for d in raw.get("decisions", [])]
        return cls(decisions, raw.get("before", {}), list(raw.get("notes", [])))


def _blocked(t: CleanupTarget, why: str) -> CleanupDecision:
    return CleanupDecision(t, "blocked", [why])


def parse_targets(raw_jobs: list[Any]) -> tuple[dict[str, list[CleanupTarget]], list[CleanupDecision]]:
    """The targets by cluster, and a blocked decision for every malformed entry."""
    by_cluster: dict[str, list[CleanupTarget]] = defaultdict(list)
    bad: list[CleanupDecision] = []
    for raw in raw_jobs:
        try:
            t = CleanupTarget.from_dict(raw)
        except (ValueError, TypeError) as exc:
            log.warning("bad job entry: %s", exc)
            bad.append(CleanupDecision(CleanupTarget("?", "?", str(raw)[:60], "?"), "blocked", [str(exc)]))
            continue
        by_cluster[t.cluster].append(t)
    return by_cluster, bad


def target_paths(t: CleanupTarget, ccfg: CleanupConfig, roots: tuple[str, ...]) -> tuple[list[str], str]:
    """The candidate trees of one target; ([], why) when its flavor, name or job id is refused."""
    spec = ccfg.flavors.get(t.flavor)
    if spec is None:
        return [], f"unknown cleanup flavor {t.flavor!r}"
    if not ccfg.hub_org and (repo := next((h.repo for h in spec.hub if "{org}" in h.repo), "")):
        return [], f"cleanup.hub_org is empty in sweep.yaml: hub repo {repo} names no org, nothing deleted"
    try:
        paths = candidate_paths(t, spec, roots, ccfg)
        if not t.job_id.replace("_", "").isdigit():
            raise ValueError(f"job id {t.job_id!r} is not a Slurm job id")
    except ValueError as exc:
        return [], str(exc)
    return paths, ""


def reclaim_texts(out: GatherOutput, cfg: ClusterConfig) -> dict[str, str]:
    """The ``df -i <root>`` and quota texts of a probe or verify run ('' when it failed)."""
    texts = {}
    for k, root in enumerate(cfg.artifact_roots):
        r = out.get(f"dfi:{k}")
        texts[f"df -i {root}"] = r.stdout if r is not None and r.rc == 0 else ""
    q = out.get("quota")
    if q is not None:
        texts["quota"] = q.stdout if q.rc == 0 else ""
    return texts


def own_evidence(hub_check: HubCheck, repo: str, art: HubArtifact, revision: str) -> dict[str, Any]:
    """The hub entry of a job the sweep salvaged or uploaded for: the expected files at the commit
    its own upload wrote; none recorded yet = not on the hub (an earlier upload under the same
    name is never its evidence, and the upload step submits or waits for its own)."""
    entry: dict[str, Any] = {"repo_id": repo, "repo_type": art.repo_type, "revision": revision}
    if not revision:
        why = "this job's own upload has not landed (no commit of it recorded): a repo of the same name is not its evidence"
        return {**entry, "ok": False, "reason": why}
    ev = hub_check(repo, art.repo_type, list(art.expected), revision=revision)
    return {**entry, **_answer(ev), "reason": f"its own upload's commit {revision[:12]}: {ev.reason}"}


def _answer(ev: HubEvidence) -> dict[str, Any]:
    """A hub check's answer in a decision's hub entry: ``ok`` (what every guard reads), the kernel
    Result's outcome and evidence (what is recorded on the job, ``hub_acts``)."""
    res = hub_result(ev)
    return {"ok": ev.ok, "reason": ev.reason, "outcome": str(res.outcome), "evidence": res.evidence}


def hub_evidence(
    t: CleanupTarget, spec: FlavorSpec, org: str, hub_check: HubCheck, own: Mapping[tuple[str, str], str]
) -> list[dict[str, Any]]:
    """The hub entry of each artifact of ``t``'s flavor (one hub ask each); ``own``: CleanupView.own.
    A job the sweep salvaged or uploaded for is judged on its own uploads only, for every artifact:
    the repo its upload writes at the commit the ledger recorded; any other artifact of its flavor
    (e.g. ``{name}-traces``) has no upload of this job recorded, so it is not on the hub for it and
    its trees stay (the hub is not asked: a repo of the same name is never its evidence)."""
    hub: list[dict[str, Any]] = []
    for k, art in enumerate(spec.hub):
        repo = hub_repo_id(art, t, org)
        key = (t.cluster, t.job_id)
        if key in own:
            if k == 0:  # the repo its upload writes ({hub_repo}): that commit only
                hub.append(own_evidence(hub_check, repo, art, own[key]))
            else:
                why = (
                    f"no upload of {repo} by this job is recorded in the ledger (its upload writes "
                    f"{hub_repo_id(spec.hub[0], t, org)} only): a {art.repo_type} of the same name is not its "
                    "evidence; its trees are kept"
                )
                hub.append({"repo_id": repo, "repo_type": art.repo_type, "ok": False, "reason": why, "not_own": True})
            continue
        ev = hub_check(repo, art.repo_type, list(art.expected))
        hub.append({"repo_id": repo, "repo_type": art.repo_type, **_answer(ev)})
    return hub


def hub_acts(
    decisions: list[CleanupDecision], acts_of: Callable[[str, str], list[dict[str, str]]], *, run: str, at: str
) -> list[tuple[str, str, str, dict[str, str]]]:
    """The hub checks of this plan to store on their jobs' ledger rows, ``(cluster, job id, name,
    act)`` as ledger.acts.record_acts takes them: each check the hub was asked (an entry with an
    outcome), when its answer changed since the job's latest stored check of that repo, or when it
    is the evidence of a ``delete`` (kernel.hub.worth_recording); once per (job, repo, run).
    ``acts_of``: (cluster, job id) -> the job's stored acts, oldest first."""
    out = []
    for d in decisions:
        t = d.target
        past = acts_of(t.cluster, t.job_id)
        for h in d.hub:
            if h.get("outcome") not in tuple(Outcome):
                continue  # the hub was not asked (not its own upload, no commit recorded)
            res = Result(Outcome(h["outcome"]), str(h.get("reason", "")), str(h.get("evidence", "")))
            new = hub_attempt(str(h["repo_id"]), res, run=run, at=at, why=f"cleanup {d.action}")
            if worth_recording(past, new, d.action == "delete"):
                out.append((t.cluster, t.job_id, t.name, to_row(new)))
    return out


def plan_cluster(
    cluster: str,
    targets: list[CleanupTarget],
    ccfg: CleanupConfig,
    plan: CleanupPlan,
    load_cluster: LoadCluster,
    run_script: RunScript,
    hub_check: HubCheck,
    view: CleanupView = NOTHING_OPEN,
) -> None:
    """Decide every target of one cluster into ``plan``: the guards that need no cluster, one
    read-only probe, the scheduler and path guards, then the hub for what is still deletable.
    ``view``: the ledger folded (its salvages, and each job's own upload commit)."""
    cfg, why = active_slurm(load_cluster, cluster, "no POSIX tree to reap")
    if cfg is None:
        plan.decisions += [_blocked(t, why) for t in targets]
        return
    paths: dict[CleanupTarget, list[str]] = {}
    for t in targets:
        got, why = target_paths(t, ccfg, cfg.artifact_roots)
        if why:
            plan.decisions.append(_blocked(t, why))
        else:
            paths[t] = got
    if not paths:
        return
    if not cfg.artifact_roots:
        plan.decisions += [_blocked(t, f"{cluster}: ops.md has no artifact_roots") for t in paths]
        return
    flat = [p for ps in paths.values() for p in ps]
    ids = sorted({t.array_id if ccfg.flavors[t.flavor].all_chunks else t.job_id for t in paths})
    req = ProbeRequest(cfg.user, ids, flat, list(cfg.artifact_roots), cfg.quota.command)
    marker = new_marker()
    out, problem = run_script(cfg, build_probe_script(req, marker), marker, "cleanup probe")
    if out is None or problem:
        plan.decisions += [_blocked(t, f"{cluster}: {problem}: no destructive step") for t in paths]
        return
    state, checks, roots = read_probe(out, req)
    plan.before[cluster] = reclaim_texts(out, cfg)
    by_path = {c.given: c for c in checks}
    for t, ps in paths.items():
        spec = ccfg.flavors[t.flavor]
        mine = [by_path[p] for p in ps]
        salvage = (t.cluster, t.job_id) in view.salvaged
        pre = precheck(t, spec, state, mine, roots, ccfg.artifact_dir, salvage)
        if pre is not None:  # blocked, or already removed: the hub is not asked
            plan.decisions.append(pre)
            continue
        hub = hub_evidence(t, spec, ccfg.hub_org, hub_check, view.own)
        plan.decisions.append(decide(t, spec, state, mine, roots, hub, ccfg.artifact_dir, salvage))


def apply_hold(decisions: list[CleanupDecision], hold: Hold) -> None:
    """Each ``delete`` that ``hold`` holds back becomes ``blocked`` (in place), with its reason."""
    for d in decisions:
        t = d.target
        if d.action == "delete" and (why := hold.reason(t.cluster, t.array_id, t.flavor)):
            d.action, d.paths, d.roots = "blocked", [], {}
            d.reasons.append(why)


def plan_cleanup(
    jobs: list[Any],
    reclaim: list[str],
    *,
    dry_run: bool,
    ccfg: CleanupConfig,
    run_log_dir: str | Path,
    load_cluster: LoadCluster,
    run_script: RunScript,
    hub_check: HubCheck,
    view: CleanupView = NOTHING_OPEN,
    hold: Hold = NO_HOLD,
) -> CleanupPlan:
    """Apply every guard to the requested jobs, the jobs ``view`` holds open and the ``reclaim``
    clusters' backlog; last, ``hold`` (this run's consolidate step) keeps the trees of a
    consolidated array it has not released.

    ``run_log_dir``: whose cleanup backlog (sweep_core.handoffs.cleanup.backlog) is planned and kept.
    Not a dry run: the requested and open jobs join the backlog (they leave it once their trees are gone).
    ``view``: the ledger folded once for this run (cleanup.view): the jobs an upload or salvage
    keeps open, those recorded for salvage (CANCELLED is their done-signal) and each one's own
    upload commit (its hub evidence)."""
    jobs = view.with_open(jobs)
    notes = []
    try:
        held = load_backlog(run_log_dir)
    except BacklogUnreadable as exc:  # UNKNOWN: the requested jobs only, the backlog left as it is
        held = []
        notes.append(f"{exc}{': the reclaim of ' + ', '.join(reclaim) + ' plans no backlog' if reclaim else ''}")
    raw_jobs = jobs_to_plan(jobs, held, reclaim)
    if not dry_run and not notes:
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        update_backlog(run_log_dir, lambda items: remember(items, jobs, now))
    by_cluster, bad = parse_targets(raw_jobs)
    plan = CleanupPlan(bad, notes=notes)
    for cluster, targets in by_cluster.items():
        plan_cluster(cluster, targets, ccfg, plan, load_cluster, run_script, hub_check, view)
    apply_hold(plan.decisions, hold)
    return plan
