"""CoreWeave through whole DAG runs on a REAL local iris controller (issue 17): a WEDGED job (the
pods stub answers 0 for it) and a chatty job whose metrics come from the since-window log; a job
that vanishes across three sweeps with an UNKNOWN sweep between; an approved stop of a running
iris job through sweep_cancel; the time of one gather of 20 jobs. No Slurm: no cluster lock."""

from __future__ import annotations

import datetime as dt
import os
import signal
import time
from pathlib import Path

import pytest
from helpers import act_said, table_rows
from hitl_responder import CANCEL, HITLResponder
from iris_local import free_port, iris_ops, needs_iris, start_controller, stop_all, submit, wait_states
from k8s_stub import PodListStub, kubeconfig, pod
from sweep_runner import run_dag, run_sweep

from sweep_core.config.ops import parse_ops_text
from sweep_core.records.models import ClusterStatus

pytestmark = needs_iris
SLURM_WORDS = ("squeue", "sacct", "StdOut", "scontrol")


@pytest.fixture
def jobs_stopped(controller):
    yield
    stop_all(*controller)


def _row(result, bucket: str, name: str) -> dict[str, str]:
    (row,) = [r for r in table_rows(result.rendered["tables"][bucket]) if r["Name"] == name]
    return row


def _repoint(ops: Path, cluster: str, url: str) -> None:
    path = ops / cluster / "ops.md"
    lines = [f"controller_url: {url}" if x.startswith("controller_url:") else x for x in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")


def test_a_wedged_job_and_a_chatty_jobs_metrics_through_a_dag_sweep(controller, jobs_stopped, tag, tmp_path) -> None:
    url, run = controller
    names = {k: f"rl__{tag}_{k}" for k in ("alive", "wedge", "chatty")}
    noise = 'for i in $(seq 1500); do echo "noise line $i of a chatty RL job, no metric here"; done'
    ids = {
        "alive": submit(url, run, names["alive"], "sleep 300"),
        "wedge": submit(url, run, names["wedge"], "echo 'Training Step Progress: 2/50'; sleep 300"),
        "chatty": submit(url, run, names["chatty"], f"echo 'Training Step Progress: 7/50'; {noise}; sleep 300"),
    }
    wait_states(url, run, dict.fromkeys(ids.values(), "RUNNING"))
    time.sleep(3)  # the chatty job's 1500 lines reach the controller's log store
    pods = [pod(f"sweep.{names['alive']}", "p0"), pod(f"sweep.{names['chatty']}", "p1")]  # none for the wedge
    with PodListStub({"iris": pods}) as cw:
        kc = kubeconfig(tmp_path / "kc", {"cw": cw.url}, current="cw")
        iris_ops(tmp_path / "ops", "cw", url, run, f"kubeconfig: {kc}\nkube_context: cw\nkube_namespace: iris\n")
        result = run_sweep({"lookback_hours": 0.25}, tmp_path / "logs", ops_dir=tmp_path / "ops")
    assert result.state == "success", result.task_states

    wedged = result.job(names["wedge"])
    assert (wedged.state, wedged.exit_code, wedged.end) == ("WEDGED", "", "")  # no exit code invented
    row = _row(result, "RL", names["wedge"])
    print("WEDGED run-log table:\n" + result.rendered["tables"]["RL"])
    assert row["State"] == "WEDGED" and row["Last output / End"] == "0 pods (no end, no exit code)"
    assert "[wedged] 0 pods since" in row["Note"] and "iris RUNNING, 0 pods" in row["Note"]
    assert "last log line 20" in row["Note"]
    assert f"[wedged] CRITICAL cw RL {ids['wedge']} {names['wedge']}" in result.report
    for name in names.values():
        assert not any(w in _row(result, "RL", name)["Note"] for w in SLURM_WORDS), _row(result, "RL", name)

    chatty = result.job(names["chatty"])
    assert chatty.state == "RUNNING" and chatty.metrics["step"] == 7  # 1500 lines after it: not a 200-line tail
    assert result.job(names["alive"]).state == "RUNNING"


def test_a_job_that_vanishes_across_three_sweeps_with_an_unknown_between(controller, jobs_stopped, tag, tmp_path):
    url, run = controller
    name = f"rl__{tag}_gone"
    job = submit(url, run, name, "echo 'Training Step Progress: 1/50'; sleep 600")
    wait_states(url, run, {job: "RUNNING"})
    ops, logs = tmp_path / "ops", tmp_path / "logs"
    iris_ops(ops, "cwv", url, run)
    first = run_sweep({"lookback_hours": 0.25}, logs, ops_dir=ops)
    assert first.job(name).state == "RUNNING"
    seen_at = first.snapshots["cwv"].window_end

    _repoint(ops, "cwv", f"http://127.0.0.1:{free_port()}")  # the controller does not answer
    second = run_sweep({"lookback_hours": 0.25}, logs, ops_dir=ops)
    assert second.snapshots["cwv"].status == ClusterStatus.UNKNOWN and "vanished" not in second.report

    fresh = tmp_path / "ctl2"
    (fresh / "tmp").mkdir(parents=True)
    proc, url2 = start_controller(fresh)  # a controller that answers but has no record of the job
    try:
        _repoint(ops, "cwv", url2)
        third = run_sweep({"lookback_hours": 0.25}, logs, ops_dir=ops)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    assert third.snapshots["cwv"].status == ClusterStatus.OK
    gone = third.job(name)
    assert gone.state == "VANISHED" and gone.exit_code == ""
    assert dt.datetime.fromisoformat(gone.end) == dt.datetime.fromisoformat(seen_at)  # not the UNKNOWN sweep's
    row = _row(third, "RL", name)
    print("VANISHED run-log table:\n" + third.rendered["tables"]["RL"])
    assert row["State"] == "VANISHED" and row["Last output / End"] == f"last seen {gone.end}"
    assert "record gone from the iris controller" in row["Note"] and not any(w in row["Note"] for w in SLURM_WORDS)
    assert f"[vanished] CRITICAL cwv RL {job} {name}: vanished, last seen {gone.end}" in third.report
    assert f"vanished: cwv RL {job} {name} (was RUNNING, last seen {gone.end})" in third.report


def test_an_approved_stop_ends_a_running_iris_job(controller, jobs_stopped, tag, tmp_path) -> None:
    url, run = controller
    name = f"rl__{tag}_stopme"
    job = submit(url, run, name, "sleep 600")
    wait_states(url, run, {job: "RUNNING"})
    iris_ops(tmp_path / "ops", "cw", url, run)
    evidence = f"[wedged] CRITICAL cw RL {job} {name}: iris RUNNING, 0 pods → kill-approval"
    jobs = [
        {"cluster": "cw", "job_id": job, "name": name, "action": "kill-approval", "evidence": evidence},
        {"cluster": "cw", "job_id": job, "name": "rl__other", "action": "kill-approval"},  # name does not match
    ]
    conf = {"jobs": jobs, "dry_run": False, "approval_timeout_minutes": 5}
    with HITLResponder("sweep_cancel", "approve", CANCEL) as responder:
        result = run_dag("sweep_cancel", conf, tmp_path, ops_dir=tmp_path / "ops")
    assert responder.errors == [], responder.errors
    verdicts = {d["request"]["name"]: d for d in result.values["validate"]["decisions"]}
    assert verdicts[name]["verdict"] == "cancel" and verdicts[name]["state"] == "RUNNING"
    assert verdicts["rl__other"]["reasons"] == [
        f"job id reused: the iris controller names it {name!r}, the request 'rl__other'"
    ]
    assert act_said(result.values, "scancel") == {"cw": {job: "stopped (iris KILLED)"}}
    wait_states(url, run, {job: "KILLED"})


def test_one_gather_of_20_jobs_is_timed(controller, jobs_stopped, tag, tmp_path) -> None:
    from sweep_operators.iris_gather import gather_iris

    url, run = controller
    ids = [submit(url, run, f"sft__{tag}_{i:02d}", "echo 'step 1 loss 0.5'; sleep 300") for i in range(20)]
    wait_states(url, run, dict.fromkeys(ids, "RUNNING"), timeout=180)
    iris_ops(tmp_path, "cw", url, run)
    cfg = parse_ops_text((tmp_path / "cw" / "ops.md").read_text(), tmp_path / "cw" / "ops.md", "cw")
    end = dt.datetime.now(dt.UTC)
    t0 = time.monotonic()
    snap = gather_iris(cfg, end - dt.timedelta(hours=1), end)
    took = time.monotonic() - t0
    print(f"CoreWeave gather of {len(snap.all_jobs())} jobs: {took:.2f}s")
    assert snap.status == ClusterStatus.OK and {j.job_id for j in snap.running or []} >= set(ids)
    assert took < cfg.iris_timeout_s
