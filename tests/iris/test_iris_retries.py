"""A launch's --max-retries on iris: a gang brought up again after a transient HF weight-resolution
flake is benign bring-up noise in its Note (``re-bring-up k of N after <reason>``), never a failure
flag; the same launch with every retry spent is the failure it is (the Note says the retries are
exhausted, genuine_failure flags it); a flake that ended a launch with no retry says to relaunch with
--max-retries >= 1. The records are read from the poll client's JSON (the controller's fields)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from sweep_core.config.sweep import load_sweep_config
from sweep_core.iris.records import job_from_poll
from sweep_core.iris.state import IrisJob, IrisTask, PodCount, iris_snapshot, retry_note
from sweep_core.pipeline.steps import run_fan_in

CONFIG = load_sweep_config(Path(__file__).resolve().parents[2] / "include" / "sweep.yaml")
T0 = dt.datetime(2026, 12, 2, 12, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(hours=3)
START = int((T0 + dt.timedelta(hours=1)).timestamp() * 1000)
# the task error the real local controller keeps after an attempt failed (tests/iris: recorded)
HF = "Exit code: 1. stderr: OSError: We couldn't connect to 'https://huggingface.co' to load this file"
OOM = "Exit code: 137. stderr: CUDA out of memory"


def _job(state: str, attempt: int, failures: int | None, max_retries: int | None, error: str = HF, **kw) -> IrisJob:
    task_state = {"RUNNING": "TASK_STATE_RUNNING", "FAILED": "TASK_STATE_FAILED"}.get(state, "TASK_STATE_PENDING")
    return IrisJob(
        "/sweep/sft__gang", state, submitted_at_ms=START, started_at_ms=START,
        finished_at_ms=START + 60_000 if state == "FAILED" else None,
        tasks=[IrisTask("/sweep/sft__gang/0", task_state, 1 if state == "FAILED" else None, error, attempt)],
        failure_count=failures, max_retries=max_retries, **kw,
    )  # fmt: skip


def _note(job: IrisJob) -> tuple[str, list]:
    snap = iris_snapshot("cw", [job], {job.job_id: PodCount(4)}, now=T1.timestamp(), window_start=T0,
                         window_end=T1, source="test")  # fmt: skip
    (row,) = snap.running + snap.finished + snap.pending
    flags = [f for f in run_fan_in([snap], CONFIG).flags if f.job_id == job.job_id]
    return row.reason, flags


def test_a_gang_brought_up_again_after_an_hf_flake_is_benign_noise_not_a_failure_flag() -> None:
    note, flags = _note(_job("RUNNING", 1, 1, 2))
    assert note == (
        f"4 pod(s); re-bring-up 1 of 2 after {HF}: a transient HF weight-resolution flake, benign bring-up "
        "noise (--max-retries re-brings up the gang)"
    )
    assert note.count("huggingface.co") == 1  # the kept task error is not said a second time
    assert not [f for f in flags if f.severity.value == "critical"], flags


def test_a_retry_still_pending_counts_the_failure_and_another_reason_is_said_without_benign() -> None:
    # the real controller: the task PENDING again, attempt not yet bumped, failure_count 1
    assert retry_note(_job("PENDING", 0, 1, 3)).startswith(f"re-bring-up 1 of 3 after {HF}: a transient HF")
    other = retry_note(_job("RUNNING", 2, 2, 3, OOM, preemption_count=1))
    assert other == f"re-bring-up 2 of 3, 1 preemption(s) among them after {OOM}"
    unknown = retry_note(_job("RUNNING", 1, 1, None, max_retries_error="ConnectError: unavailable"))
    assert unknown.startswith("re-bring-up 1 of ? (--max-retries unknown: ConnectError: unavailable) after Exit")
    assert retry_note(_job("RUNNING", 0, 0, None)) == ""  # never retried: no note


def test_every_retry_spent_is_the_failure_it_is() -> None:
    note, flags = _note(_job("FAILED", 2, 3, 2))
    assert f"--max-retries 2 exhausted: 3 bring-up(s) failed, the last after {HF}" in note
    assert "benign" not in note
    assert [f.rule for f in flags if f.severity.value == "critical"] == ["genuine_failure"]


def test_an_hf_flake_with_no_retry_asks_for_max_retries_and_other_failures_keep_their_error() -> None:
    hint = retry_note(_job("FAILED", 0, 1, 0))
    assert hint.startswith("--max-retries 0: a transient HF weight-resolution flake ended the only bring-up")
    assert hint.endswith("relaunch with --max-retries >= 1")
    note, _ = _note(_job("FAILED", 0, 1, 0, OOM))
    assert note.endswith(OOM) and "max-retries" not in note  # as before: the error itself


def test_the_poll_record_carries_the_attempts_failures_and_max_retries() -> None:
    row = {
        "job_id": "/sweep/sft__gang", "state": "JOB_STATE_RUNNING", "submitted_at_ms": START,
        "tasks": [{"task_id": "/sweep/sft__gang/0", "state": "TASK_STATE_RUNNING", "error": HF, "attempt": 1}],
        "failure_count": 1, "preemption_count": 0, "max_retries": 2,
    }  # fmt: skip
    job = job_from_poll(row)
    assert (job.tasks[0].attempt, job.failure_count, job.preemption_count, job.max_retries) == (1, 1, 0, 2)
    no_max = job_from_poll({**row, "max_retries": None, "max_retries_error": "NOT_FOUND"})
    assert no_max.max_retries is None and no_max.max_retries_error == "NOT_FOUND"
    old = job_from_poll({k: v for k, v in row.items() if k not in ("failure_count", "max_retries")})
    assert old.failure_count is None and old.max_retries is None
