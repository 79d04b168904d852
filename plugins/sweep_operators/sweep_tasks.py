"""Task callables of the monitor_cron_sweep DAG: Airflow context in, sweep_core calls, XCom out.
The fan-in is two tasks, ``bucket`` and ``render``; no log tail reaches them, only what each gather
task made of its own (sweep_core.fanin.digest)."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from sweep_core.config.ops import ClusterConfig, OpsConfigError, load_cluster
from sweep_core.config.sweep import SweepConfig, load_sweep_config
from sweep_core.fanin.render import RenderedSweep
from sweep_core.fanin.report import (
    is_run_of,
    keep_sections,
    render_run_log,
    report_text,
    run_log_name,
    run_note,
    upsert_section,
)
from sweep_core.fanin.run_logs import RunLogStore
from sweep_core.handoffs.dispatch.give import give_handoffs
from sweep_core.handoffs.dispatch.triggers import Handoff, with_work
from sweep_core.history.rules_history import load_rules_history
from sweep_core.ledger.cancel_handoff import HandoffRun
from sweep_core.ledger.hold import CONFIRM_PARAM
from sweep_core.ledger.runs import PER_JOB, RunChanges, sweep_changes
from sweep_core.ledger.store import ledger_for_run
from sweep_core.pipeline.steps import (
    Laps,
    SweepResult,
    bucket_stages,
    cadence_table,
    group_by_bucket,
    missing_snapshot,
    render_step,
    return_check,
    skip_snapshot,
)
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag
from sweep_core.safe.text import clean, md_text
from sweep_operators.handoff_io import hub_check
from sweep_operators.handoff_record import run_log_dir, run_log_store
from sweep_operators.history_location import history_store
from sweep_operators.identity import requester
from sweep_operators.run_note import paused_dags, set_dag_run_note
from sweep_operators.task_ids import HANDOFF_TRIGGERS, DagId, Sweep, branch_choice, trigger_run_id
from sweep_operators.window import run_id_of, sweep_window

log = logging.getLogger(__name__)


def _selected(context: dict[str, Any]) -> list[str]:
    return list(context["params"].get("clusters") or [])


def _window(context: dict[str, Any]) -> tuple[dt.datetime, dt.datetime]:
    return sweep_window(context, context["params"].get("lookback_hours"))


def step0(cluster: str, ops_dir: str, parsed_scheduler: str, **context: Any) -> dict[str, Any]:
    """STEP 0: read ops.md at run time; skip/drop short-circuit with the reason shown."""
    try:
        cfg = load_cluster(ops_dir, cluster)
    except OpsConfigError as exc:
        raise AirflowFailException(str(exc)) from exc
    if cfg.scheduler != parsed_scheduler:
        raise AirflowFailException(
            f"{cfg.path}: field 'scheduler' is {cfg.scheduler!r} but the DAG was parsed with "
            f"{parsed_scheduler!r}; wait for the scheduler to re-parse the DAG file"
        )
    _, end = _window(context)
    skip = skip_snapshot(cfg, end.date(), _selected(context))
    if skip is not None:
        raise AirflowSkipException(skip.notes[0])
    log.info("ops.md for %s (%s), read this sweep:\n%s", cluster, cfg.path, cfg.body.strip())
    return {"cluster": cfg.name, "scheduler": cfg.scheduler, "path": cfg.path}


def _ops(snaps: list[ClusterSnapshot], ops_dir: str) -> dict[str, ClusterConfig | None]:
    """Each snapshot's ops.md, read once (None when it does not load: step0 said why)."""
    found: dict[str, ClusterConfig | None] = {}
    for s in snaps:
        try:
            found[s.cluster] = load_cluster(ops_dir, s.cluster)
        except OpsConfigError:
            found[s.cluster] = None
    return found


def _cadences(config: SweepConfig, ops: dict[str, ClusterConfig | None]) -> dict[str, dict[str, int]]:
    return cadence_table(config, {c: cfg.cadence_minutes if cfg else {} for c, cfg in ops.items()})


