"""sweep_cancel end to end with dag.test(): real Slurm jobs, real SSH, and the approval answered
through the real Core API route or resolved by the scheduler's own timeout sweep
(tests/hitl_responder.py) while dag.test() waits in AWAITING_INPUT."""

from __future__ import annotations

from pathlib import Path

import pytest
from cancel_handoff import hand_off
from conftest import USER, sh
from helpers import act_said
from hitl_responder import CANCEL, REJECT, TIMEOUT, HITLResponder
from sweep_runner import run_dag

pytestmark = pytest.mark.cluster


def _answer(run) -> dict | None:
    """One approve task's ``answer`` XCom (the HITL response as the DAG saw it), without its job key."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as s:
        row = s.scalars(
            select(XComModel).where(
                XComModel.dag_id == "sweep_cancel",
                XComModel.run_id == run.run_id,
                XComModel.task_id == "approve",
                XComModel.key == "answer",
            )
        ).first()
        got = XComModel.deserialize_value(row) if row else None
        return {k: got[k] for k in ("chosen_options", "responded_by", "timed_out", "refused")} if got else None


def _job(job_id: str, name: str, action: str = "kill-approval", evidence: str = "") -> dict:
    ev = evidence or f"[liveness_stale] CRITICAL local RL {job_id} {name}: no output for 185 min → {action}"
    return {"cluster": "local", "job_id": job_id, "name": name, "action": action, "evidence": ev}


def _cancel(
    tmp_path: Path,
    jobs: list[dict],
    answer: str,
    *,
    dry_run: bool = False,
    minutes: float = 5,
    sweep: bool = True,
    **kw,
):
    """sweep_cancel run as the hand-off a sweep gave (``sweep``: its ledger and history records
    written first, the run id it triggers), else as a person's by-hand request."""
    run_id = ""
    if sweep:
        flagged = [{**j, "rule": j["evidence"][1:].split("]")[0], "message": j["evidence"].split(": ", 1)[1]}
                   for j in jobs]  # fmt: skip
        run_id, _ = hand_off(tmp_path, flagged)
    conf = {"jobs": jobs, "dry_run": dry_run, "approval_timeout_minutes": minutes}
    with HITLResponder("sweep_cancel", "approve", answer, **kw) as responder:
        run = run_dag("sweep_cancel", conf, tmp_path, run_id=run_id)
    assert responder.errors == [], responder.errors
    return run, responder


def _decisions(run) -> dict[str, dict]:
    return {d["request"]["name"]: d for d in run.values["validate"]["decisions"]}


