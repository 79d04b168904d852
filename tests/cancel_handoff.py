"""A sweep's cancel hand-off as the sweep itself records it, for tests that run sweep_cancel with
dag.test(): the flags go through the sweep's own plan_handoffs and give_once into the ledger (the
flag line kept as the hand-off's evidence) and into the Parquet history, then sweep_cancel runs as
the hand-off run that sweep triggers (``<sweep run>__cancel``). Without this a dag.test() request is
a by-hand request (always asked, never a standing permission)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from sweep_core.handoffs.dispatch.triggers import plan_handoffs
from sweep_core.history.rows import sweep_frame
from sweep_core.history.store import HistoryStore
from sweep_core.ledger.cancel_handoff import HandoffRun
from sweep_core.ledger.runs import give_once
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job

DAG_TEST_USER = "dag_test"  # the triggering user dag.test() gives every run it makes (airflow.sdk DAG.test)


def hand_off(run_log_dir: Path, jobs: list[dict[str, Any]], *, sweep_run: str = "", rule: str = "liveness_stale",
             message: str = "no output for 185 min (cadence 30 min)", user: str = DAG_TEST_USER,
             history: Path | None = None) -> tuple[str, list[dict[str, Any]]]:  # fmt: skip
    """(the sweep_cancel run id the sweep would trigger, its conf jobs) for ``jobs`` ({cluster,
    job_id, name, action}, optionally their own rule and message) flagged ``[rule] message`` by the
    sweep ``sweep_run``, recorded in ``run_log_dir`` (its history there, or in ``history``); the
    sweep_cancel run it triggers runs as ``user`` ("" = a scheduled sweep's)."""
    now = dt.datetime.now(dt.UTC)
    sweep_run = sweep_run or f"manual__{now.isoformat()}"
    flags = [Flag(rule=j.get("rule") or rule, severity="critical", cluster=j["cluster"], job_id=j["job_id"],
                  job_name=j["name"], bucket="RL", message=j.get("message") or message, action=j["action"])
             for j in jobs]  # fmt: skip
    clusters = sorted({j["cluster"] for j in jobs})
    snaps = [
        ClusterSnapshot(
            c,
            "slurm",
            ClusterStatus.OK,
            finished=[],
            pending=[],
            running=[
                Job(c, j["job_id"], j["name"], "RUNNING", "squeue", bucket="RL") for j in jobs if j["cluster"] == c
            ],
        )  # fmt: skip
        for c in clusters
    ]
    confs = plan_handoffs(snaps, flags, dry_run=False, run_log="", trackers=False, hf_chain=False)
    cancel_run = HandoffRun(f"{sweep_run}__cancel", user)  # by default the run dag.test() then makes
    confs, _ = give_once(run_log_dir, confs, run_id=sweep_run, dry_run=False, cancel_run=cancel_run)
    frame = sweep_frame(snaps, flags, run_id=sweep_run, window_start=now - dt.timedelta(hours=1), window_end=now)
    HistoryStore(history or run_log_dir / "history").append(frame, run_id=sweep_run, window_end=now)
    return cancel_run.run_id, list((confs.get("cancel") or {}).get("jobs") or [])
