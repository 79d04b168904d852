"""sweep_cancel's relaunch hand-off as use-cases (I/O comes in as ``CancelPorts``, handoffs.ports;
the ledger folded once for the jobs, ledger.view, is handed in by the task):

- ``judge`` (validation): each RUNNING job's evidence read (one session per cluster), the policy
  (plan: offer, RECURRING, standing permission, a remembered Reject) and the brakes on standing
  permissions, all on the one folded view;
- ``act`` (once approved, or under a standing permission): per cluster, the decisions whose offer
  allows a relaunch are relaunched (iris: stop + the ops.md command; SLURM: ``relaunch_jobs``:
  fresh evidence judged again (a job that moved is left alone), written to the run log BEFORE the
  requeue (it truncates the log), then one session re-checks (state, name, the log as read) and
  requeues), the others cancelled (handoffs.cancel.usecase). Every act (the evidence, the
  relaunches and cancels, the links to a new id) is computed first and reaches the ledger in ONE
  call at the end; an error on one cluster leaves the others' outcomes (and its own jobs'
  "outcome unknown") recorded.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.handoffs.cancel.fresh import Evidence, moved_in_script, on_silence
from sweep_core.handoffs.cancel.iris import IrisStop
from sweep_core.handoffs.cancel.outcome import Act, ActOutcome, Did, Outcomes, left_alone
from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.handoffs.cancel.remember import LedgerAct, outcome_acts
from sweep_core.handoffs.cancel.usecase import scancel_approved
from sweep_core.handoffs.ports import LoadCluster, RunScript, Say
from sweep_core.handoffs.relaunch.brakes import Trip, apply_brakes
from sweep_core.handoffs.relaunch.iris import RunLocal, relaunch_iris
from sweep_core.handoffs.relaunch.plan import assess, rejudge, relaunch_plan, view_of
from sweep_core.handoffs.relaunch.remote import (
    build_evidence_script,
    build_requeue_script,
    read_evidence,
    read_requeue,
    requeue_line,
)
from sweep_core.ledger.acts import ActKind, record_acts
from sweep_core.ledger.view import LedgerView
from sweep_core.slurm.gather import new_marker

log = logging.getLogger(__name__)

# the wedge's evidence, kept before the requeue: (cluster, [evidence]) -> None
SaveEvidence = Callable[[str, list[Evidence]], None]


@dataclass(frozen=True)
class CancelPorts:
    """The I/O sweep_cancel's judgement and acts need (wired by the Airflow side); the ledger is the
    one of ``log_dir``."""

    load: LoadCluster
    run_script: RunScript
    stop_iris: IrisStop | None
    run_local: RunLocal | None
    say: Say
    note: Callable[[str, str], None]  # (section, text) -> this run's run log
    log_dir: str
    run_id: str
    now: Callable[[], str]  # the ISO time an act is recorded at
    step_patterns: Any = ()


def judge(
    decisions: list[CancelDecision],
    ccfg: CancelConfig,
    io: CancelPorts,
    view: LedgerView,
    *,
    running: Mapping[str, int],
    now: dt.datetime,
) -> dict[str, Trip]:
    """Validation's judgement, in place: the evidence of every RUNNING SLURM job validated for cancel
    (one session per cluster), the policy per job (plan.assess) and the brakes on standing
    permissions (brakes.apply_brakes), both on ``view`` (the ledger folded once for these jobs; never
    read again). Returns the circuit breaker's trips."""
    jobs, iris, commands = evidence_targets(decisions, io.load)
    ev = read_all_evidence(jobs, io.load, io.run_script, ccfg.relaunch.evidence_tail_bytes, io.step_patterns)
    assess(decisions, ev, view, ccfg, now=now, run_id=io.run_id, iris=iris, commands=commands)
    return apply_brakes(decisions, view, ccfg, running=running, now=now, run_id=io.run_id)


def read_all_evidence(
    jobs: Sequence[tuple[str, str, str]],
    load_cluster: LoadCluster,
    run_script: RunScript,
    tail_bytes: int,
    step_patterns: Any,
) -> dict[tuple[str, str], Evidence]:
    """(cluster, job id) -> evidence for ``(cluster, job id, name)`` jobs: one session per cluster."""
    out: dict[tuple[str, str], Evidence] = {}
    for cluster in sorted({c for c, _, _ in jobs}):
        mine = [(i, n) for c, i, n in jobs if c == cluster]
        cfg = load_cluster(cluster)
        marker = new_marker()
        script = build_evidence_script(cfg.user, [i for i, _ in mine], marker, tail_bytes)
        res, problem = run_script(cfg, script, marker, "relaunch evidence")
        for job_id, ev in read_evidence(res, mine, step_patterns).items():
            out[(cluster, job_id)] = (
                ev if not problem or ev.problem else Evidence(**{**ev.to_dict(), "problem": problem})
            )
    return out


