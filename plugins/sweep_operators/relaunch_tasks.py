"""sweep_cancel's relaunch wiring: the evidence read and policy at validation, the standing-permission
task (acts without waiting, still re-checked right before), the relaunch of approved jobs, and what
the ledger remembers (evidence before a requeue, relaunches, a Reject, an unanswered request).
Airflow-facing only; the logic is sweep_core.handoffs.relaunch (usecase: judge, act; plan: the policy).
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any
from urllib.parse import quote

from sweep_core.alerts.acts_notice import Notice, breaker_notices, notices
from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.cancel.outcome import Outcomes
from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.handoffs.cancel.remember import remember_acts
from sweep_core.handoffs.ports import LoadCluster
from sweep_core.handoffs.relaunch import usecase
from sweep_core.handoffs.relaunch.brakes import Trip
from sweep_core.handoffs.relaunch.plan import jobs_of
from sweep_core.handoffs.relaunch.usecase import CancelPorts
from sweep_core.ledger.acts import record_acts
from sweep_core.ledger.view import read_view
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
    """handoffs.relaunch.usecase.judge wired to this run: the ledger folded once for the jobs, then
    the evidence, the policy and the brakes on it (in place); a circuit-breaker trip told (``brake``)."""
    ctx = context or {"run_id": run_id}
    view = read_view(ledger_dir(sweep_yaml), jobs_of(decisions))
    io = ports(limits, load, sweep_yaml, ctx)
    trips = usecase.judge(decisions, ccfg, io, view, running=running or {}, now=_now())
    brake(trips, sweep_yaml, ctx)


def brake(trips: dict[str, Trip], sweep_yaml: str, context: dict[str, Any]) -> list[str]:
    """A circuit-breaker trip (handoffs.relaunch.brakes) is logged critical, written to the run log and
    told once a day as ONE critical alert (not in a dry run). Returns what was told."""
    if not trips:
        return []
    text = "".join(f"{t.why}\n" for t in trips.values())
    log.critical("%s", text.rstrip())
    append_record(context, sweep_yaml, DagId.CANCEL, text, section="circuit breaker")
    if (context.get("params") or {}).get("dry_run", True):  # a dry run announces nothing
        return []
    return _tell(
        sweep_yaml, context, breaker_notices(trips.values(), day=_now().date().isoformat(), links=_links(context))
    )


def ports(limits: Any, load: LoadCluster, sweep_yaml: str, context: dict[str, Any]) -> CancelPorts:
    """The I/O of this run's acts: SSH, the iris client, the run log."""
    return CancelPorts(
        load=load,
        run_script=ssh_runner(limits, log),
        stop_iris=iris_stopper(),
        run_local=local_runner(log),
        say=print,
        note=lambda section, text: append_record(context, sweep_yaml, DagId.CANCEL, text, section=section),
        log_dir=ledger_dir(sweep_yaml),
        run_id=_run_id(context),
        now=lambda: _now().isoformat(),
        step_patterns=load_sweep_config(sweep_yaml).metrics.rl.step,
    )


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
) -> Outcomes:
    """handoffs.relaunch.usecase.act wired to this run, on the ledger folded once for the jobs as the
    act begins (``by``: who approved; a standing act says so)."""
    view = read_view(ledger_dir(sweep_yaml), jobs_of(decisions))
    io = ports(limits, load, sweep_yaml, context)
    return usecase.act(decisions, relaunch, ccfg, io, view, dry_run=dry_run, by=by)


def remember(
    sweep_yaml: str,
    context: dict[str, Any],
    decisions: list[CancelDecision],
    done: Outcomes,
    answers: dict[str, dict[str, Any]],
    standing: Outcomes,
    dry_run: bool,
) -> None:
    """What the ledger keeps of this run besides the acts ``act`` recorded
    (handoffs.cancel.remember); ``done``/``standing``: the approved / the standing acts' outcomes;
    ``answers``: job key -> that job's own answer."""
    if dry_run:
        return
    outcomes = {c: {**done.get(c, {}), **standing.get(c, {})} for c in {*done, *standing}}
    view = read_view(ledger_dir(sweep_yaml), jobs_of(decisions))
    found, release = remember_acts(decisions, outcomes, answers, view, _run_id(context), _now().isoformat())
    if found or release:
        record_acts(ledger_dir(sweep_yaml), found, release=release)


def announce(
    sweep_yaml: str, context: dict[str, Any], decisions: list[CancelDecision], results: Outcomes, dry_run: bool
) -> list[str]:
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
