"""Hang evidence (sweep_core.fanin.metrics.hang, the liveness_stale rule): an opCount line alone is no
evidence; sig53 and EDQUOT are recognised and named; EDQUOT points at the quota cell and the cleanup
backlog and is never a kill, even on a multi-node job silent for hours."""

from __future__ import annotations

from pathlib import Path

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.fanin.metrics.hang import EDQUOT, SIG53, hang_evidence, named_traps
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

ROOT = Path(__file__).resolve().parents[2]
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")
NOW = 1_764_680_000.0
OPCOUNT = "NCCL INFO [Service thread] comm 0x55d1 rank 3 nranks 16 opCount 1a2f lastOpCount 1a2e"


def test_an_opcount_line_alone_is_no_evidence_even_when_the_config_lists_it() -> None:
    for cfg in (metrics_config(CONFIG.metrics), metrics_config({"hang_signals": ["EngineDead", "opCount"]})):
        last, near = hang_evidence(f"step 12\n{OPCOUNT}\n", cfg)
        assert last == OPCOUNT and near == []
    tail = f"{OPCOUNT}\n[rank0]: Watchdog caught collective operation timeout: opCount 1a2f\n"
    _, near = hang_evidence(tail, metrics_config(CONFIG.metrics))
    assert near == ["[rank0]: Watchdog caught collective operation timeout: opCount 1a2f"]


def test_sig53_and_edquot_are_named_with_their_line() -> None:
    log = (
        "step 4\nOSError: [Errno 122] Disk quota exceeded: '/e/scratch/ckpt/step_5/model.pt'\n"
        "srun: error: nid0042: task 0: Exited with exit code 53\n"
    )
    traps = named_traps(log)
    assert [(t.name, t.line) for t in traps] == [
        (EDQUOT, "OSError: [Errno 122] Disk quota exceeded: '/e/scratch/ckpt/step_5/model.pt'"),
        (SIG53, "srun: error: nid0042: task 0: Exited with exit code 53"),
    ]
    assert traps[0].evidence().startswith("EDQUOT (Disk quota exceeded: see the quota cell and the cleanup backlog")
    assert named_traps("step 53 done\nloss 0.53\nexit code 0\n") == []


def _snap(tail: str) -> ClusterSnapshot:
    stale = NOW - 3 * 3600
    jobs = [
        Job("c1", "7", "rl__wedged_4n", "RUNNING", "squeue", log_mtime=stale, num_nodes=4, log_tail=tail),
    ]
    return ClusterSnapshot("c1", "slurm", ClusterStatus.OK, login_node="l1", remote_now=NOW, running=jobs, finished=[])


def test_a_silent_multi_node_job_is_a_kill_unless_its_log_says_disk_quota_exceeded() -> None:
    (hung,) = [f for f in run_fan_in([_snap("step 9\nEngineDeadError: engine died\n")], CONFIG).flags
               if f.rule == "liveness_stale"]  # fmt: skip
    assert hung.action == "kill-approval" and "EngineDeadError" in hung.message
    quota = "step 9\nOSError: [Errno 122] Disk quota exceeded\nEngineDeadError: engine died\n"
    (full,) = [f for f in run_fan_in([_snap(quota)], CONFIG).flags if f.rule == "liveness_stale"]
    assert full.action == "investigate" and full.severity == "warn"
    assert "EDQUOT (Disk quota exceeded: see the quota cell and the cleanup backlog" in full.message
