"""CoreWeave relaunch (issue 20) on a REAL local iris controller through a whole sweep_cancel run:
iris has no requeue, so "Cancel and relaunch" is offered only where an ops.md relaunch_commands
entry matches the job's name; the job is stopped (`iris job stop`, KILLED) and only then the
command runs (an argv, no shell) and submits it again; the ledger links the old id to the new.
A job no command matches is only offered Cancel, and is stopped. No Slurm: no cluster lock."""

from __future__ import annotations

import json

from cancel_handoff import hand_off
from helpers import act_said
from hitl_responder import CANCEL, RELAUNCH, HITLResponder
from iris_local import HERE, IRIS_PY, iris_ops, needs_iris, stop_all, submit, wait_states
from sweep_runner import run_dag

from sweep_core.handoffs.cancel.outcome import Did, from_xcom
from sweep_core.ledger.store import load_ledger

pytestmark = needs_iris


def test_an_iris_job_is_relaunched_only_by_the_ops_md_command_after_its_stop(controller, tag, tmp_path) -> None:
    url, run = controller
    name, other = f"rl__{tag}_irl", f"sft__{tag}_irl"
    job, job2 = submit(url, run, name, "sleep 600"), submit(url, run, other, "sleep 600")
    try:
        wait_states(url, run, {job: "RUNNING", job2: "RUNNING"})
        argv = [IRIS_PY, str(HERE / "iris_submit.py"), "{controller}", "sweep", "{name}-r1", "sleep 600"]
        extra = f"relaunch_commands:\n  - match: '^rl__'\n    argv: {json.dumps(argv)}\n"
        iris_ops(tmp_path / "ops", "cw", url, run, extra)
        flagged = [
            {"cluster": "cw", "job_id": j, "name": n, "action": "kill-approval", "rule": "wedged",
             "message": "iris RUNNING, 0 pods"}
            for j, n in ((job, name), (job2, other))
        ]  # fmt: skip
        run_id, jobs = hand_off(tmp_path, flagged)  # the sweep's own hand-off: its evidence offers the relaunch
        conf = {"jobs": jobs, "dry_run": False, "approval_timeout_minutes": 5}
        pick = lambda d: RELAUNCH if RELAUNCH in d["options"] else CANCEL  # noqa: E731  # one answer per job
        with HITLResponder("sweep_cancel", "approve", pick) as responder:
            result = run_dag("sweep_cancel", conf, tmp_path, ops_dir=tmp_path / "ops", run_id=run_id)
        assert responder.errors == [], responder.errors
        assert responder.detail["options"] == ["Cancel", "Cancel and relaunch", "Reject"]
        body = "".join(d["body"] for d in responder.details.values())
        assert "iris: iris job stop, then the ops.md relaunch command" in body
        assert "iris has no requeue: relaunched only through an ops.md relaunch_commands entry" in body
        done = act_said(result.values, "scancel")["cw"]
        new = f"/sweep/{name}-r1"
        assert done[job] == f"cancelled and relaunched by the ops.md command as job {new} after iris job stop (KILLED)"
        assert done[job2] == "stopped (iris KILLED)"  # no command: cancelled, never relaunched
        typed = from_xcom(result.values["scancel"])["cw"]  # what the ledger reads: the fields, not the text
        assert (typed[job].did, typed[job].new_job_id, typed[job2].did) == (Did.RELAUNCHED, new, Did.STOPPED)
        wait_states(url, run, {job: "KILLED", job2: "KILLED", new: "RUNNING"})
        ledger = load_ledger(tmp_path).to_dict()["jobs"]
        assert [a["kind"] for a in ledger[f"cw|{job}"]["acts"]] == ["relaunch"]
        assert ledger[f"cw|{job}"]["acts"][0]["new_job_id"] == new
        assert ledger[f"cw|{new}"]["acts"][0] == {**ledger[f"cw|{new}"]["acts"][0], "kind": "relaunched_from",
                                                   "from": f"cw|{job}"}  # fmt: skip
        assert [a["kind"] for a in ledger[f"cw|{job2}"]["acts"]] == ["cancel"]
    finally:
        stop_all(url, run)


