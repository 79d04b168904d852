"""Task callables of the sweep_cleanup DAG: plan, upload, delete, verify, record.

Airflow-facing wiring only: params and XCom in, ops.md, SSH and the hub client wired into the
use-cases (sweep_core.handoffs.cleanup.usecase for the plan and every guard, .execute for rm,
verify and the table), log lines out. Nothing is deleted unless ``plan`` said ``delete`` for that
path and ``dry_run`` is false.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.cleanup.backlog import BacklogUnreadable, forget, judge, update_backlog
from sweep_core.handoffs.cleanup.execute import (
    cleanup_record,
    confirmed_acts,
    rm_acts,
    rm_result,
    start_deletes,
    still_there,
    verify_removed,
)
from sweep_core.handoffs.cleanup.plan import from_section
from sweep_core.handoffs.cleanup.usecase import CleanupPlan, hub_acts, plan_cleanup
from sweep_core.handoffs.consolidate.usecase import consolidate_record, hold_of
from sweep_core.handoffs.db_register.usecase import RegisterReport, register_settings, run_registrations
from sweep_core.handoffs.dispatch.views import cleanup_view
from sweep_core.handoffs.upload.usecase import UploadReport, run_uploads, upload_settings
from sweep_core.ledger.acts import acts_of, read_ledger, record_acts
from sweep_core.timing.window import now_iso
from sweep_operators.handoff_io import hub_check, ops_loader, ssh_reader, ssh_runner
from sweep_operators.handoff_record import append_record, run_log_dir
from sweep_operators.task_ids import Cleanup, DagId
from sweep_operators.window import run_id_of

log = logging.getLogger(__name__)


def plan(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Probe each cluster once (read-only), check the hub, apply every guard; the plan as XCom.

    ``reclaim_clusters`` (INODE HEADROOM over the soft limit) adds the backlog of completed
    jobs on those clusters whose trees were never confirmed removed. Jobs with an upload or a
    salvage open in the ledger are planned too (their hub is checked again): the ledger is read
    once and folded into the plan's view (sweep_core.handoffs.dispatch.views). The config is loaded
    and validated once here; the plan is handed its typed parts and its ports (a read-only runner).
    Not a dry run: the hub checks whose answer changed, or that a delete stands on, are stored on
    their jobs (usecase.hub_acts)."""
    config = load_sweep_config(sweep_yaml)
    params = context["params"]
    consolidated = context["ti"].xcom_pull(task_ids=Cleanup.CONSOLIDATE) or {}
    log_dir = run_log_dir(config)
    probe = ssh_reader(config.gather, log)  # the plan only probes: an act is refused, never sent
    ledger, dry_run = read_ledger(log_dir), bool(params.get("dry_run", True))
    got = plan_cleanup(
        list(params.get("jobs") or []) + list(consolidated.get("replan") or []),
        list(params.get("reclaim_clusters") or []),
        dry_run=dry_run,
        ccfg=from_section(config.cleanup),
        run_log_dir=log_dir,
        load_cluster=ops_loader(ops_dir),
        run_script=probe,
        hub_check=hub_check(),
        view=cleanup_view(ledger),
        hold=hold_of(config.consolidate, consolidated),  # a consolidated array's trees wait for its release
    )
    if not dry_run and (
        checks := hub_acts(got.decisions, lambda c, j: acts_of(ledger, c, j), run=run_id_of(context), at=now_iso())
    ):
        record_acts(log_dir, checks)  # a dry run stores nothing, so it does not pick them either
    for d in got.decisions:
        log.info("%s %s %s: %s %s", d.action.upper(), d.target.cluster, d.target.job_id, d.paths, d.reasons)
    return got.to_dict()


def _plan(context: dict[str, Any]) -> CleanupPlan:
    return CleanupPlan.from_dict(context["ti"].xcom_pull(task_ids=Cleanup.PLAN))


