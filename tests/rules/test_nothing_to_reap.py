"""No cleanup hand-off for a cluster with nothing to reap (issue 17): an iris cluster's completed
jobs are said once in its note, while a SLURM cluster's completed job is still handed off."""

from __future__ import annotations

from pathlib import Path

from sweep_core.config.sweep import load_sweep_config
from sweep_core.pipeline.steps import rules_step
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

ROOT = Path(__file__).resolve().parents[2]


def _snap(cluster: str, scheduler: str, jobs: list[Job]) -> ClusterSnapshot:
    return ClusterSnapshot(cluster, scheduler, ClusterStatus.OK, running=[], finished=jobs, pending=[])


def test_iris_completions_get_one_note_and_no_cleanup_hand_off() -> None:
    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    done = [
        Job("cw", f"/sweep/sft__{i}", f"sft__{i}", "COMPLETED", "sacct", bucket="SFT", exit_code="0:0")
        for i in range(3)
    ]
    cw = _snap("cw", "iris", done)
    leo = _snap("leo", "slurm", [Job("leo", "77", "sft__x", "COMPLETED", "sacct", bucket="SFT", exit_code="0:0")])
    flags = rules_step([cw, leo], config, {})
    cleanup = [f for f in flags if f.rule == "completion_cleanup"]
    assert [(f.cluster, f.job_id) for f in cleanup] == [("leo", "77")]
    assert cw.notes == [
        "cleanup not handed off for 3 completed job(s): iris cluster, nothing to reap (artifacts go to the hub)"
    ]
    assert leo.notes == []