def evidence_targets(
    decisions: Sequence[CancelDecision], load_cluster: LoadCluster
) -> tuple[list[tuple[str, str, str]], dict[str, Any], dict[str, Sequence[Any]]]:
    """What assess needs read for the RUNNING jobs validated for cancel: the SLURM jobs whose evidence
    is read (cluster, id, name), the iris clusters' ops.md, each cluster's relaunch_commands."""
    jobs, iris, commands = [], {}, {}
    for d in decisions:
        if d.verdict != "cancel" or d.state != "RUNNING":
            continue
        ops = load_cluster(d.request.cluster)
        commands[d.request.cluster] = ops.relaunch_commands
        if ops.scheduler == "slurm":
            jobs.append((d.request.cluster, d.request.job_id, d.request.name))
        elif ops.scheduler == "iris":
            iris[d.request.cluster] = ops
    return jobs, iris, commands


def relaunch_jobs(
    decisions: list[CancelDecision],
    ccfg: CancelConfig,
    *,
    dry_run: bool,
    load_cluster: LoadCluster,
    run_script: RunScript,
    say: Say,
    save: SaveEvidence,
    step_patterns: Any = (),
    view: LedgerView | None = None,
    now: dt.datetime | None = None,
) -> Outcomes:
    """cluster -> job id -> result for the given (approved or standing) relaunches: per cluster,
    fresh evidence, judged again (a job that moved since it was judged, or no longer offered a
    relaunch or covered by its standing permission, is left alone with why), saved by ``save``
    first, then ONE session re-checks (the log as saved, handoffs.cancel.fresh) and requeues.
    ``view``: the ledger folded for these jobs when the act began."""
    results: Outcomes = {}
    led = view or LedgerView()
    for cluster in sorted({d.request.cluster for d in decisions}):
        cfg = load_cluster(cluster)
        mine = [d for d in decisions if d.request.cluster == cluster]
        jobs = [(cluster, d.request.job_id, d.request.name) for d in mine]
        fresh = read_all_evidence(jobs, load_cluster, run_script, ccfg.relaunch.evidence_tail_bytes, step_patterns)
        results[cluster] = {}
        go: list[tuple[CancelDecision, Evidence]] = []
        for d in mine:
            ev = fresh[(cluster, d.request.job_id)]
            why = rejudge(d, ev, view_of(led, d), ccfg, now=now or dt.datetime.now(dt.UTC), relaunch=True)
            if why:
                results[cluster][d.request.job_id] = left = left_alone(why, Act.RELAUNCH)
                say(f"{cluster} {d.request.job_id} {d.request.name}: {left}")
            else:
                go.append((d, ev))
        plans, kept = [], []
        for d, ev in go:
            try:
                plans.append(relaunch_plan(d, ev, ccfg, cfg.relaunch_commands, view_of(led, d)))
                kept.append((d, ev))
            except ValueError as exc:  # the name may not fill the ops.md command: nothing sent
                results[cluster][d.request.job_id] = ActOutcome(
                    Did.NOT_RELAUNCHED, f"not relaunched: {exc}", Act.RELAUNCH
                )
        go = kept
        if not plans:
            continue
        evs = [ev for _, ev in go]
        if dry_run:
            for p in plans:
                say(f"DRY RUN: would run on {cluster}: {requeue_line(cfg.user, p)}")
            results[cluster].update(
                {p.job_id: ActOutcome(Did.DRY_RUN, "would relaunch (dry run)", Act.RELAUNCH) for p in plans}
            )
            continue
        save(cluster, evs)  # BEFORE the requeue: it truncates the log
        marker = new_marker()
        judged = [ev.to_dict() if on_silence(d) else {} for (d, _), ev in zip(go, evs, strict=True)]
        tail = ccfg.relaunch.evidence_tail_bytes
        script = build_requeue_script(cfg.user, plans, marker, ccfg.relaunch.confirm_timeout_s, judged, tail)
        out, problem = run_script(cfg, script, marker, "relaunch")
        got = read_requeue(out, plans, problem)
        for k, p in enumerate(plans):
            how = moved_in_script(out, k, p.job_id, p.name, judged[k], step_patterns)
            results[cluster][p.job_id] = left_alone(how, Act.RELAUNCH) if how else got[p.job_id]
    return results


def saver(io: CancelPorts, offers: dict[str, dict[str, Any]], acts: list[LedgerAct]) -> SaveEvidence:
    """The wedge's evidence, kept BEFORE the requeue (it truncates the log): the run log's "evidence"
    section written at once, the ledger act added to ``acts`` (recorded with the others at the end)."""

    def save(cluster: str, evs: list[Evidence]) -> None:
        at = io.now()
        acts.extend(
            (cluster, ev.job_id, ev.name, evidence_act(ev, io.run_id, at, offers.get(ev.job_id, {}))) for ev in evs
        )
        text = "".join(evidence_text(cluster, ev) for ev in evs)
        io.note("evidence", text)
        log.info("wedge evidence saved before the relaunch:\n%s", text)

    return save


