"""sweep_cancel's relaunch on the real local Slurm (issue 20), the parts after the requeue itself:
a bad node named in the saved tail (NCCL WARN ... host <its node>) is excluded from the requeued job
(ExcNodeList, set while the requeue holds it PENDING) and from the PENDING job of its series the
ledger knows, and the requeued link with a successor depending on it is said to hold its chain;
an ops.md relaunch command (sbatch --parsable) relaunches under a new id that the ledger links to
the old, and its successor is said to depend on the OLD id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cancel_handoff import hand_off
from helpers import act_said
from hitl_responder import RELAUNCH, HITLResponder
from lab import LAB_OPS, LOGS
from sweep_runner import run_dag
from test_relaunch_local import _job, _scontrol

from sweep_core.ledger.entries import LedgerEntry
from sweep_core.ledger.store import load_ledger, update_ledger

pytestmark = pytest.mark.cluster


def _relaunch(tmp_path: Path, jobs: list[dict], **kw):
    run_id, _ = hand_off(tmp_path, jobs, message="no output for 185 min (cadence 30 min)")  # the sweep's records
    conf = {"jobs": jobs, "dry_run": False, "approval_timeout_minutes": 5}
    with HITLResponder("sweep_cancel", "approve", RELAUNCH) as responder:
        run = run_dag("sweep_cancel", conf, tmp_path, run_id=run_id, **kw)
    assert responder.errors == [], responder.errors
    assert run.state == "success", run.task_states
    return run


def test_a_bad_node_is_excluded_from_the_requeue_and_the_series_pending_job_and_the_chain_is_held(
    local_cluster, tag, tmp_path
):
    c = local_cluster
    name = f"rl__{tag}_bad"
    # the node it runs on (the other lanes' jobs decide which: localhost or node2), named as NCCL names a host
    wedge = (
        "echo 'Training Step Progress: 5/10'; echo \"NCCL WARN NET/IB : connection timed out, host $SLURMD_NODENAME\""
    )
    jid = c.submit(name, wedge + "; sleep 900")
    later = c.submit(name, "sleep 900", "--begin=now+2hours")  # a PENDING link of the same series
    nxt = c.submit(f"rl__{tag}_next", "sleep 900", f"--dependency=afterok:{jid}")
    c.wait_running(jid)
    c.wait_log(jid)
    bad = _scontrol(jid)["NodeList"]

    def seed(ledger):  # the last sweep saw the PENDING link
        ledger.jobs[f"local|{later}"] = LedgerEntry("local", later, name, state="PENDING")
        return ledger, None

    update_ledger(tmp_path, seed)
    run = _relaunch(tmp_path, [_job(jid, name)])
    res = act_said(run.values, "scancel")["local"][jid]
    assert res.startswith("requeued (PENDING, Restarts=1"), res
    assert f"bad node(s) named in the log: {bad}: excluded (ExcNodeList={bad})" in res
    assert f"PENDING {later} of its series exclude {bad} too" in res
    assert f"holds its chain: successor(s) {nxt} wait on it" in res
    assert _scontrol(jid)["ExcNodeList"] == bad and _scontrol(later)["ExcNodeList"] == bad
    assert _scontrol(nxt)["ExcNodeList"] == "(null)"  # another series: left alone
    assert c.squeue_state(jid) == "PENDING"  # the only node is excluded: it waits, it does not run there
    log = Path(run.values["record"]).read_text()
    assert f"(ExcNodeList={bad})" in log  # the run log's actions table says so


def test_an_ops_md_relaunch_command_gets_a_new_id_linked_in_the_ledger(local_cluster, tag, tmp_path):
    c = local_cluster
    name = f"rl__{tag}_cmd"
    jid = c.submit(name, "echo 'Training Step Progress: 5/10'; sleep 900")
    nxt = c.submit(f"rl__{tag}_cmdnext", "sleep 900", f"--dependency=afterok:{jid}")
    c.wait_running(jid)
    c.wait_log(jid)
    ops = tmp_path / "ops"
    shutil.copytree(LAB_OPS / "local", ops / "local")
    md = (ops / "local" / "ops.md").read_text()
    argv = ["sbatch", "--parsable", "-J", "{name}", "-o", str(LOGS / "%x-%j.out"), "--wrap", "sleep 900"]
    md = md.replace(
        "quota:\n", f"relaunch_commands:\n  - {{match: '^rl__{tag}_cmd$', argv: {json.dumps(argv)}}}\nquota:\n", 1
    )
    (ops / "local" / "ops.md").write_text(md)
    run = _relaunch(tmp_path, [_job(jid, name)], ops_dir=ops)
    res = act_said(run.values, "scancel")["local"][jid]
    assert res.startswith("cancelled and relaunched by the ops.md command as job "), res
    new = res.split("as job ", 1)[1].split(";")[0].strip()
    assert new.isdigit() and new != jid
    assert f"successor(s) {nxt} depend on the OLD id {jid}" in res
    c.wait_finished(jid, "CANCELLED")
    c.wait_running(new)
    assert _scontrol(new)["JobName"] == name
    ledger = load_ledger(tmp_path).to_dict()["jobs"]
    assert [a["kind"] for a in ledger[f"local|{jid}"]["acts"]][-1] == "relaunch"
    assert ledger[f"local|{jid}"]["acts"][-1]["new_job_id"] == new
    link = ledger[f"local|{new}"]["acts"][-1]
    assert (link["kind"], link["from"], link["step"]) == ("relaunched_from", f"local|{jid}", "5")
