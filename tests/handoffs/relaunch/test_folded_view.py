"""The relaunch policy judges a job's ledger history folded ONCE (sweep_core.ledger.view): the view
holds the job's acts, its series' relaunches across links, the latest deep-dive verdict and a
standing Reject of a KILL, its series' PENDING links; it is frozen, the policy decides from it
alone, and one judgement of many jobs reads the ledger once."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from cancel_fleet import NOW, STANDING, T, cancel_cfg, silent_evidence, wedged_decision
from handoff_fakes import FakeSsh, cluster, ops

from sweep_core.handoffs.relaunch.plan import assess, decisions_view
from sweep_core.handoffs.relaunch.usecase import CancelPorts
from sweep_core.ledger import view as view_module
from sweep_core.ledger.acts import ActKind, add_act, record_acts
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.verdicts import DEEP_DIVE_KILL
from sweep_core.ledger.view import fold_job, fold_view
from sweep_core.records.remote_result import CommandResult
from sweep_operators import relaunch_tasks

ROOT = Path(__file__).resolve().parents[3]
STEP = r"Training Step Progress: (\d+)/"


def _history() -> Ledger:
    """rl__x on cluster a: link 10 relaunched twice (the series rl-x), link 11 RUNNING with a Reject,
    a KILL verdict and a Reject of that KILL; link 12 PENDING in the series; 13 PENDING elsewhere."""
    led = Ledger()
    for jid, state in (("10", "TIMEOUT"), ("11", "RUNNING"), ("12", "PENDING")):
        led.jobs[f"a|{jid}"] = LedgerEntry("a", jid, "rl__x", series="rl-x", state=state, step=480)
    led.jobs["a|13"] = LedgerEntry("a", "13", "rl__other", series="rl-o", state="PENDING")
    add_act(led, "a", "10", "rl__x", {"kind": ActKind.RELAUNCH, "run": "r1", "at": "2026-12-03T01:00:00+00:00",
                                      "step": "300", "series": "rl-x"})  # fmt: skip
    add_act(led, "a", "10", "rl__x", {"kind": ActKind.RELAUNCH, "run": "r2", "at": "2026-12-03T05:00:00+00:00",
                                      "step": "400", "series": "rl-x", "standing": "standing[0] relaunch liveness_stale"})  # fmt: skip
    add_act(led, "a", "11", "rl__x", {"kind": ActKind.REJECT, "run": "c1", "at": "t1", "by": "ana", "silent_s": "3600"})
    add_act(
        led, "a", "11", "rl__x", {"kind": ActKind.VERDICT, "run": "d1", "at": "t2", "verdict": "KILL", "weight": "3"}
    )
    add_act(led, "a", "11", "rl__x", {"kind": ActKind.REJECT, "run": "c2", "at": "t3", "by": "bo", "rule": DEEP_DIVE_KILL,
                                      "weight": "3"})  # fmt: skip
    return led


def test_a_job_s_history_is_folded_into_a_frozen_view_of_its_acts_series_and_verdicts() -> None:
    job = fold_job(_history(), "a", "11", "rl__x")
    assert job.step == 480 and [a.kind for a in job.acts] == ["reject", "verdict", "reject"]
    assert job.acts[0].silent_s == 3600 and job.acts[0].by == "ana"
    assert job.series.key == "rl-x" and job.series.count == 2 and job.series.recorded == 2
    assert [(a.run, a.step) for a in job.series.relaunches] == [("r1", "300"), ("r2", "400")]
    assert job.series.record_step == "400" and job.series.pending == (("12", "rl__x"),)
    assert job.verdict is not None and job.verdict.weight == 3
    assert job.kill_reject is not None and job.kill_reject.by == "bo"
    assert job.kill_blocked.startswith("KILL rejected by bo at t3 (evidence weight 3, now 3)")
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.step = 1  # type: ignore[misc]
    folded = fold_view(_history(), [("a", "11", "rl__x"), ("a", "99", "rl__new")])
    assert folded.jobs["a|99"].acts == () and folded.jobs["a|99"].series.count == 0  # unknown: an empty history
    assert [(a.run, a.standing) for a in folded.standing] == [("r2", "standing[0] relaunch liveness_stale")]
    with pytest.raises(TypeError):
        folded.jobs["a|11"] = job  # type: ignore[index]


def test_the_policy_decides_from_the_fold_alone_not_the_ledger_it_came_from() -> None:
    """The ledger emptied after the fold: the decisions are those its history makes (RECURRING at the
    step of its last relaunch; a Reject remembered), not those of an empty ledger."""
    led = Ledger()
    add_act(led, "a", "11", "rl__x", {"kind": ActKind.RELAUNCH, "run": "r1", "at": "2026-12-04T06:00:00+00:00",
                                      "step": "500"})  # fmt: skip
    add_act(led, "a", "12", "rl__y", {"kind": ActKind.REJECT, "run": "c1", "at": "t", "by": "ana", "silent_s": "7000"})
    decisions = [wedged_decision("a", "11", "rl__x"), wedged_decision("a", "12", "rl__y")]
    evidence = {("a", "11"): silent_evidence("11", "rl__x"), ("a", "12"): silent_evidence("12", "rl__y")}
    folded = decisions_view(led, decisions)
    led.jobs.clear()
    led.relaunches.clear()
    assess(decisions, evidence, folded, cancel_cfg(), now=NOW, run_id="c9")
    assert decisions[0].offer["recurring"] and "RECURRING: wedged again at step 500" in decisions[0].offer["why"]
    assert decisions[1].verdict == "blocked" and decisions[1].reasons[0].startswith("rejected by ana")
    again = [wedged_decision("a", "11", "rl__x")]
    assess(again, evidence, decisions_view(led, again), cancel_cfg(), now=NOW, run_id="c9")
    assert again[0].offer["relaunch"] and not again[0].offer["recurring"]  # an empty ledger: a first relaunch


def _evidence_answer(n: int):  # noqa: ANN202
    """Fake SSH records for jobs 100.. in the shape read_evidence reads (relaunch_evidence.sh): each
    RUNNING, silent 130 min, at step 500."""

    def answer(marker: str, script: str) -> dict[str, CommandResult]:
        out = {"now": CommandResult(0, f"{T}\n", "")}
        for k in range(n):
            line = f"JobId={100 + k} JobName=rl__{k} JobState=RUNNING Requeue=1 Restarts=0 NodeList=gpu[1-2]"
            out[f"job:{k}"] = CommandResult(0, line + "\n", "")
            out[f"mtime:{k}"] = CommandResult(0, f"{T - 7800} 4000\n", "")
            out[f"path:{k}"] = CommandResult(0, f"/logs/{k}.out\n", "")
            out[f"tail:{k}"] = CommandResult(0, "Training Step Progress: 500/1000\n", "")
        return out

    return answer


def test_one_judgement_of_twenty_jobs_reads_the_ledger_once(tmp_path, monkeypatch) -> None:
    """sweep_cancel's validation (relaunch_tasks.judge -> usecase.judge) over 20 RUNNING jobs on two
    clusters: ONE ledger read, by the task, for the policy and the brakes (the policy once asked the
    ledger several times per job),
    and the decisions still carry the history: the job relaunched at step 500 is RECURRING."""
    jobs = {c: [(str(100 + i), f"rl__{c}{i}") for i in range(10)] for c in ("a", "b")}
    record_acts(tmp_path, [("a", "100", "rl__a0", {"kind": ActKind.RELAUNCH, "run": "r0",
                                                   "at": "2026-12-04T06:00:00+00:00", "step": "500"})])  # fmt: skip
    reads: list[str] = []
    real = view_module.read_ledger

    def counted(run_log_dir):  # noqa: ANN001, ANN202
        reads.append(str(run_log_dir))
        return real(run_log_dir)

    monkeypatch.setattr(view_module, "read_ledger", counted)
    ssh = FakeSsh()
    decisions = [wedged_decision(c, jid, name) for c, js in jobs.items() for jid, name in js]
    io = CancelPorts(load=ops(cluster("a"), cluster("b")), run_script=ssh, stop_iris=None, run_local=None,
                     say=print, note=lambda *_: None, log_dir=str(tmp_path), run_id="c1",
                     now=lambda: NOW.isoformat(), step_patterns=(STEP,))  # fmt: skip
    ssh.answers["relaunch evidence"] = _evidence_answer(len(jobs["a"]))  # ids 100.. on both clusters
    conf = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text())
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump({**conf, "run_log_dir": str(tmp_path)}))
    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", str(tmp_path))
    monkeypatch.setattr(relaunch_tasks, "ports", lambda *_: io)  # the task's own wiring, SSH faked
    monkeypatch.setattr(relaunch_tasks, "_now", lambda: NOW)
    monkeypatch.setattr(relaunch_tasks, "brake", lambda trips, *_: trips_told.append(trips))
    trips_told: list[dict] = []
    relaunch_tasks.judge(decisions, cancel_cfg(standing=[STANDING]), None, None, str(tmp_path / "sweep.yaml"), "c1",
                         running={"a": 80, "b": 80})  # fmt: skip
    assert reads == [str(tmp_path)] and trips_told == [{}]  # the task's one fold; the use case reads nothing
    assert [c.what for c in ssh.calls] == ["relaunch evidence", "relaunch evidence"]  # one session per cluster
    first, rest = decisions[0], decisions[1:]
    assert first.offer["recurring"] and first.offer["standing"] == ""  # escalated: never a standing act
    assert all(d.offer["relaunch"] and d.offer["standing"].startswith("standing[0]") for d in rest)
