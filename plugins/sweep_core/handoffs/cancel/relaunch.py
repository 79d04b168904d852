"""sweep_cancel's relaunch steps as use-cases: read each RUNNING job's evidence (one session per
cluster), judge it (relaunch_policy: offer, RECURRING, standing permission, a remembered Reject),
and relaunch: fresh evidence judged again (handoffs.cancel.fresh: a job that moved is left alone)
and saved (``save``: the ledger and the run log) BEFORE the requeue, then one session re-checks
(state, name, the log as saved) and requeues. I/O comes in as arguments (handoffs.ports).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.handoffs.cancel.bad_nodes import find_bad_nodes, merged_exclude
from sweep_core.handoffs.cancel.fresh import moved_in_script, on_silence, rejudge
from sweep_core.handoffs.cancel.iris_relaunch import NO_COMMAND, has_command, iris_offer_why
from sweep_core.handoffs.cancel.outcome import Act, ActOutcome, Did, Outcomes, left_alone
from sweep_core.handoffs.cancel.overrides import takes_overrides
from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.handoffs.cancel.relaunch_policy import (
    Offer,
    asked_again,
    relaunch_offer,
    series_pending,
    series_spec,
    standing_permission,
)
from sweep_core.handoffs.cancel.relaunch_remote import (
    Evidence,
    RelaunchJob,
    build_evidence_script,
    build_requeue_script,
    command_argv,
    read_evidence,
    read_requeue,
    requeue_line,
)
from sweep_core.handoffs.deep_dive.follow_up import DEEP_DIVE_KILL, latest_verdict, may_ask_kill
from sweep_core.handoffs.ports import LoadCluster, RunScript, Say
from sweep_core.ledger.acts import ActKind, acts_of
from sweep_core.ledger.entries import Ledger
from sweep_core.records.vocab import Action
from sweep_core.slurm.gather import new_marker

# the wedge's evidence, saved before the requeue: (cluster, [evidence]) -> None
SaveEvidence = Callable[[str, list[Evidence]], None]


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


def _nodes(d: CancelDecision) -> int:
    return int(d.nodes) if d.nodes.isdigit() else 1


def assess(
    decisions: list[CancelDecision],
    evidence: dict[tuple[str, str], Evidence],
    ledger: Ledger,
    ccfg: CancelConfig,
    *,
    now: dt.datetime,
    run_id: str,
    iris: Mapping[str, Any] | None = None,
    commands: Mapping[str, Sequence[Any]] | None = None,
) -> None:
    """Per ``cancel`` decision (in place): its evidence and relaunch offer, the standing permission
    that covers it, or ``blocked`` when a Reject is remembered or this run already acted on it.
    ``iris``: cluster -> ops.md of the iris clusters (relaunched only through an ops.md command);
    ``commands``: cluster -> its ops.md relaunch_commands (a deep-dive KILL is offered "Cancel and
    relaunch with …" where one matching its name takes ``{overrides}``)."""
    for d in decisions:
        _assess_one(d, evidence, ledger, ccfg, now=now, run_id=run_id, iris=iris)
        if d.verdict == "cancel" and d.state == "RUNNING" and d.request.rule == DEEP_DIVE_KILL:
            cmds = (commands or {}).get(d.request.cluster) or ()
            cmd = next((c for c in cmds if c.match.search(d.request.name)), None)
            if cmd is not None and takes_overrides(cmd.argv):
                d.offer["overrides"] = "the corrected setting through the ops.md relaunch command's {overrides}"


def _assess_one(
    d: CancelDecision,
    evidence: dict[tuple[str, str], Evidence],
    ledger: Ledger,
    ccfg: CancelConfig,
    *,
    now: dt.datetime,
    run_id: str,
    iris: Mapping[str, Any] | None,
) -> None:
    """assess for one decision (see assess)."""
    rcfg = ccfg.relaunch
    if d.verdict != "cancel":
        return
    r = d.request
    if any(a.get("run") == run_id for a in acts_of(ledger, r.cluster, r.job_id) if a.get("kind") != "evidence"):
        d.verdict, d.reasons = "blocked", [f"already acted on by this run ({run_id})"]
        return
    ev = evidence.get((r.cluster, r.job_id))
    icfg = (iris or {}).get(r.cluster)
    if ev is None and icfg is not None and d.state == "RUNNING":
        _assess_iris(d, icfg, ledger, ccfg, now)
        return
    if ev is None:  # a PENDING chain link (or iris not RUNNING): cancel only
        d.offer = Offer(False, "no relaunch here (iris, or not RUNNING)").to_dict()
        d.offer["standing"] = _standing(ccfg, "cancel", d, None)
        return
    d.evidence = ev.to_dict()
    ok, why = _may_ask(ledger, r.cluster, r.job_id, r.rule, ev.silent_s, rcfg.reask_factor)
    if not ok:
        d.verdict, d.reasons = "blocked", [why]
        return
    entry = ledger.jobs.get(f"{r.cluster}|{r.job_id}")
    step = ev.step if ev.step is not None else (entry.step if entry else None)
    offer = relaunch_offer(
        cluster=r.cluster,
        job_id=r.job_id,
        name=r.name,
        evidence=r.evidence,
        state=d.state,
        step=step,
        ledger=ledger,
        cfg=rcfg,
        now=now,
    )
    if r.action != Action.KILL_APPROVAL and offer.relaunch:
        offer.relaunch, offer.why = False, f"action {r.action}: cancel only"
    if offer.relaunch and ev.requeue == "0" and rcfg.requeue_disabled == "refuse":
        offer.relaunch = False
        offer.why = "Requeue=0 (sbatch --no-requeue): refused by cancel.relaunch.requeue_disabled: refuse"
    act = "relaunch" if offer.relaunch else "cancel"
    offer.standing = "" if offer.recurring or offer.capped else _standing(ccfg, act, d, ev.silent_s)
    d.offer = offer.to_dict()


def _may_ask(
    ledger: Ledger, cluster: str, job_id: str, rule: str, silent_s: int | None, factor: float
) -> tuple[bool, str]:
    """(may ask, why not) after a Reject: a deep-dive KILL once a probe weighs more than the KILL
    rejected (deep_dive.follow_up), any other request once its silence grew ``factor`` times."""
    if rule == DEEP_DIVE_KILL:
        v = latest_verdict(ledger.jobs.get(f"{cluster}|{job_id}"))
        return may_ask_kill(ledger.jobs.get(f"{cluster}|{job_id}"), int((v or {}).get("weight") or 0))
    return asked_again(ledger, cluster, job_id, silent_s, factor)


def _assess_iris(d: CancelDecision, icfg: Any, ledger: Ledger, ccfg: CancelConfig, now: dt.datetime) -> None:
    """An iris RUNNING job: the same policy (its step from the ledger), offered only where an ops.md
    relaunch command matches its name (iris has no requeue)."""
    r = d.request
    ok, why = _may_ask(ledger, r.cluster, r.job_id, r.rule, None, ccfg.relaunch.reask_factor)
    if not ok:
        d.verdict, d.reasons = "blocked", [why]
        return
    entry = ledger.jobs.get(f"{r.cluster}|{r.job_id}")
    offer = relaunch_offer(cluster=r.cluster, job_id=r.job_id, name=r.name, evidence=r.evidence, state=d.state,
                           step=entry.step if entry else None, ledger=ledger, cfg=ccfg.relaunch, now=now)  # fmt: skip
    if r.action != Action.KILL_APPROVAL and offer.relaunch:
        offer.relaunch, offer.why = False, f"action {r.action}: cancel only"
    if offer.relaunch and not has_command(icfg, r.name):
        offer.relaunch, offer.why = False, NO_COMMAND
    elif offer.relaunch:
        offer.why = iris_offer_why(offer.why)
    act = "relaunch" if offer.relaunch else "cancel"
    offer.standing = "" if offer.recurring or offer.capped else _standing(ccfg, act, d, None)
    d.offer = offer.to_dict()


def _standing(ccfg: CancelConfig, act: str, d: CancelDecision, silent_s: int | None) -> str:
    """The standing permission covering this act; never one for a by-hand request (it always asks)."""
    if d.by_hand:
        return ""
    r = d.request
    return standing_permission(
        ccfg.standing, action=act, rule=r.rule, cluster=r.cluster, name=r.name, silent_s=silent_s, nodes=_nodes(d)
    )


def relaunch_plan(
    d: CancelDecision, ev: Evidence, ccfg: CancelConfig, commands: Sequence[Any], ledger: Ledger | None = None
) -> RelaunchJob:
    """How one job is relaunched: the ops.md command matching its name, else ``scontrol requeue``;
    a bad node its saved tail names is excluded from it and from its series' PENDING jobs."""
    r = d.request
    rcfg = ccfg.relaunch
    spec = series_spec(r.name, rcfg)
    bad = find_bad_nodes(ev.tail, rcfg.bad_nodes, ev.nodelist, rcfg.max_bad_nodes)
    cmd = next((c for c in commands if c.match.search(r.name)), None)
    array, _, task = r.job_id.partition("_")
    fill = {"job_id": r.job_id, "name": r.name, "array_job": array, "task": task, "exclude": ",".join(bad.nodes)}
    given = tuple(d.offer.get("with") or ())  # "Cancel and relaunch with …": the corrected setting
    if given and cmd is None:
        raise ValueError("no ops.md relaunch command matches it: the corrected setting cannot be passed")
    argv = command_argv(cmd.argv, fill, given) if cmd else ()  # ValueError: a name or an override not plain
    pending = series_pending(ledger, r.cluster, r.job_id, r.name, rcfg.max_pending_excluded) if bad.nodes else []
    return RelaunchJob(
        r.job_id,
        r.name,
        signal=spec.checkpoint_signal if spec else "",
        grace_s=spec.grace_s if spec else 0,
        set_requeue=ev.requeue == "0" and rcfg.requeue_disabled == "set",
        command=argv,
        exclude=merged_exclude(ev.exc_nodes, bad.nodes) if bad.nodes else "",
        bad=bad.nodes,
        pending=tuple(pending),
        bad_note=bad.note,
    )


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
    ledger: Ledger | None = None,
    now: dt.datetime | None = None,
) -> Outcomes:
    """cluster -> job id -> result for the given (approved or standing) relaunches: per cluster,
    fresh evidence, judged again (a job that moved since it was judged, or no longer offered a
    relaunch or covered by its standing permission, is left alone with why), saved by ``save``
    first, then ONE session re-checks (the log as saved, handoffs.cancel.fresh) and requeues."""
    results: Outcomes = {}
    led = ledger or Ledger()
    for cluster in sorted({d.request.cluster for d in decisions}):
        cfg = load_cluster(cluster)
        mine = [d for d in decisions if d.request.cluster == cluster]
        jobs = [(cluster, d.request.job_id, d.request.name) for d in mine]
        fresh = read_all_evidence(jobs, load_cluster, run_script, ccfg.relaunch.evidence_tail_bytes, step_patterns)
        results[cluster] = {}
        go: list[tuple[CancelDecision, Evidence]] = []
        for d in mine:
            ev = fresh[(cluster, d.request.job_id)]
            why = rejudge(d, ev, led, ccfg, now=now or dt.datetime.now(dt.UTC), relaunch=True)
            if why:
                results[cluster][d.request.job_id] = left = left_alone(why, Act.RELAUNCH)
                say(f"{cluster} {d.request.job_id} {d.request.name}: {left}")
            else:
                go.append((d, ev))
        plans, kept = [], []
        for d, ev in go:
            try:
                plans.append(relaunch_plan(d, ev, ccfg, cfg.relaunch_commands, ledger))
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
            results[cluster].update({p.job_id: ActOutcome(Did.DRY_RUN, "would relaunch (dry run)", Act.RELAUNCH)
                                     for p in plans})  # fmt: skip
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
