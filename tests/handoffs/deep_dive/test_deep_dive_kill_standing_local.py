"""A deep-dive KILL under a standing permission (issue 28, "The verdict acts"), end to end on the
bundled Slurm cluster: a real RL job logs reward exactly 0 with empty rollouts; a sweep handed it
to the deep-dive (its ledger and Parquet history records); sweep_rl_deep_dive says KILL and hands
it to sweep_cancel under the rule ``deep_dive_kill``; sweep.yaml ``cancel.standing`` names that
rule, so sweep_cancel (run as the hand-off run the deep-dive triggered) cancels it with no human
asked, the job ends CANCELLED, and the act is announced once to the channel that hears hand-offs
(a real SMTP server on 127.0.0.1). Prints the time from the deep-dive's start to CANCELLED."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from cancel_handoff import hand_off
from helpers import act_said
from lab import ARTIFACTS, LAB_CONFIG
from receivers import smtp_connection, smtp_server
from sweep_runner import run_dag

from sweep_core.ledger.store import load_ledger

pytestmark = pytest.mark.cluster
ART = str(ARTIFACTS)


def _dead_rl_job(c, name: str) -> str:
    """Writes 8 empty rollouts, logs reward 0.0 for 12 steps, then keeps running (a garbage run)."""
    d = f"{ART}/$SLURM_JOB_NAME/trace_jobs"
    script = (
        f'mkdir -p {d}; for i in $(seq 1 8); do echo \'{{"response": ""}}\'; done > {d}/rollouts_0001.jsonl; '
        'for s in $(seq 1 12); do echo "Training Step Progress: $s/100"; '
        'echo "WANDB_MIRROR {\\"trainer/global_step\\": $s, \\"reward/mean\\": 0.0}"; done; sleep 900'
    )
    return c.submit(name, script)


def _sweep_yaml(tmp_path: Path, tag: str, port: int, monkeypatch) -> str:
    conf = yaml.safe_load(LAB_CONFIG.read_text())
    conf.setdefault("cancel", {})["standing"] = [
        {"action": "cancel", "rule": "deep_dive_kill", "clusters": ["local"], "name": f"rl__{tag}_.*"}
    ]
    conf["notify"] = {"channels": [
        {"name": "team", "kind": "email", "conn_id": "smtp_local", "to": ["team@x.org"], "severities": ["critical"]},
    ]}  # fmt: skip
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(conf))
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_LOCAL", smtp_connection(port))
    return str(path)


def test_a_kill_under_a_standing_permission_is_cancelled_with_no_human_and_announced(
    local_cluster, tag, tmp_path, monkeypatch
) -> None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    c = local_cluster
    name = f"rl__{tag}_dead"
    jid = _dead_rl_job(c, name)
    c.wait_running(jid)
    c.wait_log(jid)
    with smtp_server() as (port, mails):
        cfg = _sweep_yaml(tmp_path, tag, port, monkeypatch)
        # the sweep that flagged it rl_new_untested → deep-dive (what backs the KILL's cancel request)
        hand_off(tmp_path, [{"cluster": "local", "job_id": jid, "name": name, "action": "deep-dive",
                             "rule": "rl_new_untested", "message": "first sweep to see this run"}])  # fmt: skip
        started = time.monotonic()
        jobs = [{"cluster": "local", "job_id": jid, "name": name}]
        dd = run_dag("sweep_rl_deep_dive", {"jobs": jobs, "dry_run": False}, tmp_path, SWEEP_CONFIG=cfg)
        assert dd.state == "success", dd.task_states
        (v,) = dd.values["probe"]["verdicts"]
        assert v["verdict"] == "KILL", v
        assert dd.task_states["trigger_cancel"] == "success"
        cancel_run = f"{dd.run_id}__cancel"
        with create_session() as s:  # the run the deep-dive triggered; dag.test runs it here under that id
            triggered = s.query(DagRun).filter(DagRun.dag_id == "sweep_cancel", DagRun.run_id == cancel_run).one()
            conf = dict(triggered.conf)
            s.delete(triggered)
        (req,) = conf["jobs"]
        assert req["rule"] == "deep_dive_kill" and req["evidence"].startswith("[deep_dive_kill] KILL verdict on ")
        run = run_dag("sweep_cancel", conf, tmp_path, run_id=cancel_run, SWEEP_CONFIG=cfg)  # nobody answers
        assert run.task_states["approve"] == "skipped" and run.task_states["standing"] == "success", run.task_states
        assert act_said(run.values, "standing")["local"][jid] == "cancelled", act_said(run.values, "standing")
        c.wait_finished(jid, "CANCELLED")
        print(f"\nTIMING deep-dive start -> CANCELLED (standing permission): {time.monotonic() - started:.1f} s")

        acts = load_ledger(tmp_path).jobs[f"local|{jid}"].acts
        assert [a["kind"] for a in acts if a["kind"] in ("verdict", "cancel")] == ["verdict", "cancel"]
        assert next(a for a in acts if a["kind"] == "cancel")["by"] == "standing permission"
        log = Path(run.values["record"]).read_text()
        assert "standing[0] cancel deep_dive_kill" in log
        subjects = [(m["X-Envelope-To"], m["Subject"]) for m in mails]
        assert (
            "team@x.org",
            f"Standing permission acted, no human asked: local {jid} {name}: cancelled",
        ) in subjects, subjects
        dd_log = Path(dd.values["record"]).read_text()
        assert f"{name}: KILL" in dd_log and f"local {jid}: cancel handed off by {dd.run_id}" in dd_log
