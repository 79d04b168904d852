"""The DAG ids and task ids of the package's DAGs, named once: the DAG files build their tasks with
them and the task callables pull XCom by them. The core names the hand-offs
(sweep_core.handoffs.dispatch.triggers.Handoff); which DAG and trigger task each one is lives here.
"""

from __future__ import annotations

from typing import Final

from sweep_core.handoffs.dispatch.triggers import Handoff


class DagId:
    """The nine DAGs of the package."""

    SWEEP: Final = "monitor_cron_sweep"
    WATCH: Final = "monitor_cron_watch"  # the light sweep every few minutes (sweep_core.timing.cadence)
    CLEANUP, CANCEL, HF_CHAIN, HARVEST = "sweep_cleanup", "sweep_cancel", "sweep_hf_chain", "sweep_tracker_harvest"
    DEEP_DIVE: Final = "sweep_rl_deep_dive"
    SNAPSHOTS: Final = "sweep_snapshots"  # Daytona at its HARD cap: STALE snapshots deleted once approved
    HYGIENE: Final = "sweep_hygiene"  # a cluster clone's triage: local-clone commit, ff pull once approved


class Sweep:
    """monitor_cron_sweep: a group per cluster (``<cluster>.step0`` -> ``.gather``), the fan-in
    (``bucket``: bucket, liveness, metrics, rules; ``render``: tables, run log, note), the hand-offs."""

    STEP0, GATHER = "step0", "gather"
    BUCKET, RENDER, VERDICT = "bucket", "render", "verdict"
    HANDOFFS, HANDOFF_BRANCH, NO_HANDOFF = "handoffs", "handoff_branch", "no_handoff"
    HISTORY, NOTIFY = "history", "notify"  # the sweep's rows into the Parquet history; the digests
    FOLD: Final = "fold"  # the watch's stand-in for render: the ledger fold only (no tables, no run log)

    @staticmethod
    def gather(cluster: str) -> str:
        """The gather task of one cluster's group (its XCom is absent when step0 skipped it)."""
        return f"{cluster}.{Sweep.GATHER}"


# hand-off -> (the trigger task in monitor_cron_sweep, the DAG it triggers); run id <sweep run id>__<hand-off>
HANDOFF_TRIGGERS: Final[dict[Handoff, tuple[str, str]]] = {
    Handoff.CLEANUP: ("trigger_cleanup", DagId.CLEANUP),
    Handoff.CANCEL: ("trigger_cancel", DagId.CANCEL),
    Handoff.HF_CHAIN: ("trigger_hf_chain", DagId.HF_CHAIN),
    Handoff.HARVEST: ("trigger_tracker_harvest", DagId.HARVEST),
    Handoff.DEEP_DIVE: ("trigger_deep_dive", DagId.DEEP_DIVE),
    Handoff.SNAPSHOTS: ("trigger_snapshots", DagId.SNAPSHOTS),
    Handoff.HYGIENE: ("trigger_hygiene", DagId.HYGIENE),
}


def trigger_run_id(sweep_run_id: str, handoff: Handoff, batch: int = 1) -> str:
    """The hand-off run a sweep triggers: ``<sweep run id>__<hand-off>``; a re-run of the sweep that
    found jobs its first hand-off run does not hold triggers ``…__<hand-off>__<batch>`` for them."""
    base = f"{sweep_run_id}__{handoff.value}"
    return base if batch == 1 else f"{base}__{batch}"


def branch_choice(with_work: list[Handoff]) -> list[str]:
    """The trigger task ids handoff_branch follows; none = the ``no_handoff`` task."""
    return [HANDOFF_TRIGGERS[h][0] for h in with_work] or [Sweep.NO_HANDOFF]


class Cleanup:
    """sweep_cleanup: consolidate -> plan -> (upload | register | delete -> verify) -> record."""

    CONSOLIDATE, PLAN, DELETE, VERIFY, RECORD = "consolidate", "plan", "delete", "verify", "record"
    UPLOAD, REGISTER = "upload", "db_register"


class Snapshots:
    """sweep_snapshots: validate (a fresh list) -> approve (a human picks the names) -> delete -> record."""

    # validate: the same task id as sweep_cancel's (the ApprovalNotifier reads its XCom "cluster")
    VALIDATE, APPROVE, DELETE, RECORD = "validate", "approve", "delete", "record"
    ANSWER_KEY: Final = "answer"
    NONE: Final = "Delete none"  # the default: no answer in time deletes nothing


class Hygiene:
    """sweep_hygiene: validate (read, local-clone commit, pull offer) -> approve (a human) -> pull -> record."""

    # validate: the same task id as sweep_cancel's (the ApprovalNotifier reads its XCom "clusters")
    VALIDATE, APPROVE, PULL, RECORD = "validate", "approve", "pull", "record"
    ANSWER_KEY: Final = "answer"
    NONE: Final = "Do not pull"  # the default: no answer in time pulls nothing

    @staticmethod
    def option(cluster: str) -> str:
        """The approval option that pulls on ``cluster``."""
        return f"Pull (fast-forward) on {cluster}"


class Cancel:
    """sweep_cancel: validate -> standing (no human) | to_ask -> approve (a human, one task per job)
    -> scancel -> record."""

    VALIDATE, STANDING, APPROVE, SCANCEL, RECORD = "validate", "standing", "approve", "scancel", "record"
    TO_ASK: Final = "to_ask"  # the jobs approve is mapped over
    ANSWER_KEY: Final = "answer"  # the approval task's XCom with the human's answer


class Chain:
    """sweep_hf_chain: advance -> record."""

    ADVANCE, RECORD = "advance", "record"


class Harvest:
    """sweep_tracker_harvest: harvest -> record."""

    HARVEST, RECORD = "harvest", "record"


class DeepDive:
    """sweep_rl_deep_dive: probe -> verdict -> kill_branch -> trigger_cancel | no_kill; record."""

    PROBE, VERDICT, BRANCH, TRIGGER_CANCEL, NO_KILL, RECORD = (
        "probe",
        "verdict",
        "kill_branch",
        "trigger_cancel",
        "no_kill",
        "record",
    )
