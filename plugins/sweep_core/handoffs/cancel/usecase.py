"""sweep_cancel's steps as use-cases: validate the requested jobs (one squeue per active SLURM
cluster), scancel the approved ones (re-checked in the same script, sacct confirms), and the
outcome table. The approval itself is the Airflow side's; I/O comes in as arguments (handoffs.ports).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from sweep_core.fanin.render import box_table
from sweep_core.handoffs.cancel.fresh import moved_in_script, on_silence
from sweep_core.handoffs.cancel.iris import IrisList, IrisStop, approved_stops, iris_rows, stop_line, stop_outcome
from sweep_core.handoffs.cancel.outcome import ActOutcome, Did, Outcomes, left_alone, not_done
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest, job_key, outcome, validate
from sweep_core.handoffs.cancel.remote import (
    ApprovedJob,
    build_scancel_script,
    build_validate_script,
    read_scancel,
    scancel_line,
)
from sweep_core.handoffs.ports import LoadCluster, RunScript, Say, active_slurm
from sweep_core.records.vocab import Action, salvage_flavor
from sweep_core.slurm.gather import new_marker
from sweep_core.slurm.parse import SlurmOutputError, parse_squeue

log = logging.getLogger(__name__)


def validate_jobs(
    raw_jobs: list[Any],
    load_cluster: LoadCluster,
    run_script: RunScript,
    list_iris: IrisList | None = None,
    running: dict[str, int] | None = None,
) -> list[CancelDecision]:
    """A decision per requested job: malformed entries and jobs of a cluster that is not active are
    blocked; every SLURM cluster is asked ONE squeue, every iris cluster (with ``list_iris``) ONE
    controller list (UNKNOWN blocks all its jobs). ``running`` gets each SLURM cluster's RUNNING
    jobs in that squeue (the circuit breaker's denominator)."""
    decisions: list[CancelDecision] = []
    by_cluster: dict[str, list[CancelRequest]] = defaultdict(list)
    for raw in raw_jobs:
        try:
            req = CancelRequest.from_dict(raw)
        except (ValueError, TypeError) as exc:
            log.warning("bad job entry: %s", exc)
            bad = CancelRequest("?", "?", str(raw)[:60], "?")
            decisions.append(CancelDecision(bad, "blocked", [str(exc)]))
            continue
        by_cluster[req.cluster].append(req)
    for cluster, reqs in by_cluster.items():
        cfg, why = active_slurm(load_cluster, cluster, "not an active SLURM cluster, not contacted")
        if cfg is None and list_iris is not None and _active_iris(load_cluster, cluster):
            decisions += _validate_iris(load_cluster(cluster), reqs, list_iris)
            continue
        if cfg is None:
            decisions += [CancelDecision(r, "blocked", [why]) for r in reqs]
            continue
        marker = new_marker()
        out, problem = run_script(cfg, build_validate_script(cfg.user, marker), marker, "cancel validate")
        rows = None
        if out is not None and not problem:
            sq = out.get("squeue")
            try:
                rows = parse_squeue(sq) if sq is not None else None
                problem = "" if sq is not None else "no squeue record"
            except SlurmOutputError as exc:
                problem = str(exc)
        if rows is not None and running is not None:
            running[cluster] = sum(1 for row in rows if row.state == "RUNNING")
        decisions += validate(reqs, rows, problem)
    return decisions


def _active_iris(load_cluster: LoadCluster, cluster: str) -> bool:
    try:
        cfg = load_cluster(cluster)
    except ValueError:  # ops.md unreadable: active_slurm said why
        return False
    return cfg.scheduler == "iris" and cfg.status == "active"


def _validate_iris(cfg: Any, reqs: list[CancelRequest], list_iris: IrisList) -> list[CancelDecision]:
    """validate on the controller's list; each job's newest log line time as its evidence (the stop
    leaves a job flagged for its silence alone when its log was written after it)."""
    jobs, problem = list_iris(cfg)
    decisions = validate(reqs, None if jobs is None else iris_rows(jobs), problem, source="the iris controller")
    newest = {j.job_id: j.log_mtime for j in jobs or [] if j.log_mtime is not None}
    for d in decisions:
        if d.verdict == "cancel" and d.request.job_id in newest:
            d.evidence = {**(d.evidence or {}), "last_output_ms": int(newest[d.request.job_id] * 1000)}
    return decisions


def _stop_iris(
    cfg: Any, mine: list[CancelDecision], confirm_timeout_s: int, dry_run: bool, stop_iris: IrisStop | None, say: Say
) -> dict[str, ActOutcome]:
    """Job id -> result for one iris cluster's approved jobs (dry run: ``say`` each stop)."""
    if dry_run:
        for d in mine:
            say(f"DRY RUN: would run on {cfg.name}: {stop_line(d.request.job_id, d.state)}")
        return {d.request.job_id: ActOutcome(Did.DRY_RUN, "would stop (dry run)") for d in mine}
    if stop_iris is None:
        return {d.request.job_id: ActOutcome(Did.NOT_RUN, "not run: no iris client wired in") for d in mine}
    recs, problem = stop_iris(cfg, approved_stops(mine), confirm_timeout_s)
    return {d.request.job_id: stop_outcome((recs or {}).get(d.request.job_id), problem) for d in mine}


def scancel_approved(
    decisions: list[CancelDecision],
    *,
    confirm_timeout_s: int,
    dry_run: bool,
    load_cluster: LoadCluster,
    run_script: RunScript,
    say: Say,
    stop_iris: IrisStop | None = None,
    step_patterns: Any = (),
    tail_bytes: int = 4096,
) -> Outcomes:
    """cluster -> job id -> result for every ``cancel`` decision (call only after approval):
    one SSH session per cluster re-checks (state, name, and for a RUNNING job flagged for its
    silence its log as judged at validation: one that moved since is left alone, handoffs.cancel.fresh),
    scancels and waits for sacct (an iris cluster: one ``stop_iris`` call re-checks, stops and waits
    for KILLED); dry run: ``say`` each line."""
    todo = [d for d in decisions if d.verdict == "cancel"]
    results: Outcomes = {}
    for cluster in sorted({d.request.cluster for d in todo}):
        cfg = load_cluster(cluster)
        mine = [d for d in todo if d.request.cluster == cluster]
        if cfg.scheduler == "iris":  # validate let it through: an active iris cluster
            results[cluster] = _stop_iris(cfg, mine, confirm_timeout_s, dry_run, stop_iris, say)
            continue
        jobs = [ApprovedJob(d.request.job_id, d.request.name, d.state) for d in mine]
        if dry_run:
            for j in jobs:
                say(f"DRY RUN: would run on {cluster}: {scancel_line(cfg.user, j)}")
            results[cluster] = {j.job_id: ActOutcome(Did.DRY_RUN, "would scancel (dry run)") for j in jobs}
            continue
        marker = new_marker()
        judged = [d.evidence if d.state == "RUNNING" and on_silence(d) else {} for d in mine]
        script = build_scancel_script(cfg.user, jobs, marker, confirm_timeout_s, judged, tail_bytes)
        out, problem = run_script(cfg, script, marker, "scancel")
        per_job, sacct, sacct_problem = read_scancel(out, jobs) if out else ([(None, "")] * len(jobs), {}, "")
        results[cluster] = {}
        for k, (d, (rc, text)) in enumerate(zip(mine, per_job, strict=True)):
            res = outcome(d, rc, text, sacct)
            how = moved_in_script(out, k, d.request.job_id, d.request.name, judged[k], step_patterns)
            if how:
                res = left_alone(how)
            elif rc is None and problem:
                res = not_done(problem)
            elif res.did == Did.SENT and sacct_problem:
                res = res.with_text(f" (sacct: {sacct_problem[:120]})")
            results[cluster][d.request.job_id] = res
    return results


def approval_text(answer: dict[str, Any], approved: bool) -> str:
    """The human's answer as the table says it (``answer`` as the approval task kept it)."""
    if not answer:
        return "no approval (not asked, or the approval task failed)"
    if answer.get("timed_out"):
        return "approval timed out: rejected"
    if approved:
        return f"approved by {answer.get('responded_by') or '?'}"
    return f"rejected by {answer.get('responded_by') or '?'}"


def cancel_record(
    decisions: list[CancelDecision],
    done: Mapping[str, Mapping[str, ActOutcome]],
    approval: str | Mapping[str, str],
    flavor_of_name: Callable[[str], str] | None = None,
) -> str:
    """The outcome table: a row per requested job, blocked ones left alone with why. ``approval``:
    the answer's text, or per job (``job_key``) when each job had its own answer; a salvage names
    the job's own flavor (its flag line's, else ``flavor_of_name``: handoffs.upload.salvage)."""
    rows = []
    for d in decisions:
        r = d.request
        if d.verdict != "cancel":
            result, why = "blocked: left alone", "; ".join(d.reasons)
        else:
            said = approval if isinstance(approval, str) else approval.get(job_key(r.cluster, r.job_id), "not asked")
            if d.offer.get("standing") and not d.by_hand:
                said = f"standing permission: {d.offer['standing']}"
            got = done.get(r.cluster, {}).get(r.job_id)
            result = got.text if got else f"not cancelled: {said}"
            if got and got.did == Did.CANCELLED and r.action == Action.CANCEL_SALVAGE:
                flavor = salvage_flavor(r.evidence) or (flavor_of_name(r.name) if flavor_of_name else "")
                result += f"; salvage next ({flavor or 'its flavor by name'})"
            why = f"{said}; evidence: {r.evidence}" if r.evidence else said
            if d.offer.get("why"):
                why += f"; relaunch: {d.offer['why']}"
        if d.authority:
            why += f"; {d.authority}"
        if d.by_hand and r.asked_evidence:
            why += f"; requested by hand (not verified): {r.asked_evidence}"
        rows.append([r.cluster, r.job_id, r.name, r.action, d.state or "-", result, why])
    return box_table(
        ["Cluster", "Job", "Name", "Action", "State", "Outcome", "Approval / why"],
        rows,
        [None, None, 40, None, None, 40, 70],
    )
