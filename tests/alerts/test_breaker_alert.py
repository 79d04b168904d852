"""The circuit breaker end to end through the real alert path (issue 30, item 6): a hung filesystem
silences every log, 120 jobs on 2 clusters are flagged at once with a standing relaunch permission
on: none is acted on without a human, every one asks with the reason, ONE critical alert goes out
(through a real SMTP server on 127.0.0.1) and the run log says why; the next run the same day
tells nothing again. And a smaller run on the real local Slurm through the whole DAG."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from cancel_fleet import NOW, STANDING, cancel_cfg, fleet
from receivers import smtp_server
from test_relaunch_announce import _sweep_yaml as _smtp_sweep_yaml

from sweep_core.handoffs.cancel.plan import approval_prompt, asked
from sweep_core.handoffs.relaunch.brakes import apply_brakes
from sweep_core.handoffs.relaunch.plan import assess, decisions_view
from sweep_core.ledger.entries import Ledger


def test_120_jobs_silent_at_once_on_two_clusters_act_on_none_and_raise_one_alert(tmp_path, monkeypatch) -> None:
    """A hung filesystem silences every log: 60 of 80 RUNNING jobs on each of 2 clusters flagged
    liveness_stale in one run, a standing relaunch permission on: no job is acted on without a
    human, every one asks with the reason, and ONE critical alert is told (once, not per re-run)."""
    from sweep_operators.relaunch_tasks import brake

    decisions, evidence = fleet(60)
    ccfg = cancel_cfg(standing=[STANDING])
    assess(decisions, evidence, decisions_view(Ledger(), decisions), ccfg, now=NOW, run_id="c1")
    assert sum(1 for d in decisions if d.offer["standing"]) == 120  # what today's code acts on with no human
    with smtp_server() as (port, mails):
        sweep_yaml = _smtp_sweep_yaml(tmp_path, port, monkeypatch)
        ctx = {"run_id": "c1", "params": {"dry_run": False},
               "dag_run": SimpleNamespace(dag_id="sweep_cancel", run_id="c1")}  # fmt: skip
        trips = apply_brakes(decisions, decisions_view(Ledger(), decisions), ccfg, running={"a": 80, "b": 80},
                             now=NOW, run_id="c1")  # fmt: skip
        told = brake(trips, sweep_yaml, ctx)
        acted = [d for d in decisions if d.offer["standing"]]
        assert acted == [] and len(asked(decisions)) == 120
        assert all(d.offer["brake"].startswith("circuit breaker: 60 of 80 RUNNING jobs on ") for d in decisions)
        assert len(told) == 1 and len(mails) == 1, told
        assert mails[0]["X-Envelope-To"] == "pager@x.org"
        assert "standing permissions suspended on a (60 of 80" in mails[0]["Subject"]
        # the next sweep_cancel run of the same fault (same day): no second alert
        ctx2 = {**ctx, "run_id": "c2", "dag_run": SimpleNamespace(dag_id="sweep_cancel", run_id="c2")}
        decisions2, _ = fleet(60)
        assess(decisions2, evidence, decisions_view(Ledger(), decisions2), ccfg, now=NOW, run_id="c2")
        trips2 = apply_brakes(decisions2, decisions_view(Ledger(), decisions2), ccfg, running={"a": 80, "b": 80},
                              now=NOW, run_id="c2")  # fmt: skip
        assert brake(trips2, sweep_yaml, ctx2) == [] and len(mails) == 1
    log = next((tmp_path / "logs").glob("*_sweep_cancel.md")).read_text()
    assert "circuit breaker saved" in log and "60 of 80 RUNNING jobs on a flagged [liveness_stale]" in log
    subject, body = approval_prompt(decisions, dry_run=False, timeout_minutes=60)
    assert "scancel 120 job(s)" in subject and "standing permission NOT used: circuit breaker" in body
    print(f"\n120 silent jobs, standing permission on: acted without a human 0, asked 120, alerts {len(mails)}")


@pytest.mark.cluster
def test_on_the_real_cluster_every_running_job_flagged_at_once_asks_a_human(local_cluster, tag, tmp_path, monkeypatch):
    """The whole sweep_cancel run on the real local Slurm: both RUNNING jobs (all the cluster has)
    flagged liveness_stale at once, a standing relaunch permission on, the breaker at 2 jobs: the
    standing task acts on nothing, the human is asked about both (the prompt says why), ONE critical
    mail goes to the pager, the run log keeps the trip; after Reject both are still RUNNING."""
    from cancel_handoff import hand_off
    from hitl_responder import REJECT, HITLResponder
    from sweep_runner import run_dag

    c = local_cluster
    jobs = []
    for k in range(2):
        name = f"rl__{tag}_fs{k}"
        jid = c.submit(name, "echo 'Training Step Progress: 5/10'; sleep 900")
        jobs.append((jid, name))
    c.wait_running(*(j for j, _ in jobs))
    for jid, _ in jobs:
        c.wait_log(jid)
    with smtp_server() as (port, mails):
        conf = yaml.safe_load(Path(_smtp_sweep_yaml(tmp_path, port, monkeypatch)).read_text())
        conf["cancel"]["standing"] = [{"action": "relaunch", "rule": "liveness_stale", "clusters": ["local"],
                                     "name": f"rl__{tag}_.*"}]  # fmt: skip
        conf["cancel"]["breaker"] = {"min_jobs": 2}
        (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(conf))
        wanted = [{"cluster": "local", "job_id": j, "name": n, "action": "kill-approval"} for j, n in jobs]
        run_id, conf_jobs = hand_off(tmp_path / "logs", wanted)  # the sweep's own hand-off (ledger + history)
        with HITLResponder("sweep_cancel", "approve", REJECT) as responder:
            run = run_dag("sweep_cancel", {"jobs": conf_jobs, "dry_run": False, "approval_timeout_minutes": 5},
                          tmp_path / "logs", run_id=run_id, SWEEP_CONFIG=str(tmp_path / "sweep.yaml"))  # fmt: skip
        assert responder.errors == [], responder.errors
        assert run.values.get("standing") in ({}, None), run.values.get("standing")
        prompts = list(responder.details.values()) or [responder.detail]
        assert len(prompts) == 2, prompts  # one answer per job
        for p in prompts:
            assert p["subject"].startswith("scancel 1 job(s)"), p["subject"]
            assert "standing permission NOT used: circuit breaker: 2 of 2 RUNNING jobs on local" in p["body"]
        (mail,) = mails
        assert mail["X-Envelope-To"] == "pager@x.org" and "standing permissions suspended on local" in mail["Subject"]
    assert all(c.squeue_state(j) == "RUNNING" for j, _ in jobs)
    log = Path(run.values["record"]).read_text()
    assert "circuit breaker saved" in log and "2 of 2 RUNNING jobs on local flagged [liveness_stale]" in log
