"""An approved iris stop of a job flagged for its log's silence re-reads the log in the stop's own
client process, right before ``terminate``: a line the controller's log store holds after the one
validation judged means the job moved, and it is left alone (not stopped); a job still silent is
stopped. On the REAL local iris controller (tests/iris_local.py), through IrisHook.stop and the pure
steps around it (validate's evidence, the stop's jobs, the outcome)."""

from __future__ import annotations

import time
from pathlib import Path

from iris_local import IRIS_PY, needs_iris, stop_all, submit, wait_states

from sweep_core.handoffs.cancel.iris import approved_stops, stop_outcome
from sweep_core.handoffs.cancel.outcome import Did
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest

pytestmark = needs_iris


def _lines(hook, job_id: str, want: int, timeout: float = 120) -> list[int]:
    """The log line times (ms) once the controller holds ``want`` lines of the job (a condition wait)."""
    end = time.time() + timeout
    while time.time() < end:
        times = [int(ev["t"]) for ev in hook.stream_logs([job_id], 30) if "l" in ev]
        if len(times) >= want:
            return times
        time.sleep(1)
    raise AssertionError(f"{job_id} never logged {want} lines")


def _decision(job_id: str, name: str, last_ms: int, rule: str = "liveness_stale") -> CancelDecision:
    req = CancelRequest("cw", job_id, name, "kill-approval", rule=rule)
    return CancelDecision(req, "cancel", state="RUNNING", evidence={"last_output_ms": last_ms})


def test_a_silent_iris_job_is_stopped_and_one_whose_log_moved_since_is_left_alone(controller, tag) -> None:
    from sweep_operators.iris_hook import IrisHook

    url, run = controller
    quiet, moving = f"rl__{tag}_quiet", f"rl__{tag}_moving"
    quiet_id = submit(url, run, quiet, "echo 'step 1'; sleep 600")
    moving_id = submit(url, run, moving, "echo 'step 1'; sleep 3; echo 'step 2'; sleep 600")
    hook = IrisHook(url=url, user="sweep", python=IRIS_PY, home=str(Path(run)), timeout_s=30)
    try:
        wait_states(url, run, {quiet_id: "RUNNING", moving_id: "RUNNING"})
        quiet_last = _lines(hook, quiet_id, 1)[-1]
        moving_first = _lines(hook, moving_id, 1)[0]  # judged on its first line ...
        _lines(hook, moving_id, 2)  # ... then it wrote another
        decisions = [_decision(quiet_id, quiet, quiet_last), _decision(moving_id, moving, moving_first)]
        jobs = approved_stops(decisions)
        assert [j["quiet_since_ms"] for j in jobs] == [quiet_last, moving_first]
        got = hook.stop(jobs, 60)
    finally:
        left = {j.job_id: j.state for j in hook.poll()[0]}
        stop_all(url, run)

    assert stop_outcome(got[quiet_id], "").did == Did.STOPPED
    moved = stop_outcome(got[moving_id], "")
    assert moved.did == Did.LEFT_ALONE and moved.text.startswith(
        "left alone: moved since the flag: its log was written at"
    )
    assert left[moving_id] == "RUNNING"  # nothing was sent to it


def test_a_job_flagged_for_something_else_is_stopped_whatever_its_log_does() -> None:
    """A collapse keeps logging: its log moving is no reason to spare it (no quiet_since_ms sent)."""
    d = _decision("/sweep/rl__x", "rl__x", 1_700_000_000_000, rule="rl_collapse")
    assert approved_stops([d]) == [{"job_id": "/sweep/rl__x", "name": "rl__x", "state": "RUNNING"}]