def test_approved_cancels_only_what_still_matches(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    wedged, link, reused, renamed = (f"rl__{tag}_{x}" for x in ("wedged", "link", "reused", "renamed"))
    ids = {n: c.submit(n, "sleep 600") for n in (wedged, reused, renamed)}
    ids[link] = c.submit(link, "sleep 600", "--begin=now+2hours")  # a spurious chain link, PENDING
    c.wait_running(ids[wedged], ids[reused], ids[renamed])
    node = sh("squeue", "-h", "-j", ids[wedged], "-o", "%N").stdout.strip()  # the lanes' jobs share the nodes
    assert node
    jobs = [
        _job(ids[wedged], wedged),
        _job(ids[link], link, "cancel", f"[rl_resume_overshoot] WARN local RL {ids[link]} {link}: past max_steps"),
        _job(ids[reused], f"rl__{tag}_the_old_job"),  # the flagged job's id now names another job
        _job(ids[renamed], renamed),
    ]

    def rename_while_waiting() -> None:  # the job changes after the human saw it, before scancel
        sh("scontrol", "update", f"JobId={ids[renamed]}", f"JobName={renamed}_v2")

    run, responder = _cancel(tmp_path, jobs, CANCEL, before_answer=rename_while_waiting)
    assert run.state == "success", run.task_states
    assert run.task_states["approve"] == "success" and run.task_states["scancel"] == "success"
    # the prompt carried the evidence
    assert responder.status == 200 and responder.detail["defaults"] == [REJECT]
    body = "".join(d["body"] for d in responder.details.values())  # one approval task per job
    for text in (ids[wedged], wedged, "no output for 185 min", node, link, "past max_steps", "PENDING"):
        assert text in body, text
    assert "BY HAND" not in body and body.count("evidence (the sweep's flag)") == 3
    assert sorted(d["subject"] for d in responder.details.values()) == [
        "scancel 1 job(s) on local?",
        *["scancel 1 job(s) on local? (1 may be relaunched)"] * 2,
    ]
    c.wait_finished(ids[wedged], "CANCELLED")
    c.wait_finished(ids[link], "CANCELLED")
    assert c.squeue_state(ids[reused]) == "RUNNING"
    assert c.squeue_state(ids[renamed]) == "RUNNING"
    done = act_said(run.values, "scancel")["local"]
    assert done[ids[wedged]] == "cancelled" and done[ids[link]] == "cancelled"
    assert done[ids[renamed]].startswith("refused before scancel") and f"{renamed}_v2" in done[ids[renamed]]
    assert _decisions(run)[f"rl__{tag}_the_old_job"]["verdict"] == "blocked"
    log = Path(run.values["record"]).read_text()
    assert _answer(run) == {"chosen_options": [CANCEL], "responded_by": "ops-tester", "timed_out": False, "refused": ""}
    assert "Hand-off sweep_cancel" in log and "approved by ops-tester" in log and "cancelled" in log


@pytest.mark.parametrize("answer", [REJECT, TIMEOUT])
def test_rejected_or_timed_out_cancels_nothing(local_cluster, tag, tmp_path, answer) -> None:
    c = local_cluster
    name = f"rl__{tag}_wedged"
    jid = c.submit(name, "sleep 600")
    c.wait_running(jid)
    run, responder = _cancel(tmp_path, [_job(jid, name)], answer, minutes=0.05)  # a 3 s deadline
    by = None if answer == TIMEOUT else "ops-tester"
    assert run.state == "success", run.task_states
    assert run.task_states["approve"] == "success"  # a response (or the default) is a success
    assert run.task_states["scancel"] == "skipped" and run.task_states["record"] == "success"  # none approved
    assert _answer(run) == {"chosen_options": [REJECT], "responded_by": by, "timed_out": answer == TIMEOUT,
                            "refused": ""}  # fmt: skip
    assert c.squeue_state(jid) == "RUNNING"
    log = Path(run.values["record"]).read_text()
    assert ("approval timed out: rejected" if answer == TIMEOUT else "rejected by ops-tester") in log
    assert responder.status == (None if answer == TIMEOUT else 200)


def test_dry_run_cancels_nothing_even_when_approved(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    name = f"rl__{tag}_wedged"
    jid = c.submit(name, "sleep 600")
    c.wait_running(jid)
    run, responder = _cancel(tmp_path, [_job(jid, name)], CANCEL, dry_run=True, sweep=False)
    assert responder.detail["subject"].startswith("[DRY RUN] [BY HAND]")  # a person's request: asked
    assert act_said(run.values, "scancel")["local"][jid] == "would scancel (dry run)"
    assert c.squeue_state(jid) == "RUNNING"
    assert "would scancel (dry run)" in Path(run.values["record"]).read_text()


@pytest.mark.exclusive  # stops a daemon or cuts sessions: alone, not beside the lanes
def test_squeue_unknown_cancels_nothing(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    name = f"rl__{tag}_wedged"
    jid = c.submit(name, "sleep 600")
    c.wait_running(jid)
    c.stop("slurmctld")
    try:
        conf = {"jobs": [_job(jid, name)], "dry_run": False, "approval_timeout_minutes": 5}
        run = run_dag("sweep_cancel", conf, tmp_path)  # no approval is ever asked
    finally:
        c.start("slurmctld")
    d = _decisions(run)[name]
    assert d["verdict"] == "blocked" and "squeue UNKNOWN" in d["reasons"][0]
    assert run.task_states["approve"] == "skipped" and run.task_states["scancel"] == "skipped"
    c.wait_running(jid)
    assert sh("runuser", "-u", USER, "--", "squeue", "-h", "-j", jid, "-o", "%T").stdout.strip() == "RUNNING"


def test_sweep_hands_a_spurious_chain_link_to_cancel(local_cluster, tag, tmp_path) -> None:
    """The sweep's rl_resume_overshoot flag becomes a sweep_cancel run; that conf, approved, cancels it."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    c = local_cluster
    name = f"rl__{tag}_overshoot"
    jid = c.submit(name, "echo 'Training Step Progress: 5/5'; sleep 600")
    c.wait_running(jid)
    c.wait_log(jid)
    sweep = run_dag("monitor_cron_sweep", {"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    assert sweep.task_states["trigger_cancel"] == "success", sweep.task_states
    with create_session() as s:
        conf = s.query(DagRun).filter(DagRun.run_id == f"{sweep.run_id}__cancel").one().conf
    mine = [j for j in conf["jobs"] if j["job_id"] == jid]
    assert mine and mine[0]["action"] == "cancel" and mine[0]["name"] == name
    assert "rl_resume_overshoot" in mine[0]["evidence"]
    assert (mine[0]["rule"], mine[0]["severity"]) == ("rl_resume_overshoot", "warn")  # the typed flag record
    conf = {**conf, "jobs": mine, "approval_timeout_minutes": 5}
    with create_session() as s:  # no scheduler here: dag.test runs the queued run the sweep triggered, by its id
        s.query(DagRun).filter(DagRun.dag_id == "sweep_cancel", DagRun.run_id == f"{sweep.run_id}__cancel").delete()
    with HITLResponder("sweep_cancel", "approve", CANCEL) as responder:  # the run the sweep triggered
        run = run_dag("sweep_cancel", conf, tmp_path, run_id=f"{sweep.run_id}__cancel")
    assert responder.errors == [] and "rl_resume_overshoot" in responder.detail["body"]
    d = _decisions(run)[name]  # the ledger's hand-off record, this run id and the history flag row agree
    assert not d["by_hand"] and d["authority"].startswith(f"handed off by sweep {sweep.run_id} ([rl_resume_overshoot]")
    assert d["request"]["evidence"].startswith("[rl_resume_overshoot]")
    assert d["request"]["rule"] == "rl_resume_overshoot"  # typed, from the sweep's record: never re-parsed
    assert act_said(run.values, "scancel")["local"][jid] == "cancelled"
    c.wait_finished(jid, "CANCELLED")
    assert Path(conf["run_log"]).read_text().count("Hand-off sweep_cancel") == 1
