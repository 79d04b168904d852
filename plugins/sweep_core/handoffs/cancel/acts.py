"""sweep_cancel's acts as one use-case (pure; I/O in ``CancelPorts``): per cluster, the decisions
whose offer allows a relaunch are relaunched (iris: stop + the ops.md command; SLURM: fresh evidence,
judged again, saved, then requeue), the others cancelled; each cluster's acts reach the ledger
before the next cluster is touched, and an error on one cluster leaves the others' outcomes (and its
own jobs' "outcome unknown") recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.handoffs.cancel.iris import IrisStop
from sweep_core.handoffs.cancel.iris_relaunch import RunLocal, relaunch_iris
from sweep_core.handoffs.cancel.outcome import ActOutcome, Did, Outcomes
from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.handoffs.cancel.relaunch import SaveEvidence, evidence_act, evidence_text, relaunch_jobs
from sweep_core.handoffs.cancel.relaunch_remote import Evidence
from sweep_core.handoffs.cancel.remember import outcome_acts
from sweep_core.handoffs.cancel.usecase import scancel_approved
from sweep_core.handoffs.ports import LoadCluster, RunScript, Say
from sweep_core.ledger.acts import read_ledger, record_acts

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CancelPorts:
    """The I/O an act run needs (wired by the Airflow side); the ledger is the file in ``log_dir``."""

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


def saver(io: CancelPorts, offers: dict[str, dict[str, Any]]) -> SaveEvidence:
    """The wedge's evidence, saved BEFORE the requeue (it truncates the log): the ledger act, then
    the run log's "evidence" section."""

    def save(cluster: str, evs: list[Evidence]) -> None:
        at = io.now()
        found = [
            (cluster, ev.job_id, ev.name, evidence_act(ev, io.run_id, at, offers.get(ev.job_id, {}))) for ev in evs
        ]
        record_acts(io.log_dir, found)
        text = "".join(evidence_text(cluster, ev) for ev in evs)
        io.note("evidence", text)
        log.info("wedge evidence saved before the relaunch:\n%s", text)

    return save


def act_on_cluster(
    cluster: str, mine: list[CancelDecision], relaunch: bool, ccfg: CancelConfig, io: CancelPorts, dry_run: bool
) -> dict[str, ActOutcome]:
    """One cluster's relaunches (those whose offer allows it, when ``relaunch``) and cancels."""
    rel = [d for d in mine if relaunch and d.offer.get("relaunch")]
    rest = [d for d in mine if d not in rel]
    got: dict[str, ActOutcome] = {}
    cfg = io.load(cluster)
    if rel and cfg.scheduler == "iris":
        got.update(relaunch_iris(cfg, rel, confirm_timeout_s=ccfg.confirm_timeout_s,
                                 command_timeout_s=ccfg.relaunch.command_timeout_s, dry_run=dry_run,
                                 stop_iris=io.stop_iris, run_local=io.run_local, say=io.say))  # fmt: skip
    elif rel:
        done = relaunch_jobs(rel, ccfg, dry_run=dry_run, load_cluster=io.load, run_script=io.run_script, say=io.say,
                             save=saver(io, {d.request.job_id: d.offer for d in rel}), step_patterns=io.step_patterns,
                             ledger=read_ledger(io.log_dir))  # fmt: skip
        got.update(done.get(cluster, {}))
    if rest:
        done = scancel_approved(rest, confirm_timeout_s=ccfg.confirm_timeout_s, dry_run=dry_run, load_cluster=io.load,
                                run_script=io.run_script, say=io.say, stop_iris=io.stop_iris,
                                step_patterns=io.step_patterns, tail_bytes=ccfg.relaunch.evidence_tail_bytes)  # fmt: skip
        got.update(done.get(cluster, {}))
    return got


def act(
    decisions: list[CancelDecision],
    relaunch: bool,
    ccfg: CancelConfig,
    io: CancelPorts,
    *,
    dry_run: bool,
    by: str = "",
) -> Outcomes:
    """cluster -> job id -> outcome, one cluster at a time (the module doc); ``by``: who approved
    (a standing act says so)."""
    results: Outcomes = {}
    for cluster in sorted({d.request.cluster for d in decisions}):
        mine = [d for d in decisions if d.request.cluster == cluster]
        got = results.setdefault(cluster, {})
        try:
            got.update(act_on_cluster(cluster, mine, relaunch, ccfg, io, dry_run))
        except Exception as exc:  # the next cluster is still acted on; this one's outcome is not known
            log.exception("sweep_cancel on %s failed", cluster)
            lost = ActOutcome(Did.ERROR, f"outcome unknown: {type(exc).__name__}: {str(exc)[:200]}")
            got.update({d.request.job_id: lost for d in mine if d.request.job_id not in got})
        if not dry_run:
            acts, release = outcome_acts(mine, got, io.run_id, io.now(), by)
            if acts or release:
                record_acts(io.log_dir, acts, release=release)
    return results
