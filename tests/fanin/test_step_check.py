"""The ledger's last step as a check across sweeps (sweep_core/fanin/step_check.py, issue 40): a step
that goes back without a restart in the log, or passes the total an earlier sweep read, is "?" with
its reason; a restart in the log (or a restarted read) lets a lower step through. Through the
gather's own digest (pipeline.digest_gathered: before_digest, digest, carry, then the check)."""

from __future__ import annotations

from helpers import FIXTURES

from sweep_core.config.sweep import load_sweep_config
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.pipeline.steps import digest_gathered
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

CONFIG = load_sweep_config(FIXTURES.parents[1] / "include" / "sweep.yaml")
TORCHTITAN = (FIXTURES / "logs" / "general" / "torchtitan.out").read_text()  # step 10 of 1000
NEMO_RL = (FIXTURES / "logs" / "general" / "nemo-rl.out").read_text()  # step 5/100


def _sweep(tail: str, name: str, entry: dict, cursor: dict | None = None) -> Job:
    job = Job("c", "7", name, "RUNNING", "squeue", log_tail=tail, log_cursor=cursor or {})
    snap = ClusterSnapshot("c", "slurm", ClusterStatus.OK, running=[job], finished=[])
    ledger = Ledger(jobs={"c|7": LedgerEntry("c", "7", name, **entry)})
    digest_gathered(snap, ledger, CONFIG)
    return job


def test_a_step_that_goes_back_without_a_restart_is_unknown_with_its_reason() -> None:
    job = _sweep(TORCHTITAN, "sft__tt", {"bucket": "SFT", "step": 40, "max_steps": 1000})
    assert job.metrics["step"] is None and job.metrics["loss"] == 7.98765
    assert any("10 is below the 40 an earlier sweep read" in p for p in job.metric_problems), job.metric_problems


def test_a_restart_in_the_log_or_a_restarted_read_lets_the_lower_step_through() -> None:
    resumed = "[titan] 2025-05-12 09:59:00,000 - root - INFO - Training starts at step 9\n" + TORCHTITAN
    job = _sweep(resumed, "sft__tt", {"bucket": "SFT", "step": 40, "max_steps": 1000})
    assert job.metrics["step"] == 10 and "Training starts at step 9" in job.evidence["restart"]
    job = _sweep(TORCHTITAN, "sft__tt", {"bucket": "SFT", "step": 40}, cursor={"why": "truncated", "size": 10})
    assert job.metrics["step"] == 10


def test_a_step_at_or_past_the_ledger_step_reads_as_before() -> None:
    assert _sweep(TORCHTITAN, "sft__tt", {"bucket": "SFT", "step": 10, "max_steps": 1000}).metrics["step"] == 10
    job = _sweep(NEMO_RL, "rl__nemo", {"bucket": "RL", "step": 3, "max_steps": 100})
    assert job.metrics["step"] == 5 and job.metric_problems[:1] != ["step unknown"]


def test_a_step_past_the_total_an_earlier_sweep_read_is_unknown_and_kept_for_the_overshoot_rule() -> None:
    tail = "Step 12 |   41.9s | Loss 0.0011 | Entropy 0.4398 | Grad. Norm 0.2011 | LR 1.00e-06\n"  # no total here
    job = _sweep(tail, "rl__prime", {"bucket": "RL", "step": 9, "max_steps": 10})
    assert job.metrics["step"] is None and job.metrics["past_max_steps"] == 12
    assert any("12 is above the total 10 an earlier sweep read" in p for p in job.metric_problems)
