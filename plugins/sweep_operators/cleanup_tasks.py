"""Task callables of the sweep_cleanup DAG: plan (probe + hub check + guards), delete, verify, record.

Airflow-facing wiring only; every guard is sweep_core.handoffs.cleanup.plan, every remote script
sweep_core.handoffs.cleanup.remote. Nothing is deleted unless ``plan`` said ``delete`` for that path and
``dry_run`` is false.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.config.ops import OpsConfigError, load_cluster
from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.render import box_table
from sweep_core.handoffs.cleanup.plan import (
    CleanupConfig,
    CleanupDecision,
    CleanupTarget,
    candidate_paths,
    cleanup_config,
    decide,
    hub_repo_id,
    precheck,
)
from sweep_core.handoffs.cleanup.remote import (
    ProbeRequest,
    RmItem,
    build_probe_script,
    build_rm_script,
    build_verify_script,
    read_probe,
    reclaim_lines,
)
from sweep_core.slurm.gather import GatherOutput, new_marker
from sweep_operators.cluster_ssh import run_checked
from sweep_operators.handoff_record import append_record, run_log_dir

log = logging.getLogger(__name__)


def _config(sweep_yaml: str) -> tuple[CleanupConfig, Any]:
    config = load_sweep_config(sweep_yaml)
    return cleanup_config(config.cleanup), config.gather


def _blocked(t: CleanupTarget, why: str) -> CleanupDecision:
    return CleanupDecision(t, "blocked", [why])


def _hub_checker() -> Any:
    from sweep_operators.hf_hub import HubChecker

    return HubChecker.from_connection()


def _backlog_path(sweep_yaml: str) -> Path:
    return Path(run_log_dir(load_sweep_config(sweep_yaml))) / ".sweep-state" / "cleanup_backlog.json"


def load_backlog(sweep_yaml: str) -> list[dict[str, str]]:
    """Completed jobs handed to cleanup whose trees are not yet confirmed removed."""
    path = _backlog_path(sweep_yaml)
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("cleanup backlog %s unreadable (%s): starting a new one", path, exc)
        return []
    return [d for d in data if isinstance(d, dict)]


def _save_backlog(sweep_yaml: str, items: list[dict[str, str]]) -> None:
    path = _backlog_path(sweep_yaml)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(items, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(path)


def _key(d: dict[str, Any]) -> tuple[str, str]:
    return (str(d.get("cluster")), str(d.get("job_id")))


def plan(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Probe each cluster once (read-only), check the hub, apply every guard; the plan as XCom.

    ``reclaim_clusters`` (INODE HEADROOM over the soft limit) adds the backlog of completed
    jobs on those clusters whose trees were never confirmed removed."""
    ccfg, limits = _config(sweep_yaml)
    params = context["params"]
    raw_jobs = list(params.get("jobs") or [])
    reclaim = set(params.get("reclaim_clusters") or [])
    backlog = load_backlog(sweep_yaml)
    asked = {_key(j) for j in raw_jobs if isinstance(j, dict)}
    raw_jobs += [b for b in backlog if b.get("cluster") in reclaim and _key(b) not in asked]
    if not params.get("dry_run", True):
        known = {_key(b) for b in backlog}
        _save_backlog(sweep_yaml, backlog + [j for j in params.get("jobs") or [] if _key(j) not in known])
    decisions: list[CleanupDecision] = []
    by_cluster: dict[str, list[CleanupTarget]] = defaultdict(list)
    for raw in raw_jobs:
        try:
            t = CleanupTarget.from_dict(raw)
        except (ValueError, TypeError) as exc:
            log.warning("bad job entry: %s", exc)
            decisions.append(CleanupDecision(CleanupTarget("?", "?", str(raw)[:60], "?"), "blocked", [str(exc)]))
            continue
        by_cluster[t.cluster].append(t)
    before: dict[str, dict[str, str]] = {}
    checker = None
    for cluster, targets in by_cluster.items():
        try:
            cfg = load_cluster(ops_dir, cluster)
        except OpsConfigError as exc:
            decisions += [_blocked(t, f"ops.md: {exc}") for t in targets]
            continue
        if cfg.scheduler != "slurm" or cfg.status != "active":
            decisions += [
                _blocked(t, f"{cluster} is {cfg.scheduler}/{cfg.status}: no POSIX tree to reap") for t in targets
            ]
            continue
        paths: dict[CleanupTarget, list[str]] = {}
        for t in targets:
            spec = ccfg.flavors.get(t.flavor)
            if spec is None:
                decisions.append(_blocked(t, f"unknown cleanup flavor {t.flavor!r}"))
                continue
            try:
                paths[t] = candidate_paths(t, spec, cfg.artifact_roots, ccfg)
                if not t.job_id.replace("_", "").isdigit():
                    raise ValueError(f"job id {t.job_id!r} is not a Slurm job id")
            except ValueError as exc:
                decisions.append(_blocked(t, str(exc)))
        if not paths:
            continue
        if not cfg.artifact_roots:
            decisions += [_blocked(t, f"{cluster}: ops.md has no artifact_roots") for t in paths]
            continue
        flat = [p for ps in paths.values() for p in ps]
        ids = sorted({t.array_id if ccfg.flavors[t.flavor].all_chunks else t.job_id for t in paths})
        req = ProbeRequest(cfg.user, ids, flat, list(cfg.artifact_roots), cfg.quota.command)
        marker = new_marker()
        out, problem = run_checked(cfg, limits, log, build_probe_script(req, marker), marker, "cleanup probe")
        if out is None or problem:
            decisions += [_blocked(t, f"{cluster}: {problem}: no destructive step") for t in paths]
            continue
        state, checks, roots = read_probe(out, req)
        before[cluster] = _reclaim_texts(out, cfg)
        by_path = {c.given: c for c in checks}
        for t, ps in paths.items():
            spec = ccfg.flavors[t.flavor]
            checks = [by_path[p] for p in ps]
            pre = precheck(t, spec, state, checks, roots, ccfg.artifact_dir)
            if pre is not None:  # blocked, or already removed: the hub is not asked
                decisions.append(pre)
                continue
            checker = checker or _hub_checker()
            hub: list[dict[str, Any]] = []
            for art in spec.hub:
                repo = hub_repo_id(art, t, ccfg.hub_org)
                ev = checker.check(repo, repo_type=art.repo_type, expected=list(art.expected))
                hub.append({"repo_id": repo, "repo_type": art.repo_type, "ok": ev.ok, "reason": ev.reason})
            decisions.append(decide(t, spec, state, checks, roots, hub, ccfg.artifact_dir))
    for d in decisions:
        log.info("%s %s %s: %s %s", d.action.upper(), d.target.cluster, d.target.job_id, d.paths, d.reasons)
    return {"decisions": [d.to_dict() for d in decisions], "before": before}


