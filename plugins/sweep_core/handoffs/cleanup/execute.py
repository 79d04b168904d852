"""sweep_cleanup's steps after the plan: start the detached rm of what the plan allowed (one SSH
session per cluster), wait (bounded) until the trees are gone and read the inode reclaim, and the
outcome table. Its I/O comes in as arguments (handoffs.ports); clock and sleep too, for tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sweep_core.fanin.render import box_table
from sweep_core.handoffs.cleanup.backlog import job_key
from sweep_core.handoffs.cleanup.plan import CleanupConfig, CleanupDecision
from sweep_core.handoffs.cleanup.remote import RmItem, build_rm_script, build_verify_script, reclaim_lines
from sweep_core.handoffs.cleanup.usecase import reclaim_texts
from sweep_core.handoffs.kernel.result import Outcome, failed, ok, rm_result, rm_text
from sweep_core.handoffs.ports import LoadCluster, RunScript
from sweep_core.slurm.failover import not_done
from sweep_core.slurm.gather import GatherOutput, new_marker


def start_deletes(
    todo: list[CleanupDecision], load_cluster: LoadCluster, run_script: RunScript
) -> dict[str, dict[str, str]]:
    """cluster -> path -> 'started pid N' | 'gone' | 'REFUSED: why' | 'not run: why' | 'UNKNOWN: why'
    for every path of the ``delete`` decisions in ``todo``: each rm's Result in its stored form
    (kernel.result.rm_text; read back with rm_result)."""
    started: dict[str, dict[str, str]] = {}
    for cluster in sorted({d.target.cluster for d in todo}):
        cfg = load_cluster(cluster)
        items = [
            RmItem(p, d.roots[p], d.target.name, d.target.array_id)
            for d in todo
            if d.target.cluster == cluster
            for p in d.paths
        ]
        marker = new_marker()
        out, problem = run_script(cfg, build_rm_script(cfg.user, items, marker), marker, "cleanup rm")
        results = {}
        for k, path in enumerate(sorted(it.path for it in items)):
            r = out.get(f"rm:{k}") if out else None
            if r is None:  # no record: UNKNOWN (sent) or not run (failover's words)
                results[path] = not_done(problem)
            else:  # rc 0: started pid N | gone (rm_result reads anything else as UNKNOWN); else refused
                results[path] = rm_text(ok(r.stdout) if r.rc == 0 else failed(r.stdout))
        started[cluster] = results
    return started


def verify_removed(
    started: dict[str, dict[str, str]],
    before: dict[str, dict[str, str]],
    ccfg: CleanupConfig,
    load_cluster: LoadCluster,
    run_script: RunScript,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """cluster -> removed / left paths and the reclaim lines, polling every ``verify_poll_s``
    until no started tree is left or ``verify_timeout_s`` passed. Every path whose rm was not
    refused is looked at (started, gone, UNKNOWN, or a result that cannot be read)."""
    report: dict[str, Any] = {}
    for cluster, results in started.items():
        cfg = load_cluster(cluster)
        paths = [p for p, r in results.items() if rm_result(r).outcome is not Outcome.FAILED]
        deadline = clock() + ccfg.verify_timeout_s
        left: list[str] = paths
        out: GatherOutput | None = None
        while True:
            marker = new_marker()
            script = build_verify_script(paths, list(cfg.artifact_roots), cfg.quota.command, marker)
            out, problem = run_script(cfg, script, marker, "cleanup verify")
            if out is not None and not problem:
                sorted_paths = sorted(paths)
                left = [sorted_paths[k] for k in range(len(paths)) if out.get(f"left:{k}") is not None]
                if not left or clock() > deadline:
                    break
            elif clock() > deadline:
                break
            sleep(ccfg.verify_poll_s)
        after = reclaim_texts(out, cfg) if out else {}
        report[cluster] = {
            "removed": [p for p in paths if p not in left],
            "left": left,
            "reclaim": reclaim_lines(before.get(cluster, {}), after),
        }
    return report


def outcome(d: CleanupDecision, started: dict[str, Any], verified: dict[str, Any], dry: bool) -> str:
    """What happened to one target, as the table's Outcome column says it. A path counts as
    removed when its rm was ok, or verify looked and found it gone; an rm whose result is unknown
    (UNKNOWN, unreadable, missing) and that verify did not look at is never counted as removed."""
    if d.action != "delete":
        return d.action
    if dry:
        return "would delete (dry run)"
    results = {p: rm_result(started.get(d.target.cluster, {}).get(p)) for p in d.paths}
    if any(r.outcome is Outcome.FAILED for r in results.values()):
        return "refused on the cluster"
    report = verified.get(d.target.cluster)
    if report is not None and any(p in report.get("left", []) for p in d.paths):
        return "rm started, not gone yet"
    if report is None and (unsure := [r for r in results.values() if r.outcome is Outcome.UNKNOWN]):
        return f"rm outcome unknown, not counted as removed: {unsure[0].reason[:200]}"
    return "deleted"


def still_there(
    decisions: list[CleanupDecision], started: dict[str, Any], verified: dict[str, Any], dry: bool
) -> dict[tuple[str, str], str]:
    """(cluster, job id) -> why the trees of a target this run did not finish are still there
    (its guards' reasons, else its outcome): the backlog's ``reason``."""
    out = {}
    for d in decisions:
        status = outcome(d, started, verified, dry)
        if status not in ("deleted", "nothing-to-do"):
            out[job_key(d.target.to_dict())] = "; ".join(d.reasons) or status
    return out


def cleanup_record(
    decisions: list[CleanupDecision], started: dict[str, Any], verified: dict[str, Any], dry: bool
) -> tuple[str, set[tuple[str, str]]]:
    """The outcome table with the reclaim lines, and the (cluster, job id) of every target whose
    trees are confirmed gone (they leave the backlog)."""
    rows, finished = [], set()
    for d in decisions:
        status = outcome(d, started, verified, dry)
        if status in ("deleted", "nothing-to-do"):
            finished.add(job_key(d.target.to_dict()))
        why = "; ".join(d.reasons) or "\n".join(d.paths)
        rows.append([d.target.cluster, d.target.job_id, d.target.name, d.target.flavor, status, why])
    table = box_table(
        ["Cluster", "Job", "Name", "Flavor", "Outcome", "Why / paths"], rows, [None, None, 40, None, None, 70]
    )
    lines = [table]
    for cluster, v in verified.items():
        lines += [f"{cluster}: {x}" for x in v.get("reclaim", [])]
    return "\n".join(lines), finished
