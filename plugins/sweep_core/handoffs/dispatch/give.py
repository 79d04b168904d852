"""The hand-offs one sweep gives (pure over the ledger file): the conf of each hand-off with work
(handoffs.dispatch.triggers), without the jobs another run already handed off (ledger.runs.give_once), with
the cleanup backlog's entries this sweep finds unblocked (handoffs.cleanup.rejudge), and the cleanup
hand-off kept on while an upload, salvage or consolidation is in flight: the ledger is folded once
into the cleanup's view (handoffs.dispatch.views) that all three read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweep_core.config.sweep import SweepConfig
from sweep_core.handoffs.cleanup.rejudge import give_backlog
from sweep_core.handoffs.cleanup.undecided import ReadLaunch
from sweep_core.handoffs.dispatch.keep_tracking import keep_tracking
from sweep_core.handoffs.dispatch.triggers import Handoff, plan_handoffs
from sweep_core.handoffs.dispatch.views import read_cleanup_view
from sweep_core.handoffs.ports import HubCheck
from sweep_core.handoffs.upload.salvage import follow_open
from sweep_core.ledger.cancel_handoff import HandoffRun
from sweep_core.ledger.runs import give_once
from sweep_core.records.models import ClusterSnapshot, Flag

Confs = dict[str, dict[str, Any] | None]


def give_handoffs(
    snaps: list[ClusterSnapshot],
    flags: list[Flag],
    config: SweepConfig,
    log_dir: str | Path,
    *,
    run_id: str,
    run_log: str,
    dry_run: bool,
    handed: dict[str, bool],
    kinds: list[str] | None = None,
    hub_check: HubCheck | None = None,
    read_launch: ReadLaunch | None = None,
    cancel_run: HandoffRun | None = None,
) -> tuple[Confs, list[str], list[str], list[str]]:
    """(conf per hand-off, one note per job already handed off, the consolidations cleanup keeps
    tracking, what re-judging the cleanup backlog found). ``kinds``: only these hand-offs (a watch
    run gives the act hand-offs only); ``handed[kind]``: this run's hand-off run of that kind exists
    already (ledger.runs.give_once); ``hub_check``: the hub the backlog is judged against (None: not judged);
    ``read_launch``: reads the launch YAMLs of its undecided SFT completions again (None: they wait);
    ``cancel_run``: the sweep_cancel run this run triggers (ledger.runs.give_once)."""
    from sweep_core.handoffs.harvest.plan import tracker_settings  # at run time: the DAG file parses without it

    # every sweep while a series is set, or while found series are uploaded (their cells live in the chain's state)
    hf_chain = bool(config.hf_chain.found.upload) or any(
        not s.unset() and not s.db_registration for s in config.hf_chain.series
    )
    trackers = tracker_settings(config.trackers) is not None
    confs = plan_handoffs(snaps, flags, dry_run=dry_run, run_log=run_log, trackers=trackers, hf_chain=hf_chain)
    if kinds is not None:
        confs = {k: (c if k in kinds else None) for k, c in confs.items()}
    confs, given = give_once(log_dir, confs, run_id=run_id, dry_run=dry_run, handed=handed, cancel_run=cancel_run)
    # cleanup follows uploads, salvages and consolidations in flight (the report sweep's: not a watch's)
    follow = not handed.get(Handoff.CLEANUP.value) and (kinds is None or Handoff.CLEANUP.value in kinds)
    tracking: list[str] = []
    backlog: list[str] = []
    if not follow:
        return confs, given, tracking, backlog
    view = read_cleanup_view(log_dir)  # once, its jobs' rows alone: the acts it reads are not changed below
    if hub_check is not None:
        confs, backlog = give_backlog(
            confs,
            snaps,
            config,
            log_dir,
            hub_check,
            view=view,
            run_id=run_id,
            run_log=run_log,
            dry_run=dry_run,
            flags=flags,
            read_launch=read_launch,
        )
        if kinds is not None:  # a backlog entry told HF-only goes to the chain: only where this run gives it
            confs = {k: (c if k in kinds else None) for k, c in confs.items()}
    confs = follow_open(confs, view, dry_run=dry_run, run_log=run_log)
    if config.consolidate.flavors:
        confs, tracking = keep_tracking(confs, snaps, view, dry_run=dry_run, run_log=run_log)
    return confs, given, tracking, backlog
