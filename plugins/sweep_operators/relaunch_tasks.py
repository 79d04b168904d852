"""sweep_cancel's relaunch wiring: the evidence read and policy at validation, the standing-permission
task (acts without waiting, still re-checked right before), the relaunch of approved jobs, and what
the ledger remembers (evidence before a requeue, relaunches, a Reject, an unanswered request).
Airflow-facing only; the logic is sweep_core.handoffs.cancel.relaunch / relaunch_policy.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any
from urllib.parse import quote

from sweep_core.alerts.acts_notice import Notice, breaker_notices, notices
from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.cancel.brakes import apply_brakes
from sweep_core.handoffs.cancel.fresh import LEFT_ALONE
from sweep_core.handoffs.cancel.iris_relaunch import relaunch_iris
from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.handoffs.cancel.relaunch import (
    assess,
    evidence_act,
    evidence_text,
    read_all_evidence,
    relaunch_jobs,
)
from sweep_core.handoffs.cancel.relaunch_remote import COMMAND_FAILED, Evidence, relaunched_as
from sweep_core.handoffs.cancel.usecase import scancel_approved
from sweep_core.handoffs.deep_dive.follow_up import reject_fields
from sweep_core.handoffs.ports import LoadCluster
from sweep_core.ledger.acts import ActKind, acts_of, link_acts, read_ledger, record_acts, series_record
from sweep_operators.handoff_io import iris_stopper, local_runner, ssh_runner
from sweep_operators.handoff_record import append_record, run_log_dir
from sweep_operators.task_ids import DagId

log = logging.getLogger(__name__)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _run_id(context: dict[str, Any]) -> str:
    return str(context.get("run_id") or getattr(context.get("dag_run"), "run_id", "manual"))


def ledger_dir(sweep_yaml: str) -> str:
    return run_log_dir(load_sweep_config(sweep_yaml))


def judge(
    decisions: list[CancelDecision],
    ccfg: CancelConfig,
    load: LoadCluster,
    limits: Any,
    sweep_yaml: str,
    run_id: str,
    *,
    running: dict[str, int] | None = None,
    context: dict[str, Any] | None = None,
) -> None:
    """Evidence of every RUNNING SLURM job validated for cancel (one session per cluster), then the
    policy per job (in place), then the brakes on standing permissions (caps, circuit breaker: a
    trip is logged, written to the run log and told once as a critical alert)."""
    cfg = load_sweep_config(sweep_yaml)
    jobs, iris, commands = [], {}, {}
    for d in decisions:
        if d.verdict != "cancel" or d.state != "RUNNING":
            continue
        ops = load(d.request.cluster)
        commands[d.request.cluster] = ops.relaunch_commands
        if ops.scheduler == "slurm":
            jobs.append((d.request.cluster, d.request.job_id, d.request.name))
        elif ops.scheduler == "iris":
            iris[d.request.cluster] = ops
    ev = read_all_evidence(jobs, load, ssh_runner(limits, log), ccfg.relaunch.evidence_tail_bytes, cfg.metrics.rl.step)
    ledger = read_ledger(ledger_dir(sweep_yaml))
    assess(decisions, ev, ledger, ccfg, now=_now(), run_id=run_id, iris=iris, commands=commands)
    brake(decisions, ledger, ccfg, running or {}, sweep_yaml, context or {"run_id": run_id})


def brake(
    decisions: list[CancelDecision],
    ledger: Any,
    ccfg: CancelConfig,
    running: dict[str, int],
    sweep_yaml: str,
    context: dict[str, Any],
) -> list[str]:
    """The brakes on standing permissions (handoffs.cancel.brakes, in place); a circuit-breaker trip
    is logged critical, written to the run log and told once a day as ONE critical alert (not in
    a dry run). Returns what was told."""
    trips = apply_brakes(decisions, ledger, ccfg, running=running, now=_now(), run_id=_run_id(context))
    if not trips:
        return []
    text = "".join(f"{t.why}\n" for t in trips.values())
    log.critical("%s", text.rstrip())
    append_record(context, sweep_yaml, DagId.CANCEL, text, section="circuit breaker")
    if (context.get("params") or {}).get("dry_run", True):  # a dry run announces nothing
        return []
    return _tell(sweep_yaml, context, breaker_notices(trips.values(), day=_now().date().isoformat(),
                                                       links=_links(context)))  # fmt: skip


def saver(sweep_yaml: str, context: dict[str, Any], offers: dict[str, dict[str, Any]]) -> Any:
    """The SaveEvidence of this run: the ledger act and a run-log section, before the requeue."""

    def save(cluster: str, evs: list[Evidence]) -> None:
        at, run_id = _now().isoformat(), _run_id(context)
        acts = [(cluster, ev.job_id, ev.name, evidence_act(ev, run_id, at, offers.get(ev.job_id, {}))) for ev in evs]
        record_acts(ledger_dir(sweep_yaml), acts)
        text = "".join(evidence_text(cluster, ev) for ev in evs)
        append_record(context, sweep_yaml, DagId.CANCEL, text, section="evidence")
        log.info("wedge evidence saved before the relaunch:\n%s", text)

    return save


def act(
    decisions: list[CancelDecision],
    relaunch: bool,
    *,
    ccfg: CancelConfig,
    limits: Any,
    load: LoadCluster,
    sweep_yaml: str,
    context: dict[str, Any],
    dry_run: bool,
    by: str = "",
) -> dict[str, dict[str, str]]:
    """Relaunch the decisions whose offer allows it (when ``relaunch``), scancel the others, one
    cluster at a time; each cluster's acts are in the ledger before the next cluster is touched
    (``by``: who approved; a standing act says so), and an error on one cluster leaves the others'
    outcomes (and its own jobs' "outcome unknown") recorded."""
    results: dict[str, dict[str, str]] = {}
    for cluster in sorted({d.request.cluster for d in decisions}):
        mine = [d for d in decisions if d.request.cluster == cluster]
        got: dict[str, str] = {}
        results[cluster] = got
        try:
            got.update(_act_cluster(cluster, mine, relaunch, ccfg, limits, load, sweep_yaml, context, dry_run))
        except Exception as exc:  # the next cluster is still acted on; this one's outcome is not known
            log.exception("sweep_cancel on %s failed", cluster)
            why = f"outcome unknown: {type(exc).__name__}: {str(exc)[:200]}"
            got.update({d.request.job_id: why for d in mine if d.request.job_id not in got})
        if not dry_run:
            acts, release = outcome_acts(mine, got, _run_id(context), _now().isoformat(), by)
            if acts or release:
                record_acts(ledger_dir(sweep_yaml), acts, release=release)
    return results


def _act_cluster(
    cluster: str,
    mine: list[CancelDecision],
    relaunch: bool,
    ccfg: CancelConfig,
    limits: Any,
    load: LoadCluster,
    sweep_yaml: str,
    context: dict[str, Any],
    dry_run: bool,
) -> dict[str, str]:
    """One cluster's relaunches (iris: stop + ops.md command; SLURM: evidence, re-judged, saved,
    then requeue) and cancels."""
    rel = [d for d in mine if relaunch and d.offer.get("relaunch")]
    rest = [d for d in mine if d not in rel]
    run = ssh_runner(limits, log)
    steps = load_sweep_config(sweep_yaml).metrics.rl.step
    got: dict[str, str] = {}
    cfg = load(cluster)
    if rel and cfg.scheduler == "iris":
        got.update(relaunch_iris(cfg, rel, confirm_timeout_s=ccfg.confirm_timeout_s,
                                 command_timeout_s=ccfg.relaunch.command_timeout_s, dry_run=dry_run,
                                 stop_iris=iris_stopper(), run_local=local_runner(log), say=print))  # fmt: skip
    elif rel:
        offers = {d.request.job_id: d.offer for d in rel}
        done = relaunch_jobs(
            rel,
            ccfg,
            dry_run=dry_run,
            load_cluster=load,
            run_script=run,
            say=print,
            save=saver(sweep_yaml, context, offers),
            step_patterns=steps,
            ledger=read_ledger(ledger_dir(sweep_yaml)),
        )
        got.update(done.get(cluster, {}))
    if rest:
        done = scancel_approved(
            rest,
            confirm_timeout_s=ccfg.confirm_timeout_s,
            dry_run=dry_run,
            load_cluster=load,
            run_script=run,
            say=print,
            stop_iris=iris_stopper(),
            step_patterns=steps,
            tail_bytes=ccfg.relaunch.evidence_tail_bytes,
        )
        got.update(done.get(cluster, {}))
    return got


def _base(d: CancelDecision, run_id: str, at: str) -> dict[str, str]:
    ev = d.evidence or {}
    silent = ev["remote_now"] - ev["last_output"] if ev.get("last_output") and ev.get("remote_now") else ""
    step = ev.get("step")
    return {"run": run_id, "at": at, "step": "" if step is None else str(step), "silent_s": str(silent),
            "series": str(d.offer.get("series", ""))}  # fmt: skip


def outcome_acts(
    decisions: list[CancelDecision], done: dict[str, str], run_id: str, at: str, by: str
) -> tuple[list[tuple[str, str, str, dict[str, Any]]], list[dict[str, str]]]:
    """The ledger acts of the relaunches and cancels that ran (``done``: job id -> outcome) and the
    jobs whose cancel hand-off is released (relaunched: handed again when they wedge again). A
    relaunch whose ops.md command failed after the cancel counts as a relaunch attempt."""
    acts: list[tuple[str, str, str, dict[str, Any]]] = []
    release = []
    for d in decisions:
        r, res = d.request, done.get(d.request.job_id, "")
        who = "standing permission" if d.offer.get("standing") else by
        base = {**_base(d, run_id, at), "by": who, "result": res, "standing": str(d.offer.get("standing") or "")}
        unknown = res.startswith("UNKNOWN")  # sent, its answer lost: recorded (counted), never re-sent
        if res.startswith(("requeued", "cancelled and relaunched", COMMAND_FAILED)) or (
            unknown and "relaunch sent" in res
        ):
            new_id = relaunched_as(res)
            act_ = {**base, "kind": ActKind.RELAUNCH, "new_job_id": new_id or None}  # None: not stored
            acts.append((r.cluster, r.job_id, r.name, act_))
            if new_id and new_id != r.job_id:  # an ops.md command's new id: the next sweep knows it as the same run
                acts += link_acts(r.cluster, r.job_id, new_id, r.name, base)
            release.append({"cluster": r.cluster, "job_id": r.job_id, "name": r.name})
        elif res.startswith(("cancelled", "stopped")) or unknown:
            acts.append((r.cluster, r.job_id, r.name, {**base, "kind": ActKind.CANCEL}))
    return acts, release


def remember(
    sweep_yaml: str,
    context: dict[str, Any],
    decisions: list[CancelDecision],
    done: dict[str, dict[str, str]],
    answers: dict[str, dict[str, Any]],
    standing: dict[str, dict[str, str]],
    dry_run: bool,
) -> None:
    """What the ledger keeps of this run besides the acts ``act`` recorded per cluster (recorded
    here only if it did not): a Reject (asked again when the evidence grows), an unanswered request
    (asked again next sweep), a RECURRING escalation, a series' "cap reached" escalation (once per
    series). A rejected or unanswered job's cancel hand-off is released so the next sweep may hand
    it again.
    ``answers``: job key ("cluster|job_id") -> that job's own answer."""
    if dry_run:
        return
    run_id, at = _run_id(context), _now().isoformat()
    ledger = read_ledger(ledger_dir(sweep_yaml))
    acts, release = [], []
    for d in decisions:
        if d.verdict != "cancel":
            continue
        r = d.request
        answer = answers.get(f"{r.cluster}|{r.job_id}") or {}
        chosen = (answer.get("chosen_options") or [""])[0]
        by = str(answer.get("responded_by") or "")
        item = {"cluster": r.cluster, "job_id": r.job_id, "name": r.name}
        base = _base(d, run_id, at)
        if d.offer.get("recurring"):
            acts.append((r.cluster, r.job_id, r.name, {**base, "kind": ActKind.ESCALATED, "why": d.offer["why"]}))
        if d.offer.get("capped") and not series_record(ledger, str(d.offer.get("series", ""))).escalated:
            escalated = {**base, "kind": ActKind.ESCALATED, "why": d.offer["why"], "cap": "1"}
            acts.append((r.cluster, r.job_id, r.name, escalated))
        res = {**done.get(r.cluster, {}), **standing.get(r.cluster, {})}.get(r.job_id, "")
        recorded = any(
            a.get("run") == run_id and a.get("kind") in (ActKind.RELAUNCH, ActKind.CANCEL)
            for a in acts_of(ledger, r.cluster, r.job_id)
        )
        mine, freed = outcome_acts([d], {r.job_id: res}, run_id, at, by)
        if recorded or mine:
            acts += [] if recorded else mine
            release += [] if recorded else freed
        elif res.startswith(LEFT_ALONE):  # it moved: the next sweep hands it again if it wedges again
            release.append(item)
        elif d.offer.get("standing"):
            continue
        elif answer.get("timed_out") or answer.get("refused") or not answer:
            acts.append((r.cluster, r.job_id, r.name, {**base, "kind": ActKind.UNANSWERED}))
            release.append(item)
        elif chosen == "Reject":  # a deep-dive KILL's Reject keeps the evidence weight it rejected
            extra = reject_fields(ledger, r.cluster, r.job_id, r.evidence)
            acts.append((r.cluster, r.job_id, r.name, {**base, **extra, "kind": ActKind.REJECT, "by": by}))
            release.append(item)
    if acts or release:
        record_acts(ledger_dir(sweep_yaml), acts, release=release)


def announce(sweep_yaml: str, context: dict[str, Any], decisions: list[CancelDecision],
             results: dict[str, dict[str, str]], dry_run: bool) -> list[str]:  # fmt: skip
    """Tell the sweep's channels of each standing-permission act (channels that hear hand-offs) and
    each RECURRING escalation (channels that hear critical), once per act (the ledger's told-once
    record; a re-run sends nothing again). A dry run announces nothing. Returns what was sent."""
    if dry_run:
        return []
    found = notices([d.to_dict() for d in decisions], results, run_id=_run_id(context), links=_links(context))
    return _tell(sweep_yaml, context, found)


def _links(context: dict[str, Any]) -> list[tuple[str, str]]:
    dag_id = getattr(context.get("dag_run"), "dag_id", DagId.CANCEL)
    return [("sweep_cancel run", f"{_base_url()}/dags/{quote(str(dag_id))}/runs/{quote(_run_id(context), safe='')}")]


def _tell(sweep_yaml: str, context: dict[str, Any], found: list[Notice]) -> list[str]:
    from sweep_operators.notify_tasks import tell_once

    return tell_once(load_sweep_config(sweep_yaml), context, found)


def _base_url() -> str:
    from airflow.configuration import conf

    return (conf.get("api", "base_url", fallback="") or "http://localhost:8080").rstrip("/")