def bucket(clusters: list[str], ops_dir: str, sweep_yaml: str, watch: bool = False, **context: Any) -> dict[str, Any]:
    """Fan-in, first half: every cluster's snapshot (or why there is none), each job bucketed by
    name, liveness, every flag rule (``watch``: sweep.yaml ``watch.rules`` only) with earlier sweeps'
    history (the Parquet history's job rows) and the ledger. The gathers pushed metric columns,
    evidence and capped excerpts, not log tails (a snapshot that still has them is digested here);
    the task log tells each stage's wall time."""
    laps = Laps()
    config = load_sweep_config(sweep_yaml)
    _, end = _window(context)
    snaps = []
    for name in clusters:
        raw = context["ti"].xcom_pull(task_ids=Sweep.gather(name))  # absent when step0 skipped it
        if raw:
            snaps.append(ClusterSnapshot.from_dict(raw))
        else:
            snaps.append(missing_snapshot(ops_dir, name, end.date(), _selected(context)))
    ops = _ops(snaps, ops_dir)
    snaps = [return_check(ops[s.cluster], s, dt.datetime.now(dt.UTC)) for s in snaps]
    history_notes: list[str] = []  # corrupt history files, moved aside (warned in this log)
    history = load_rules_history(history_store(config), end, notes=history_notes)
    ends = end.astimezone(dt.UTC).isoformat()  # read-only (the render task folds), as this run's fold will see it
    history.ledger = ledger_for_run(run_log_dir(config), run_id_of(context), ends, history_notes)
    laps.lap("collect")
    caps = {c: cfg.rl_concurrency_cap if cfg else None for c, cfg in ops.items()}
    only = config.watch.rules if watch else None
    flags = bucket_stages(snaps, config, _cadences(config, ops), laps, caps, history, only)
    for f in flags:
        log.info("%s", clean(f.line()))
    log.info("fan-in stages: %s", laps)
    return {
        "snapshots": [s.to_dict() for s in snaps],
        "flags": [f.to_dict() for f in flags],
        "history_notes": history_notes,
    }


def _bucketed(context: dict[str, Any]) -> tuple[list[ClusterSnapshot], list[Flag], list[str]]:
    raw = context["ti"].xcom_pull(task_ids=Sweep.BUCKET) or {}
    snaps = [ClusterSnapshot.from_dict(d) for d in raw.get("snapshots", [])]
    return snaps, [Flag.from_dict(d) for d in raw.get("flags", [])], list(raw.get("history_notes") or [])


def render(ops_dir: str, sweep_yaml: str, template_dir: str, **context: Any) -> dict[str, Any]:
    """Fan-in, second half: the box tables (cluster overview + one per bucket), printed in the task
    log; the sweep folded into the ledger; the dated run log (opening with every change since the
    previous sweep the ledger tells); the DAG run note (the next sweep's rules read this one's rows
    from the Parquet history the ``history`` task appends). A re-run of the same run replaces its
    log. The task log tells each stage's wall time."""
    from sweep_core.admin.switches import off_lines
    from sweep_core.handoffs.harvest.plan import tracker_settings  # at run time: the DAG file parses without it

    laps, config = Laps(), load_sweep_config(sweep_yaml)
    snaps, flags, notes = _bucketed(context)
    laps.lap("collect")
    ops = _ops(snaps, ops_dir)
    off = off_lines(ops, config, tracker_settings(config.trackers), ops_dir, sweep_yaml)  # never a silent no-op
    result = render_step(snaps, config, _cadences(config, ops), off)
    result.flags = flags
    laps.lap("tables")
    result.changes = _changes(context, config, result.snapshots, notes, confirm=True).lines
    laps.lap("ledger")
    print(clean(report_text(result)))  # the task log carries the tables verbatim (no terminal escapes from a cluster)
    path = _write_run_log(context, config, result, template_dir)
    laps.lap("run log")
    set_dag_run_note(context, run_note(result, path))
    laps.lap("note")
    log.info("fan-in stages: %s", laps)
    return {
        "overview": result.rendered.overview,
        "tables": result.rendered.tables,
        "run_log": path,
        "off": off,
    }  # off: the first digest on record tells them (notify)


def _changes(
    context: dict[str, Any], config: SweepConfig, snaps: list[ClusterSnapshot], notes: list[str], confirm: bool
) -> RunChanges:
    """This run folded into the ledger (ledger.runs.sweep_changes); a hold is logged as an error."""
    _, end = _window(context)
    found = sweep_changes(
        run_log_dir(config),
        snaps,
        run_id=run_id_of(context),
        window_end=end,
        notes=notes,
        confirm=confirm and bool(context["params"].get(CONFIRM_PARAM)),
    )
    if found.held:
        log.error("%s", found.held)
    return found


def _write_run_log(context: dict[str, Any], config: SweepConfig, result: SweepResult, template_dir: str) -> str:
    """The dated run log of this run (a re-run replaces it and keeps its hand-offs' sections)."""
    start, end = _window(context)
    run_id = run_id_of(context)
    store = run_log_store(config)
    name = store.own(run_log_name(end, config.topic), is_run_of(run_id, start.isoformat(), end.isoformat()))
    dag_id = getattr(context.get("dag_run"), "dag_id", DagId.SWEEP)
    markdown = render_run_log(
        result, template_dir, dag_id=dag_id, run_id=run_id, window_start=start.isoformat(), window_end=end.isoformat()
    )
    path = store.update(name, lambda old: keep_sections(old, markdown, run_id))
    log.info("run log written: %s", path)
    return path