def upload(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Follow the uploads (ONE sacct per cluster), submit those the hub lacks (once per attempt,
    recorded in the ledger), report failures with their traceback; dry_run: print only."""
    config = load_sweep_config(sweep_yaml)
    return _acts_step("upload", run_uploads, ops_dir, config, context, us=upload_settings(config.cleanup))


def register(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """The DB registration of every planned job whose flavor names a db_register argv, once the hub
    holds it and it is not an HF-only series (claimed in the ledger: once per attempt); dry_run: print only."""
    config = load_sweep_config(sweep_yaml)
    rs = register_settings(config)
    if not rs.flavors:
        raise AirflowSkipException("no cleanup flavor names a db_register command")
    return _acts_step("db_register", run_registrations, ops_dir, config, context, rs=rs)


def _acts_step(
    label: str, run: Callable[..., Any], ops_dir: str, config: Any, context: dict[str, Any], **settings: Any
) -> dict[str, Any]:
    """One use-case over the plan's decisions (upload, db_register) wired to this run: its acts
    recorded in the ledger, its rows logged, its report as XCom."""
    ledger_dir = run_log_dir(config)
    report = run(
        _plan(context).decisions,
        ccfg=from_section(config.cleanup),
        ledger_dir=ledger_dir,
        run_id=run_id_of(context),
        now=dt.datetime.now(dt.UTC).isoformat(),
        dry_run=bool(context["params"].get("dry_run", True)),
        load_cluster=ops_loader(ops_dir),
        run_script=ssh_runner(config.gather, log),
        say=print,
        **settings,
    )
    if report.acts:
        record_acts(ledger_dir, report.acts)
    for row in report.rows:
        log.info("%s %s", label, " | ".join(row))
    return dict(report.to_dict())


def delete(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Start the detached rm of every planned path (one SSH session per cluster); each rm's attempt
    (its kernel Result) is recorded on its job's ledger row and is this task's XCom; dry_run: print only."""
    todo = [d for d in _plan(context).decisions if d.action == "delete"]
    if context["params"].get("dry_run", True):
        for d in todo:
            print(f"DRY RUN: would delete on {d.target.cluster} for {d.target.job_id} {d.target.name}: {d.paths}")
        raise AirflowSkipException(f"dry_run: {len(todo)} job(s) would be cleaned, nothing deleted")
    if not todo:
        raise AirflowSkipException("nothing to delete")
    config = load_sweep_config(sweep_yaml)
    now = now_iso()
    started = start_deletes(todo, ops_loader(ops_dir), ssh_runner(config.gather, log), run_id_of(context), now)
    for results in started.values():
        for path, row in results.items():
            r = rm_result(row)
            log.info("rm %s: %s %s", path, r.outcome, r.reason or r.evidence)
    record_acts(run_log_dir(config), rm_acts(todo, started))
    return started


def verify(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Wait (bounded) until the deleted trees are gone, then read df -i / quota again: the reclaim.
    An rm whose outcome was unknown and whose tree is now gone is settled ok on its job's ledger row."""
    started = context["ti"].xcom_pull(task_ids=Cleanup.DELETE) or {}
    if not started:
        raise AirflowSkipException("nothing was deleted")
    config = load_sweep_config(sweep_yaml)
    ccfg, runner, planned = from_section(config.cleanup), ssh_runner(config.gather, log), _plan(context)
    report = verify_removed(started, planned.before, ccfg, ops_loader(ops_dir), runner)
    for cluster, v in report.items():
        n, left = len(v["removed"]) + len(v["left"]), len(v["left"])
        log.info("%s: removed %d, still there %d; %s", cluster, n - left, left, v)
    now = now_iso()
    todo = [d for d in planned.decisions if d.action == "delete"]
    if confirmed := confirmed_acts(todo, started, report, run_id_of(context), now):
        record_acts(run_log_dir(config), confirmed)  # an unknown rm verify saw gone: settled ok
    return report


def record(sweep_yaml: str, **context: Any) -> str:
    """Print the cleanup table and append it to the dated run log's actions section; the backlog
    loses the jobs whose trees are gone and keeps, for the others, why they are still there."""
    dry = bool(context["params"].get("dry_run", True))
    decisions = _plan(context).decisions
    started = context["ti"].xcom_pull(task_ids=Cleanup.DELETE) or {}
    verified = context["ti"].xcom_pull(task_ids=Cleanup.VERIFY) or {}
    text, finished = cleanup_record(decisions, started, verified, dry)
    reasons = still_there(decisions, started, verified, dry)
    consolidated = consolidate_record(context["ti"].xcom_pull(task_ids=Cleanup.CONSOLIDATE) or {})
    text = f"{consolidated}\n\n{text}" if consolidated else text
    uploads = UploadReport(rows=(context["ti"].xcom_pull(task_ids=Cleanup.UPLOAD) or {}).get("rows", []))
    if uploads.rows:
        text += "\n\nUploads (hub lacked the artifact, or a salvage):\n" + uploads.table()
    registered = RegisterReport(rows=(context["ti"].xcom_pull(task_ids=Cleanup.REGISTER) or {}).get("rows", []))
    if registered.rows:
        text += "\n\nDB registration (once the hub holds the upload; never an HF-only series):\n" + registered.table()
    print(text)
    notes = _plan(context).notes
    if notes:
        text = "\n".join(f"UNKNOWN: {n}" for n in notes) + "\n\n" + text
    if not dry:
        try:
            now = now_iso()
            update_backlog(
                run_log_dir(load_sweep_config(sweep_yaml)), lambda items: judge(forget(items, finished), reasons, now)
            )
        except BacklogUnreadable as exc:
            log.error("%s", exc)
            text += f"\n\nUNKNOWN: {exc}"
    return str(append_record(context, sweep_yaml, DagId.CLEANUP, text))
