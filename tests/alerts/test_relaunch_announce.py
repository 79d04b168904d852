"""Standing acts and escalations reach people (issue 20): sweep_cancel's record step tells the
channels that hear hand-offs of an act a standing permission took with no human, and the channels
that hear critical of a RECURRING job escalated, each once (a re-run sends nothing again), through
a real SMTP server on 127.0.0.1 (aiosmtpd); the next sweep flags the escalated job CRITICAL
(relaunch_escalated) while it is live and the escalation not settled."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from helpers import act_said
from receivers import smtp_connection, smtp_server
from sweep_runner import ROOT

from sweep_core.alerts.acts_notice import notices
from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest
from sweep_core.ledger.acts import add_act
from sweep_core.ledger.entries import Ledger
from sweep_core.pipeline.steps import rules_step
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.rules.context import History

EV = {"job_id": "77", "name": "rl__w", "remote_now": 20000, "last_output": 8000, "step": 5, "nodelist": "gpu[1-2]",
      "restarts": "1", "tail": "Training Step Progress: 5/10\n", "state": "RUNNING", "requeue": "1", "problem": ""}  # fmt: skip


def _decision(job_id: str, *, standing: str = "", recurring: bool = False) -> CancelDecision:
    req = CancelRequest("local", job_id, "rl__w", "kill-approval", "[liveness_stale] CRITICAL silent 200 min",
                         rule="liveness_stale")  # fmt: skip
    why = "RECURRING: wedged again at step 5, the step of its relaunch at 2026-12-04T07:00: escalated"
    offer = {"relaunch": not recurring, "why": why if recurring else "wedge: a relaunch can fix it",
             "recurring": recurring, "standing": standing, "series": "local|rl__w"}  # fmt: skip
    return CancelDecision(req, "cancel", state="RUNNING", nodes="2", offer=offer, evidence={**EV, "job_id": job_id})


def _sweep_yaml(tmp_path, port: int, monkeypatch) -> str:
    conf = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text())
    conf["run_log_dir"] = str(tmp_path / "logs")
    conf["notify"] = {"channels": [
        {"name": "team", "kind": "email", "conn_id": "smtp_local", "to": ["team@x.org"], "severities": ["warn"]},
        {"name": "pager", "kind": "email", "conn_id": "smtp_local", "to": ["pager@x.org"],
         "severities": ["critical"], "handoffs": False},
    ]}  # fmt: skip
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(conf))
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_LOCAL", smtp_connection(port))
    return str(path)


def test_a_standing_act_and_an_escalation_are_each_told_once_to_the_channels_that_hear_them(
    tmp_path, monkeypatch
) -> None:
    from sweep_operators.relaunch_tasks import announce

    with smtp_server() as (port, mails):
        sweep_yaml = _sweep_yaml(tmp_path, port, monkeypatch)
        decisions = [_decision("77", standing="standing[0] relaunch liveness_stale"), _decision("78", recurring=True)]
        results = {"local": {"77": "requeued (PENDING, Restarts=1, starts again ~2026-12-04T08:02:00)"}}
        ctx = {"run_id": "manual__1", "dag_run": SimpleNamespace(dag_id="sweep_cancel", run_id="manual__1")}
        assert announce(sweep_yaml, ctx, decisions, results, dry_run=True) == []  # a dry run tells nobody
        assert mails == []
        told = announce(sweep_yaml, ctx, decisions, results, dry_run=False)
        got = sorted((m["X-Envelope-To"], m["Subject"]) for m in mails)
        assert got == [
            ("pager@x.org", "ESCALATED (critical): local 78 rl__w is RECURRING, no relaunch offered"),
            ("team@x.org", "Standing permission acted, no human asked: local 77 rl__w: "
                           "requeued (PENDING, Restarts=1, starts again ~2026-12-04T08:02:00)"),
        ], got  # fmt: skip
        assert len(told) == 2
        body = next(m for m in mails if m["X-Envelope-To"] == "pager@x.org").get_body(("html",)).get_content()
        assert "wedged again at step 5" in body and "gpu[1-2]" in body
        # a re-run of the record step (and a later sweep_cancel run on the same recurring job) tells nothing again
        assert announce(sweep_yaml, ctx, decisions, results, dry_run=False) == []
        ctx2 = {"run_id": "manual__2", "dag_run": SimpleNamespace(dag_id="sweep_cancel", run_id="manual__2")}
        assert announce(sweep_yaml, ctx2, [_decision("78", recurring=True)], {}, dry_run=False) == []
        assert len(mails) == 2


def test_a_pending_standing_act_without_a_result_is_not_announced() -> None:
    d = _decision("77", standing="standing[0] relaunch liveness_stale")
    assert notices([d.to_dict()], {}, run_id="r", links=[]) == []
    blocked = CancelDecision(d.request, "blocked", offer={"recurring": True})
    assert notices([blocked.to_dict()], {}, run_id="r", links=[]) == []


def _snap(jobs: list[Job]) -> ClusterSnapshot:
    end = dt.datetime(2026, 12, 4, 8, tzinfo=dt.UTC)
    return ClusterSnapshot("local", "slurm", ClusterStatus.OK, running=jobs, finished=[], pending=[],
                           window_start=(end - dt.timedelta(hours=1)).isoformat(), window_end=end.isoformat())  # fmt: skip


def test_the_next_sweep_flags_an_open_escalation_critical_until_it_is_settled() -> None:
    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    ledger = Ledger()
    add_act(ledger, "local", "78", "rl__w", {"kind": "relaunch", "at": "2026-12-04T06:00:00+00:00", "step": "5"})
    add_act(ledger, "local", "78", "rl__w", {"kind": "escalated", "at": "2026-12-04T07:00:00+00:00",
                                             "why": "RECURRING: wedged again at step 5"})  # fmt: skip
    add_act(ledger, "local", "79", "rl__v", {"kind": "relaunch", "at": "2026-12-04T06:00:00+00:00", "step": "3"})

    def flags() -> list:
        jobs = [Job("local", i, n, "RUNNING", "squeue", bucket="RL") for i, n in (("78", "rl__w"), ("79", "rl__v"))]
        return [f for f in rules_step([_snap(jobs)], config, {}, history=History(ledger=ledger))
                if f.rule == "relaunch_escalated"]  # fmt: skip

    (flag,) = flags()
    assert (flag.job_id, flag.severity, flag.action) == ("78", "critical", "investigate")
    assert "RECURRING, escalated by sweep_cancel at 2026-12-04T07:00" in flag.message
    add_act(ledger, "local", "78", "rl__w", {"kind": "cancel", "at": "2026-12-04T07:30:00+00:00"})
    assert flags() == []  # cancelled by a person: settled


@pytest.mark.cluster
def test_a_standing_relaunch_on_the_real_cluster_is_announced_with_no_human(local_cluster, tag, tmp_path, monkeypatch):
    """The whole sweep_cancel run on the real local Slurm: no human answers, the standing permission
    requeues the wedged job, and the team channel gets the mail (the pager, which hears no hand-offs,
    none); the run log's record says it was announced."""
    from cancel_handoff import hand_off
    from sweep_runner import run_dag

    c = local_cluster
    name = f"rl__{tag}_stand"
    jid = c.submit(name, "echo 'Training Step Progress: 5/10'; sleep 900")
    c.wait_running(jid)
    c.wait_log(jid)
    with smtp_server() as (port, mails):
        conf = yaml.safe_load(Path(_sweep_yaml(tmp_path, port, monkeypatch)).read_text())
        conf["cancel"]["standing"] = [{"action": "relaunch", "rule": "liveness_stale", "clusters": ["local"],
                                     "name": f"rl__{tag}_.*"}]  # fmt: skip
        (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(conf))
        job = {"cluster": "local", "job_id": jid, "name": name, "action": "kill-approval"}
        run_id, jobs = hand_off(tmp_path / "logs", [job])  # the sweep's own hand-off: its records agree
        run = run_dag("sweep_cancel", {"jobs": jobs, "dry_run": False, "approval_timeout_minutes": 5},
                      tmp_path / "logs", run_id=run_id, SWEEP_CONFIG=str(tmp_path / "sweep.yaml"))  # fmt: skip
        assert run.task_states["approve"] == "skipped" and act_said(run.values, "standing")["local"][jid].startswith(
            "requeued"
        )
        (mail,) = mails
        assert mail["X-Envelope-To"] == "team@x.org"
        assert mail["Subject"].startswith(f"Standing permission acted, no human asked: local {jid} {name}: requeued")
        assert "standing[0] relaunch liveness_stale" in mail.get_body(("html",)).get_content()
        assert "announced: team: Standing permission acted" in Path(run.values["record"]).read_text()


def test_the_next_sweeps_row_of_a_relaunched_job_says_when_by_whom_and_which_node_it_excluded() -> None:
    from sweep_core.fanin.render import render_bucket

    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    ledger = Ledger()
    result = "requeued (PENDING, Restarts=1); bad node(s) named in the log: node2: excluded (ExcNodeList=node2)"
    add_act(ledger, "local", "80", "rl__r", {"kind": "relaunch", "at": "2026-12-04T06:00:00+00:00", "step": "3",
                                             "by": "carol", "result": result})  # fmt: skip
    jobs = [Job("local", i, n, "RUNNING", "squeue", bucket="RL") for i, n in (("80", "rl__r"), ("81", "rl__q"))]
    snap = _snap(jobs)
    rules_step([snap], config, {}, history=History(ledger=ledger))
    assert "relaunched" not in jobs[1].metrics  # never relaunched: nothing said
    table = render_bucket("RL", jobs[:1], [snap], lambda c, b: 30)
    cells = " ".join(table.replace("│", " ").split())  # the Note cell wraps over lines
    assert "relaunched 2026-12-04T06:00 by carol: requeued (PENDING, Restarts=1)" in cells
    assert "excluded (ExcNodeList=node2)" in cells.replace("= ", "=")