def fold(sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """The watch's stand-in for ``render``: this run folded into the shared ledger (job states,
    stall marks, progress counters, log cursors), its changes in the task log; no tables, no run
    log. A held ledger (after a recovery) is said here too: its acts wait as the report's do."""
    config = load_sweep_config(sweep_yaml)
    snaps, flags, notes = _bucketed(context)
    found = _changes(context, config, snaps, notes, confirm=False)
    print(clean("Changes since the previous sweep\n" + "\n".join(f"- {c}" for c in found.lines)))
    for f in flags:
        print(clean(f"flag: {f.line()}"))
    result = SweepResult(snaps, group_by_bucket(snaps, config), RenderedSweep("", {}), flags)
    set_dag_run_note(context, run_note(result, None))
    return {"changes": found.count, "flags": len(flags)}


def _result(context: dict[str, Any], config: SweepConfig) -> SweepResult:
    """The sweep as the DAG run note tells it (states, counts, flags: no tables, none pulled)."""
    snaps, flags, _ = _bucketed(context)
    return SweepResult(snaps, group_by_bucket(snaps, config), RenderedSweep("", {}), flags)


def verdict(**context: Any) -> None:
    """Fail the run (after the report is out) when a cluster has a configuration ERROR.

    UNREACHABLE/UNKNOWN clusters do not fail the run: they are this sweep's findings.
    """
    snaps, _, _ = _bucketed(context)
    errors = [f"{s.cluster}: {'; '.join(s.notes)}" for s in snaps if s.status == ClusterStatus.ERROR]
    if errors:
        raise AirflowFailException("configuration errors: " + " | ".join(errors))


def handoffs(sweep_yaml: str, kinds: list[str] | None = None, ops_dir: str = "", **context: Any) -> dict[str, Any]:
    """The conf of each hand-off DAG this sweep triggers (multiple_outputs: one XCom per hand-off;
    ``kinds``: only these hand-offs, the others None: a watch run gives the act hand-offs only).
    A job another run already handed off (per kind) is dropped with a note: in this log, in the run
    log's "Already handed off" section and in the DAG run note (sweep_core.handoffs.dispatch.give)."""
    config = load_sweep_config(sweep_yaml)
    snaps, flags, _ = _bucketed(context)
    run_log = str((context["ti"].xcom_pull(task_ids=Sweep.RENDER) or {}).get("run_log") or "")
    run_id = run_id_of(context)
    run_ids = {h: _free_trigger_run_id(context, run_id, h) for h in Handoff}
    handed = {h.value: rid != trigger_run_id(run_id, h) for h, rid in run_ids.items()}
    confs, given, tracking, backlog = give_handoffs(
        snaps,
        flags,
        config,
        run_log_dir(config),
        run_id=run_id,
        run_log=run_log,
        dry_run=bool(context["params"].get("dry_run", False)),
        handed=handed,
        kinds=kinds,
        hub_check=hub_check(),
        read_launch=_launch_reader(config, ops_dir),
        cancel_run=HandoffRun(run_ids[Handoff.CANCEL], requester(context)),
    )
    _tell_handoffs(context, config, run_log, run_id, (confs, given, tracking, backlog), report=kinds is None)
    return {**confs, **{f"{h.value}_run_id": rid for h, rid in run_ids.items()}}


def _tell_handoffs(
    context: Any, config: SweepConfig, run_log: str, run_id: str, given_out: tuple, report: bool
) -> None:
    """What give_handoffs decided, into the task log, the run log and the DAG run note."""
    confs, given, tracking, backlog = given_out
    for line in tracking:
        log.info("%s", line)
    if backlog:
        _tell_backlog(config, run_log, run_id, backlog)
    for name, conf in confs.items():
        log.info("hand-off %s: %s", name, "not triggered" if conf is None else conf)
    if given:
        _tell_given(context, config, run_log, run_id, given)
    _tell_paused(config, run_log, run_id, [HANDOFF_TRIGGERS[h][1] for h in with_work(confs)])
    if report and config.watch.schedule:  # the report sweep: is its 5-minute watch running?
        _tell_watch_paused(config, run_log, run_id)


def _launch_reader(config: SweepConfig, ops_dir: str) -> Any:
    """The cleanup backlog's launch-YAML reader: ops.md read now, one SSH session per cluster."""
    from sweep_core.handoffs.cleanup.undecided import launch_reader
    from sweep_operators.dag_common import config_paths
    from sweep_operators.handoff_io import ops_loader, ssh_runner

    return launch_reader(ops_loader(ops_dir or config_paths()[0]), ssh_runner(config.gather, log))


def _free_trigger_run_id(context: dict[str, Any], run_id: str, handoff: Handoff) -> str:
    """This sweep's first hand-off run id of ``handoff`` that no DAG run has yet (per-job hand-offs:
    a re-run's follow-up batch); the first one for the others (Airflow skips it when it exists)."""
    first = trigger_run_id(run_id, handoff)
    if handoff.value not in PER_JOB:
        return first
    count = getattr(context["ti"], "get_dr_count", None)  # the task runtime's; absent outside it
    if count is None:
        return first
    target = HANDOFF_TRIGGERS[handoff][1]
    batch = 1
    while count(dag_id=target, run_ids=[trigger_run_id(run_id, handoff, batch)]) > 0:
        batch += 1
    return trigger_run_id(run_id, handoff, batch)


def _own_run_log(config: Any, run_log: str) -> tuple[RunLogStore, str | None]:
    """The run-log store and the name of this sweep's run log in it (None: none written there)."""
    store = run_log_store(config)
    name = store.name_of(run_log) if run_log else None
    return store, (name if name and store.exists(name) else None)


def _tell_paused(config: Any, run_log: str, run_id: str, dag_ids: list[str]) -> None:
    """Say loudly which triggered hand-off DAG is paused (its run waits, queued, until a person
    unpauses it): a warning in this log and a section of the run log. Needs sweep_airflow_api."""
    paused = paused_dags(dag_ids) or []
    for dag_id in paused:
        log.warning("hand-off %s is PAUSED: the run this sweep triggers waits until someone unpauses it", dag_id)
    store, name = _own_run_log(config, run_log) if paused else (None, None)
    if store is not None and name:
        body = "## Hand-offs waiting: DAG paused\n\n" + "\n".join(
            f"- `{d}` is paused: the run this sweep triggered waits until someone unpauses it" for d in paused
        )
        store.update(name, lambda old: upsert_section(old, f"{DagId.SWEEP}:{run_id}:paused", body + "\n"))


def _tell_watch_paused(config: Any, run_log: str, run_id: str) -> None:
    """The report sweep runs but its watch (sweep.yaml watch.schedule) is paused: a person who
    unpaused only this DAG is told, in this log and the run log, that liveness is read every few
    hours instead of every few minutes. Needs sweep_airflow_api (unknown: nothing said)."""
    if not paused_dags([DagId.WATCH]):
        return
    line = (
        f"{DagId.WATCH} is PAUSED: the watch (every {config.watch.schedule!r}: liveness, collapse, cancels) "
        f"does not run; `airflow dags unpause {DagId.WATCH}` (or set sweep.yaml watch.schedule: null)"
    )
    log.warning("%s", line)
    store, name = _own_run_log(config, run_log)
    if name:
        body = f"## The watch is paused\n\n- {line}\n"
        store.update(name, lambda old: upsert_section(old, f"{DagId.SWEEP}:{run_id}:watch-paused", body))


def _tell_lines(config: Any, run_log: str, run_id: str, section: str, title: str, lines: list[str]) -> None:
    """``lines`` in this task's log and as the run log's section ``title`` (key ``section``)."""
    for line in lines:
        log.info("%s", clean(line))
    store, name = _own_run_log(config, run_log)
    if name:
        body = f"## {title}\n\n" + "\n".join(f"- {md_text(x)}" for x in lines)
        store.update(name, lambda old: upsert_section(old, f"{DagId.SWEEP}:{run_id}:{section}", body + "\n"))


def _tell_backlog(config: Any, run_log: str, run_id: str, lines: list[str]) -> None:
    """What re-judging the cleanup backlog found (handed off again, still blocked, not re-judged and why)."""
    _tell_lines(config, run_log, run_id, "backlog", "Cleanup backlog re-judged", lines)


def _tell_given(context: dict[str, Any], config: Any, run_log: str, run_id: str, given: list[str]) -> None:
    """The "already handed off" notes: task log, a section of the run log, the DAG run note."""
    _tell_lines(config, run_log, run_id, "given", "Already handed off (not handed off again)", given)
    note = run_note(_result(context, config), run_log or None)
    set_dag_run_note(context, note + f"\n\nAlready handed off: {len(given)} (see run log)")


def handoff_branch(**context: Any) -> list[str]:
    """Follow only the triggers whose hand-off has work this sweep."""
    confs = {h.value: context["ti"].xcom_pull(task_ids=Sweep.HANDOFFS, key=h.value) for h in Handoff}
    return branch_choice(with_work(confs))
