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
from sweep_core.handoffs.cancel.relaunch import SaveEvidence, relaunch_jobs
from sweep_core.handoffs.cancel.remember import LedgerAct, outcome_acts
from sweep_core.handoffs.cancel.usecase import scancel_approved
from sweep_core.handoffs.ports import LoadCluster, RunScript, Say
from sweep_core.ledger.entries import Ledger

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CancelPorts:
    """The I/O an act run needs (wired by the Airflow side)."""

    load: LoadCluster
    run_script: RunScript
    stop_iris: IrisStop | None
    run_local: RunLocal | None
    say: Say
    save: Callable[[dict[str, dict[str, Any]]], SaveEvidence]  # offers by job id -> the SaveEvidence
    read_ledger: Callable[[], Ledger]
    record: Callable[[list[LedgerAct], list[dict[str, str]]], None]  # acts, released jobs -> the ledger
    step_patterns: Any = ()


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
                             save=io.save({d.request.job_id: d.offer for d in rel}), step_patterns=io.step_patterns,
                             ledger=io.read_ledger())  # fmt: skip
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
    run_id: str,
    now: Callable[[], str],
    by: str = "",
) -> Outcomes:
    """cluster -> job id -> outcome, one cluster at a time (the module doc); ``by``: who approved
    (a standing act says so); ``now``: the ISO time each cluster's acts are recorded at."""
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
            acts, release = outcome_acts(mine, got, run_id, now(), by)
            if acts or release:
                io.record(acts, release)
    return results
