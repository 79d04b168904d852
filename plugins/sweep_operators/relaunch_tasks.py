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

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.cancel.iris_relaunch import relaunch_iris
from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.handoffs.cancel.relaunch import (
    assess,
    evidence_act,
    evidence_text,
    read_all_evidence,
    relaunch_jobs,
)
from sweep_core.handoffs.cancel.relaunch_remote import Evidence, relaunched_as
from sweep_core.handoffs.cancel.usecase import scancel_approved
from sweep_core.handoffs.ports import LoadCluster
from sweep_core.ledger.acts import ActKind, link_acts, read_ledger, record_acts
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
    decisions: list[CancelDecision], ccfg: CancelConfig, load: LoadCluster, limits: Any, sweep_yaml: str, run_id: str
) -> None:
    """Evidence of every RUNNING SLURM job validated for cancel (one session per cluster), then the
    policy per job (in place)."""
    cfg = load_sweep_config(sweep_yaml)
    jobs, iris = [], {}
    for d in decisions:
        if d.verdict != "cancel" or d.state != "RUNNING":
            continue
        ops = load(d.request.cluster)
        if ops.scheduler == "slurm":
            jobs.append((d.request.cluster, d.request.job_id, d.request.name))
        elif ops.scheduler == "iris":
            iris[d.request.cluster] = ops
    ev = read_all_evidence(jobs, load, ssh_runner(limits, log), ccfg.relaunch.evidence_tail_bytes, cfg.metrics.rl.step)
    assess(decisions, ev, read_ledger(ledger_dir(sweep_yaml)), ccfg, now=_now(), run_id=run_id, iris=iris)


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
) -> dict[str, dict[str, str]]:
    """Relaunch the decisions whose offer allows it (when ``relaunch``), scancel the others."""
    rel = [d for d in decisions if relaunch and d.offer.get("relaunch")]
    rest = [d for d in decisions if d not in rel]
    run = ssh_runner(limits, log)
    results: dict[str, dict[str, str]] = {}
    for cluster in sorted({d.request.cluster for d in rel}):
        cfg = load(cluster)
        if cfg.scheduler != "iris":
            continue
        mine = [d for d in rel if d.request.cluster == cluster]
        rel = [d for d in rel if d not in mine]
        results[cluster] = relaunch_iris(cfg, mine, confirm_timeout_s=ccfg.confirm_timeout_s,
                                         command_timeout_s=ccfg.relaunch.command_timeout_s, dry_run=dry_run,
                                         stop_iris=iris_stopper(), run_local=local_runner(log), say=print)  # fmt: skip
    if rel:
        offers = {d.request.job_id: d.offer for d in rel}
        steps = load_sweep_config(sweep_yaml).metrics.rl.step
        got = relaunch_jobs(
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
        for c, per in got.items():
            results.setdefault(c, {}).update(per)
    if rest:
        got = scancel_approved(
            rest,
            confirm_timeout_s=ccfg.confirm_timeout_s,
            dry_run=dry_run,
            load_cluster=load,
            run_script=run,
            say=print,
            stop_iris=iris_stopper(),
        )
        for c, per in got.items():
            results.setdefault(c, {}).update(per)
    return results


def remember(
    sweep_yaml: str,
    context: dict[str, Any],
    decisions: list[CancelDecision],
    done: dict[str, dict[str, str]],
    answers: dict[str, dict[str, Any]],
    standing: dict[str, dict[str, str]],
    dry_run: bool,
) -> None:
    """What the ledger keeps of this run: relaunches and cancels done, a Reject (asked again when the
    evidence grows), an unanswered request (asked again next sweep), an escalation. A relaunched,
    rejected or unanswered job's cancel hand-off is released so the next sweep may hand it again.
    ``answers``: job key ("cluster|job_id") -> that job's own answer."""
    if dry_run:
        return
    run_id, at = _run_id(context), _now().isoformat()
    acts, release = [], []
    for d in decisions:
        if d.verdict != "cancel":
            continue
        r = d.request
        answer = answers.get(f"{r.cluster}|{r.job_id}") or {}
        chosen = (answer.get("chosen_options") or [""])[0]
        item = {"cluster": r.cluster, "job_id": r.job_id, "name": r.name}
        ev = d.evidence or {}
        base = {"run": run_id, "at": at, "step": str(ev.get("step") if ev.get("step") is not None else ""),
                "silent_s": str(ev["remote_now"] - ev["last_output"]) if ev.get("last_output") and ev.get("remote_now") else "",
                "series": str(d.offer.get("series", ""))}  # fmt: skip
        res = {**done.get(r.cluster, {}), **standing.get(r.cluster, {})}.get(r.job_id, "")
        if d.offer.get("recurring"):
            acts.append((r.cluster, r.job_id, r.name, {**base, "kind": ActKind.ESCALATED, "why": d.offer["why"]}))
        by = "standing permission" if d.offer.get("standing") else str(answer.get("responded_by") or "")
        if res.startswith("requeued") or res.startswith("cancelled and relaunched"):
            new_id = relaunched_as(res)
            act_ = {**base, "kind": ActKind.RELAUNCH, "by": by, "result": res, "new_job_id": new_id or None}
            acts.append((r.cluster, r.job_id, r.name, act_))
            if (
                new_id and new_id != r.job_id
            ):  # an ops.md relaunch command: the next sweep knows the new id as the same run
                acts += link_acts(r.cluster, r.job_id, new_id, r.name, base)
            release.append(item)
        elif res.startswith(("cancelled", "stopped")):
            acts.append((r.cluster, r.job_id, r.name, {**base, "kind": ActKind.CANCEL, "by": by, "result": res}))
        elif d.offer.get("standing"):
            continue
        elif answer.get("timed_out") or answer.get("refused") or not answer:
            acts.append((r.cluster, r.job_id, r.name, {**base, "kind": ActKind.UNANSWERED}))
            release.append(item)
        elif chosen == "Reject":
            acts.append((r.cluster, r.job_id, r.name, {**base, "kind": ActKind.REJECT, "by": by}))
            release.append(item)
    if acts or release:
        record_acts(ledger_dir(sweep_yaml), acts, release=release)


def announce(sweep_yaml: str, context: dict[str, Any], decisions: list[CancelDecision],
             results: dict[str, dict[str, str]], dry_run: bool) -> list[str]:  # fmt: skip
    """Tell the sweep's channels of each standing-permission act (channels that hear hand-offs) and
    each RECURRING escalation (channels that hear critical), once per act (the ledger's told-once
    record; a re-run sends nothing again). A dry run announces nothing. Returns what was sent."""
    config = load_sweep_config(sweep_yaml)
    if dry_run or not config.notify.channels:
        return []
    from sweep_core.alerts.acts_notice import ESCALATED, notices
    from sweep_core.ledger.told import mark_told, told_before
    from sweep_operators.notify_tasks import send

    base = _base_url()
    dag_id = getattr(context.get("dag_run"), "dag_id", DagId.CANCEL)
    links = [("sweep_cancel run", f"{base}/dags/{quote(str(dag_id))}/runs/{quote(_run_id(context), safe='')}")]
    told, log_dir = [], ledger_dir(sweep_yaml)
    for n in notices([d.to_dict() for d in decisions], results, run_id=_run_id(context), links=links):
        for ch in config.notify.channels:
            hears = "critical" in ch.severities if n.kind == ESCALATED else ch.handoffs
            if not hears or told_before(log_dir, n.key, ch.name, n.message.identity()):
                continue
            try:
                send(ch, n.message, context)
                mark_told(log_dir, n.key, ch.name, n.message.identity())
                told.append(f"{ch.name}: {n.message.title}")
                log.info("announced to %s (%s): %s", ch.name, ch.kind, n.message.title)
            except Exception as exc:  # one channel down does not silence the others, nor fail the record
                log.error("announcement to %s failed: %s (%s)", ch.name, exc, n.message.title)
    return told


def _base_url() -> str:
    from airflow.configuration import conf

    return (conf.get("api", "base_url", fallback="") or "http://localhost:8080").rstrip("/")