def _reclaim_texts(out: GatherOutput, cfg: Any) -> dict[str, str]:
    texts = {}
    for k, root in enumerate(cfg.artifact_roots):
        r = out.get(f"dfi:{k}")
        texts[f"df -i {root}"] = r.stdout if r is not None and r.rc == 0 else ""
    q = out.get("quota")
    if q is not None:
        texts["quota"] = q.stdout if q.rc == 0 else ""
    return texts


def _decisions(context: dict[str, Any]) -> tuple[list[CleanupDecision], dict[str, Any]]:
    raw = context["ti"].xcom_pull(task_ids="plan") or {}
    return [CleanupDecision.from_dict(d) for d in raw.get("decisions", [])], raw.get("before", {})


def delete(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Start the detached rm of every planned path (one SSH session per cluster); dry_run: print only."""
    decisions, _ = _decisions(context)
    todo = [d for d in decisions if d.action == "delete"]
    if context["params"].get("dry_run", True):
        for d in todo:
            print(f"DRY RUN: would delete on {d.target.cluster} for {d.target.job_id} {d.target.name}: {d.paths}")
        raise AirflowSkipException(f"dry_run: {len(todo)} job(s) would be cleaned, nothing deleted")
    if not todo:
        raise AirflowSkipException("nothing to delete")
    _, limits = _config(sweep_yaml)
    started: dict[str, dict[str, str]] = {}
    for cluster in sorted({d.target.cluster for d in todo}):
        cfg = load_cluster(ops_dir, cluster)
        items = [
            RmItem(p, d.roots[p], d.target.name, d.target.array_id)
            for d in todo
            if d.target.cluster == cluster
            for p in d.paths
        ]
        marker = new_marker()
        out, problem = run_checked(cfg, limits, log, build_rm_script(cfg.user, items, marker), marker, "cleanup rm")
        results = {}
        for k, path in enumerate(sorted(it.path for it in items)):
            r = out.get(f"rm:{k}") if out else None
            results[path] = (r.stdout if r.rc == 0 else f"REFUSED: {r.stdout}") if r else f"not run: {problem}"
            log.info("rm %s: %s", path, results[path])
        started[cluster] = results
    return started


def verify(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Wait (bounded) until the deleted trees are gone, then read df -i / quota again: the reclaim."""
    started = context["ti"].xcom_pull(task_ids="delete") or {}
    if not started:
        raise AirflowSkipException("nothing was deleted")
    ccfg, limits = _config(sweep_yaml)
    _, before = _decisions(context)
    report: dict[str, Any] = {}
    for cluster, results in started.items():
        cfg = load_cluster(ops_dir, cluster)
        paths = [p for p, r in results.items() if r.startswith("started") or r == "gone"]
        deadline = time.monotonic() + ccfg.verify_timeout_s
        left: list[str] = paths
        out: GatherOutput | None = None
        while True:
            marker = new_marker()
            script = build_verify_script(paths, list(cfg.artifact_roots), cfg.quota.command, marker)
            out, problem = run_checked(cfg, limits, log, script, marker, "cleanup verify")
            if out is not None and not problem:
                sorted_paths = sorted(paths)
                left = [sorted_paths[k] for k in range(len(paths)) if out.get(f"left:{k}") is not None]
                if not left or time.monotonic() > deadline:
                    break
            elif time.monotonic() > deadline:
                break
            time.sleep(ccfg.verify_poll_s)
        after = _reclaim_texts(out, cfg) if out else {}
        report[cluster] = {
            "removed": [p for p in paths if p not in left],
            "left": left,
            "reclaim": reclaim_lines(before.get(cluster, {}), after),
        }
        log.info("%s: removed %d, still there %d; %s", cluster, len(paths) - len(left), len(left), report[cluster])
    return report


def record(sweep_yaml: str, **context: Any) -> str:
    """Print the cleanup table and append it to the dated run log's actions section."""
    decisions, _ = _decisions(context)
    verified = context["ti"].xcom_pull(task_ids="verify") or {}
    started = context["ti"].xcom_pull(task_ids="delete") or {}
    dry = bool(context["params"].get("dry_run", True))
    rows = []
    for d in decisions:
        status = d.action
        if d.action == "delete":
            status = "would delete (dry run)" if dry else "deleted"
            v = verified.get(d.target.cluster, {})
            if not dry and any(p in v.get("left", []) for p in d.paths):
                status = "rm started, not gone yet"
            if not dry and any(
                started.get(d.target.cluster, {}).get(p, "").startswith(("REFUSED", "not run")) for p in d.paths
            ):
                status = "refused on the cluster"
        rows.append(
            [
                d.target.cluster,
                d.target.job_id,
                d.target.name,
                d.target.flavor,
                status,
                "; ".join(d.reasons) or "\n".join(d.paths),
            ]
        )
    table = box_table(
        ["Cluster", "Job", "Name", "Flavor", "Outcome", "Why / paths"], rows, [None, None, 40, None, None, 70]
    )
    lines = [table]
    for cluster, v in verified.items():
        lines += [f"{cluster}: {x}" for x in v.get("reclaim", [])]
    text = "\n".join(lines)
    print(text)
    if not dry:
        finished = {
            _key(d.target.to_dict())
            for d, row in zip(decisions, rows, strict=True)
            if row[4] in ("deleted", "nothing-to-do")
        }
        _save_backlog(sweep_yaml, [b for b in load_backlog(sweep_yaml) if _key(b) not in finished])
    return str(append_record(context, sweep_yaml, "sweep_cleanup", text))
