"""Approvals do not go stale (issue 30, item 4), on the real local Slurm with dag.test(): a wedged
job is validated (its evidence read: step 500, silent), then prints again (step 520) while the
approval waits; the human answers "Cancel and relaunch" (the fresh evidence read before the requeue
is judged again) or "Cancel" (the scancel script checks the log as judged in the session that
acts). Either way the job is left alone, still RUNNING, and the outcome table says how it moved."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cancel_handoff import hand_off
from conftest import LOGS, sh
from helpers import act_said
from hitl_responder import CANCEL, RELAUNCH, HITLResponder
from lab import USER
from sweep_runner import run_dag
from test_relaunch_local import _job, _ledger, _scontrol

pytestmark = pytest.mark.cluster


def _moving(c, tag: str) -> tuple[str, str, Path]:
    """(name, id, trigger) of a RUNNING job that printed step 500 and prints 520 once ``trigger`` exists."""
    go = LOGS.parent / f"go-{tag}"
    name = f"rl__{tag}_moves"
    cmd = (f"echo 'Training Step Progress: 500/1000'; while [ ! -e {go} ]; do sleep 1; done; "
           "echo 'Training Step Progress: 520/1000'; sleep 900")  # fmt: skip
    jid = c.submit(name, cmd)
    c.wait_running(jid)
    c.wait_log(jid)
    return name, jid, go


def _print_again(c, jid: str, go: Path) -> None:
    """The job writes again while the approval waits (waits until its log shows step 520)."""
    time.sleep(1.1)  # the log's mtime (1 s resolution) must differ from the one read at validation
    sh("runuser", "-u", USER, "--", "touch", str(go))
    path, end = c.stdout_path(jid), time.time() + 30
    while time.time() < end and "520/1000" not in path.read_text():
        time.sleep(0.2)
    assert "520/1000" in path.read_text()


def _approve_after_it_moved(c, tmp_path: Path, jid: str, name: str, go: Path, answer: str):
    run_id, _ = hand_off(tmp_path, [_job(jid, name)])  # the sweep's own hand-off: its evidence is judged
    conf = {"jobs": [_job(jid, name)], "dry_run": False, "approval_timeout_minutes": 5}
    with HITLResponder("sweep_cancel", "approve", answer, before_answer=lambda: _print_again(c, jid, go)) as resp:
        run = run_dag("sweep_cancel", conf, tmp_path, run_id=run_id)
    assert resp.errors == [], resp.errors
    assert run.state == "success", run.task_states
    assert "step 500" in resp.detail["body"]  # what the human approved on
    return run


def test_a_relaunch_approved_before_the_job_printed_again_is_not_done(local_cluster, tag, tmp_path):
    c = local_cluster
    name, jid, go = _moving(c, tag)
    run = _approve_after_it_moved(c, tmp_path, jid, name, go, RELAUNCH)
    res = act_said(run.values, "scancel")["local"][jid]
    assert res.startswith("left alone: moved since the flag: silent "), res
    assert "step 520 (was 500)" in res, res
    assert c.squeue_state(jid) == "RUNNING" and _scontrol(jid)["Restarts"] == "0"
    log = Path(run.values["record"]).read_text()
    assert "moved since the flag" in log and "step 520 (was 500)" in log
    acts = _ledger(tmp_path)["jobs"].get(f"local|{jid}", {}).get("acts", [])
    assert [a["kind"] for a in acts if a["kind"] in ("evidence", "relaunch")] == []  # nothing counted


def test_a_cancel_approved_before_the_job_printed_again_is_not_done(local_cluster, tag, tmp_path):
    c = local_cluster
    name, jid, go = _moving(c, tag)
    run = _approve_after_it_moved(c, tmp_path, jid, name, go, CANCEL)
    res = act_said(run.values, "scancel")["local"][jid]
    assert res.startswith("left alone: moved since the flag: silent "), res  # found by the scancel script itself
    assert "step 520 (was 500)" in res, res
    assert c.squeue_state(jid) == "RUNNING"
    assert "moved since the flag" in Path(run.values["record"]).read_text()
