"""CoreWeave (iris) liveness is the state poll (issue 41): a RUNNING iris job with its pods whose
log is quiet 200 min gets an investigate note with its age, never a kill request; the same silence
on a multi-node SLURM job still asks for one; the iris wedge (RUNNING, 0 pods) stays CRITICAL."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from sweep_core.config.sweep import load_sweep_config
from sweep_core.pipeline.steps import bucket_step, cadence_table, liveness_step, rules_step
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

ROOT = Path(__file__).resolve().parents[2]
NOW = dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC)


def _snap(cluster: str, scheduler: str, job: Job) -> ClusterSnapshot:
    running, finished = ([job], []) if job.state == "RUNNING" else ([], [job])
    return ClusterSnapshot(cluster, scheduler, ClusterStatus.OK, running=running, finished=finished, pending=[],
                           remote_now=NOW.timestamp(), window_start=(NOW - dt.timedelta(hours=3)).isoformat(),
                           window_end=NOW.isoformat())  # fmt: skip


def _quiet(cluster: str, job_id: str, nodes: int, state: str = "RUNNING") -> Job:
    """An RL job RUNNING 5 h on ``nodes`` nodes (pods) whose log was last written 200 min ago."""
    return Job(cluster, job_id, "rl__qwen8b_grpo", state, "squeue" if state == "RUNNING" else "sacct",
               elapsed="05:00:00", log_mtime=NOW.timestamp() - 200 * 60, num_nodes=nodes,
               log_tail="step 40 reward 0.31\n")  # fmt: skip


def _flags(snaps: list[ClusterSnapshot]) -> list:
    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    cadences = cadence_table(config, {s.cluster: {} for s in snaps})
    bucket_step(snaps, config)
    liveness_step(snaps, cadences)
    return rules_step(snaps, config, cadences)


def test_a_quiet_iris_log_is_an_investigate_note_with_its_age_never_a_kill() -> None:
    iris = _snap("coreweave", "iris", _quiet("coreweave", "/bfeuer/rl__qwen8b_grpo", 4))
    slurm = _snap("leonardo", "slurm", _quiet("leonardo", "4242", 4))
    flags = _flags([iris, slurm])
    (cw,) = [f for f in flags if f.cluster == "coreweave" and f.rule == "liveness_stale"]
    assert (cw.severity, cw.action) == ("info", "investigate")
    assert "log quiet 3h20m" in cw.message and "RUNNING with 4 pod(s)" in cw.message
    assert "state poll" in cw.message
    assert not [f for f in flags if f.cluster == "coreweave" and f.action in ("kill-approval", "cancel")]
    (lv,) = [f for f in flags if f.cluster == "leonardo" and f.rule == "liveness_stale"]
    assert (lv.severity, lv.action) == ("critical", "kill-approval")  # SLURM: the runbook's multi-node wedge


def test_the_iris_wedge_is_the_state_polls_zero_pods() -> None:
    wedged = _snap("coreweave", "iris", _quiet("coreweave", "/bfeuer/rl__w", 0, state="WEDGED"))
    flags = _flags([wedged])
    assert [(f.rule, f.severity) for f in flags if f.rule in ("wedged", "liveness_stale")] == [("wedged", "critical")]