def act_on_cluster(
    cluster: str,
    mine: list[CancelDecision],
    relaunch: bool,
    ccfg: CancelConfig,
    io: CancelPorts,
    dry_run: bool,
    view: LedgerView,
    acts: list[LedgerAct],
) -> dict[str, ActOutcome]:
    """One cluster's relaunches (those whose offer allows it, when ``relaunch``) and cancels; the
    evidence acts of its relaunches added to ``acts``."""
    rel = [d for d in mine if relaunch and d.offer.get("relaunch")]
    rest = [d for d in mine if d not in rel]
    got: dict[str, ActOutcome] = {}
    cfg = io.load(cluster)
    if rel and cfg.scheduler == "iris":
        got.update(
            relaunch_iris(
                cfg,
                rel,
                confirm_timeout_s=ccfg.confirm_timeout_s,
                command_timeout_s=ccfg.relaunch.command_timeout_s,
                dry_run=dry_run,
                stop_iris=io.stop_iris,
                run_local=io.run_local,
                say=io.say,
            )
        )
    elif rel:
        done = relaunch_jobs(
            rel,
            ccfg,
            dry_run=dry_run,
            load_cluster=io.load,
            run_script=io.run_script,
            say=io.say,
            save=saver(io, {d.request.job_id: d.offer for d in rel}, acts),
            step_patterns=io.step_patterns,
            view=view,
        )
        got.update(done.get(cluster, {}))
    if rest:
        done = scancel_approved(
            rest,
            confirm_timeout_s=ccfg.confirm_timeout_s,
            dry_run=dry_run,
            load_cluster=io.load,
            run_script=io.run_script,
            say=io.say,
            stop_iris=io.stop_iris,
            step_patterns=io.step_patterns,
            tail_bytes=ccfg.relaunch.evidence_tail_bytes,
        )
        got.update(done.get(cluster, {}))
    return got


def act(
    decisions: list[CancelDecision],
    relaunch: bool,
    ccfg: CancelConfig,
    io: CancelPorts,
    view: LedgerView,
    *,
    dry_run: bool,
    by: str = "",
) -> Outcomes:
    """cluster -> job id -> outcome, one cluster at a time (the module doc); ``view``: the ledger
    folded for ``decisions`` when the act began; ``by``: who approved (a standing act says so)."""
    results: Outcomes = {}
    acts: list[LedgerAct] = []
    release: list[dict[str, str]] = []
    try:
        for cluster in sorted({d.request.cluster for d in decisions}):
            mine = [d for d in decisions if d.request.cluster == cluster]
            got = results.setdefault(cluster, {})
            try:
                got.update(act_on_cluster(cluster, mine, relaunch, ccfg, io, dry_run, view, acts))
            except Exception as exc:  # the next cluster is still acted on; this one's outcome is not known
                log.exception("sweep_cancel on %s failed", cluster)
                lost = ActOutcome(Did.ERROR, f"outcome unknown: {type(exc).__name__}: {str(exc)[:200]}")
                got.update({d.request.job_id: lost for d in mine if d.request.job_id not in got})
            if not dry_run:
                done, freed = outcome_acts(mine, got, io.run_id, io.now(), by)
                acts += done
                release += freed
    finally:  # a task timeout (a BaseException) still leaves the clusters done before it recorded
        if acts or release:
            record_acts(io.log_dir, acts, release=release)
    return results


def evidence_text(cluster: str, ev: Evidence, tail_lines: int = 20) -> str:
    """The wedge's evidence as the run log keeps it: last output, step, nodes, Restarts, the tail."""
    last = dt.datetime.fromtimestamp(ev.last_output, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ") if ev.last_output else "?"
    silent = f"{ev.silent_s // 60} min" if ev.silent_s is not None else "?"
    head = (
        f"{cluster} {ev.job_id} {ev.name}: last output {last} (silent {silent}), step {ev.step}, "
        f"nodes {ev.nodelist or '?'}, Requeue={ev.requeue or '?'} Restarts={ev.restarts or '?'}"
    )
    if ev.problem:
        head += f" ({ev.problem})"
    tail = "\n".join(ev.tail.splitlines()[-tail_lines:])
    return f"{head}\nlog tail before the relaunch:\n{tail}\n"


def evidence_act(ev: Evidence, run_id: str, at: str, offer: dict[str, Any]) -> dict[str, str]:
    """The ledger act holding the evidence (the tail bounded by the evidence read)."""
    return {
        "kind": ActKind.EVIDENCE,
        "run": run_id,
        "at": at,
        "step": "" if ev.step is None else str(ev.step),
        "last_output": "" if ev.last_output is None else str(ev.last_output),
        "silent_s": "" if ev.silent_s is None else str(ev.silent_s),
        "nodes": ev.nodelist,
        "restarts": ev.restarts,
        "tail": ev.tail[-2048:],
        "series": str(offer.get("series", "")),
    }