def _log_lines(url: str, run, job: str, want: str, timeout: float = 60) -> list[str]:
    """The job's whole log (the deep-dive's stream), polled until a line holds ``want``."""
    import time

    from sweep_operators.iris_hook import IrisHook

    hook = IrisHook(url=url, user="sweep", python=IRIS_PY, home=str(run), timeout_s=30)
    end, lines = time.time() + timeout, []
    while time.time() < end:
        lines = [str(e["l"]) for e in hook.stream_logs([job], 30) if "l" in e]
        if any(want in ln for ln in lines):
            break
        time.sleep(1)
    return lines


def test_a_deep_dive_kill_is_relaunched_with_the_corrected_setting_after_its_stop(controller, tag, tmp_path) -> None:
    """KILL verdict on CoreWeave -> "Cancel and relaunch with …": the job is stopped (KILLED), then
    the ops.md command runs with the validated overrides, one argv element each (the new job sees
    them as its arguments); a bad override is refused and that job is left running."""
    from hitl_responder import RELAUNCH_WITH

    url, run = controller
    name, bad = f"rl__{tag}_dkw", f"rl__{tag}_dkb"
    job, job2 = submit(url, run, name, "sleep 600"), submit(url, run, bad, "sleep 600")
    try:
        wait_states(url, run, {job: "RUNNING", job2: "RUNNING"})
        cmd = 'echo "relaunched with: $*"; sleep 600'
        argv = [IRIS_PY, str(HERE / "iris_submit.py"), "{controller}", "sweep", "{name}-r1", cmd, "{overrides}"]
        iris_ops(
            tmp_path / "ops", "cw", url, run, f"relaunch_commands:\n  - match: '^rl__'\n    argv: {json.dumps(argv)}\n"
        )
        why = "KILL verdict on one strong signal (garbage-text): garbage rollout text in 8/8 newest"
        flagged = [{"cluster": "cw", "job_id": j, "name": n, "action": "kill-approval", "rule": "deep_dive_kill",
                    "message": why} for j, n in ((job, name), (job2, bad))]  # fmt: skip
        run_id, jobs = hand_off(tmp_path, flagged)
        conf = {"jobs": jobs, "dry_run": False, "approval_timeout_minutes": 5}
        good, evil = "actor.lr=1e-6 +rollout.n=8", "actor.lr=1e-6 x;touch"

        def pick(d: dict) -> tuple[str, dict[str, str]]:
            return RELAUNCH_WITH, {"overrides": evil if bad in d["body"] else good}

        with HITLResponder("sweep_cancel", "approve", pick) as responder:
            result = run_dag("sweep_cancel", conf, tmp_path, ops_dir=tmp_path / "ops", run_id=run_id)
        assert responder.errors == [], responder.errors
        assert RELAUNCH_WITH in responder.detail["options"]
        assert (
            "cancels it, then runs its ops.md relaunch command with the corrected setting" in responder.detail["body"]
        )
        new = f"/sweep/{name}-r1"
        done = act_said(result.values, "scancel")["cw"]
        assert done == {
            job: f"cancelled and relaunched by the ops.md command as job {new} after iris job stop (KILLED)"
        }
        typed = result.values["scancel"]["cw"][job]  # the typed outcome the ledger reads, not the text
        assert (typed["did"], typed["act"], typed["new_job_id"]) == ("relaunched", "relaunch", new)
        wait_states(url, run, {job: "KILLED", new: "RUNNING", job2: "RUNNING"})  # the refused one left alone
        lines = _log_lines(url, run, new, "relaunched with:")
        assert "relaunched with: actor.lr=1e-6 +rollout.n=8" in lines, lines
        ledger = load_ledger(tmp_path).to_dict()["jobs"]
        assert [a["kind"] for a in ledger[f"cw|{job}"]["acts"] if a["kind"] != "evidence"] == ["relaunch"]
        assert ledger[f"cw|{job}"]["acts"][-1]["new_job_id"] == new
        assert not [a for a in ledger.get(f"cw|{job2}", {}).get("acts", []) if a["kind"] in ("cancel", "relaunch")]
    finally:
        stop_all(url, run)
