"""sweep_cleanup's steps after the plan: start the detached rm of what the plan allowed (one SSH
session per cluster), wait (bounded) until the trees are gone and read the inode reclaim, and the
outcome table. Its I/O comes in as arguments (handoffs.ports); clock and sleep too, for tests.

Each rm is a kernel attempt: ``Act(rm, cluster, path)`` settled with its ``Result`` (ok / failed /
unknown, why, the cluster's answer as evidence), carried between the tasks as the kernel's stored
row (kernel.attempt ``to_row``, read back with ``rm_result``) and recorded on the job's ledger row
(``rm_acts``): the job's history says ``rm <path>: <outcome> (<why>)``; an unknown rm whose tree
verify saw gone is settled ok there too (``confirmed_acts``).
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
from sweep_core.handoffs.kernel.act import Act, ActKind
from sweep_core.handoffs.kernel.attempt import Attempt, from_row, to_row
from sweep_core.handoffs.kernel.result import Outcome, Result, failed, ok, unknown
from sweep_core.handoffs.ports import LoadCluster, RunScript
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.failover import outcome_unknown
from sweep_core.slurm.gather import GatherOutput, new_marker

RM_KIND = "rm"  # the ledger act kind of an rm attempt
_EVIDENCE_CHARS = 500


def rm_row(cluster: str, path: str, result: Result, run: str = "", at: str = "") -> dict[str, str]:
    """One rm's Result as the kernel stores an attempt: kind ``rm``, its act (rm, cluster, path),
    ``outcome`` (ok / failed / unknown), ``why`` and the answer as ``evidence``."""
    attempt = Attempt(
        kind=RM_KIND,
        run=run or None,
        at=at or None,
        why=result.reason or None,
        said=str(result.outcome),
        extra={"evidence": result.evidence[:_EVIDENCE_CHARS]} if result.evidence else {},
        act=Act(ActKind.RM, cluster, path),
    )
    return to_row(attempt)


def rm_result(row: object) -> Result:
    """A stored rm attempt (``rm_row``) -> its Result; a missing, garbled or foreign row reads as
    unknown with the reason (never as removed)."""
    if row is None:
        return unknown("no rm result recorded for this path")
    a = from_row(row)
    got = a.result
    if a.problem or got is None:
        return got or unknown("the stored rm names no outcome", str(row)[:200])
    if a.act is None or a.act.kind is not ActKind.RM:
        return unknown(f"the stored act is not an rm: {str(row)[:160]}")
    return Result(got.outcome, a.why or got.reason, a.get("evidence"))


def rm_answer(r: CommandResult | None, problem: str) -> Result:
    """What one rm came to from its record (programs/cleanup_rm.sh: rc 0 + ``started pid N`` or
    ``gone``, rc 2 + why it refused); no record: unknown when the script was sent (never sent
    again: verify looks), else failed (not run). Any other answer is unknown, never ok."""
    if r is None and outcome_unknown(problem):
        return unknown(f"{problem}: not sent again; verify looks whether the tree is gone")
    if r is None:
        return failed(f"not run: {problem or 'the rm script stopped before this path'}")
    said = r.stdout.strip()
    if r.rc != 0:
        return failed(said or f"rc {r.rc}", r.stdout)
    pid = said.removeprefix("started pid ")
    if said == "gone" or (pid != said and pid.isdigit()):
        return ok(said)
    return unknown(f"rm result {said[:160]!r} is neither started, gone, refused nor not run", r.stdout)


def start_deletes(
    todo: list[CleanupDecision], load_cluster: LoadCluster, run_script: RunScript, run: str = "", at: str = ""
) -> dict[str, dict[str, dict[str, str]]]:
    """cluster -> path -> its rm attempt (``rm_row``) for every path of the ``delete`` decisions
    in ``todo``; ``run``/``at``: this run's id and time, stored with each."""
    started: dict[str, dict[str, dict[str, str]]] = {}
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
        started[cluster] = {
            path: rm_row(cluster, path, rm_answer(out.get(f"rm:{k}") if out else None, problem), run, at)
            for k, path in enumerate(sorted(it.path for it in items))
        }
    return started


def rm_acts(
    todo: list[CleanupDecision], started: dict[str, dict[str, Any]]
) -> list[tuple[str, str, str, dict[str, str]]]:
    """``(cluster, job id, name, rm attempt)`` of every path started (ledger.acts.record_acts):
    each rm on the row of the job whose tree it is."""
    return [
        (d.target.cluster, d.target.job_id, d.target.name, row)
        for d in todo
        for p in d.paths
        if isinstance(row := started.get(d.target.cluster, {}).get(p), dict)
    ]


def confirmed_acts(
    todo: list[CleanupDecision],
    started: dict[str, dict[str, Any]],
    verified: dict[str, Any],
    run: str = "",
    at: str = "",
) -> list[tuple[str, str, str, dict[str, str]]]:
    """``(cluster, job id, name, rm attempt)`` for each rm whose outcome was unknown and whose tree
    verify then saw gone: the act settled ok (evidence: verify), so the job's history no longer
    leaves it unknown. Nothing for an rm verify did not look at or found still there."""
    out = []
    for d in todo:
        t, removed = d.target, (verified.get(d.target.cluster) or {}).get("removed", [])
        for p in d.paths:
            if p in removed and rm_result(started.get(t.cluster, {}).get(p)).outcome is Outcome.UNKNOWN:
                out.append((t.cluster, t.job_id, t.name, rm_row(t.cluster, p, ok("verify saw it gone"), run, at)))
    return out


def verify_removed(
    started: dict[str, dict[str, Any]],
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
