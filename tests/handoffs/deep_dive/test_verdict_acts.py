"""The deep-dive verdict acts (issue 28, "The verdict acts"): KILL -> a deep_dive_kill cancel
request (a standing permission may name it), asked once per sweep while unanswered, not again after
a Reject until a probe weighs more; "Cancel and relaunch with …" overrides validated; a NO-KILL watch
signal that flips re-runs the probe this tick; UNKNOWN re-probed up to the cap, then escalated once.
"""

from __future__ import annotations

import datetime as dt

import pytest
from helpers import FIXTURES

from sweep_core.config.deep_dive_schema import DeepDiveSection
from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.config.relaunch_schema import RelaunchCommand
from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.cancel.authority import SWEEP, judge
from sweep_core.handoffs.cancel.fresh import Evidence
from sweep_core.handoffs.cancel.overrides import parse_overrides
from sweep_core.handoffs.cancel.plan import (
    RELAUNCH_WITH,
    CancelDecision,
    CancelRequest,
    approval_options,
    approval_prompt,
    override_answer,
    standing_acts,
)
from sweep_core.handoffs.deep_dive.follow_up import settle_verdicts
from sweep_core.handoffs.deep_dive.inputs import DeepDiveInput
from sweep_core.handoffs.deep_dive.plan import decide
from sweep_core.handoffs.dispatch.triggers import plan_handoffs
from sweep_core.handoffs.relaunch.plan import assess, decisions_view, relaunch_plan
from sweep_core.handoffs.relaunch.remote import command_argv
from sweep_core.ledger.acts import ActKind, record_acts
from sweep_core.ledger.cancel_handoff import HandoffRun
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.given import mark_given
from sweep_core.ledger.runs import give_once
from sweep_core.ledger.store import load_ledger, update_ledger
from sweep_core.ledger.verdicts import reject_fields
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.rules.context import History

CONFIG = load_sweep_config(FIXTURES.parents[1] / "include" / "sweep.yaml")
CFG = DeepDiveSection()
NOW = dt.datetime(2026, 12, 3, 14, 5, tzinfo=dt.UTC)
REMOTE_NOW = NOW.timestamp()


def _kill(reward_steps: int = 12, empty: bool = False) -> dict:
    """A KILL from the real decide: reward exactly 0 on every step (all-reward-0); with ``empty``
    the rollouts are empty too (a second strong signal: more evidence)."""
    inp = DeepDiveInput("local", "11", "rl__a", state="RUNNING")
    inp.series = [{"step": s, "reward": 0.0} for s in range(1, reward_steps + 1)]
    inp.log_age_s = 60
    inp.signatures = []
    inp.rollouts = [""] * 8 if empty else ["The answer is 4 because 2 + 2 = 4."] * 8
    return decide(inp, CFG).to_dict()


def _no_kill() -> dict:
    inp = DeepDiveInput("local", "11", "rl__a", state="RUNNING")
    inp.series = [{"step": s, "reward": 0.4} for s in range(1, 13)]
    inp.log_age_s = 60
    inp.signatures = []
    inp.starvation_log = ""
    inp.rollouts = ["The answer is 4 because 2 + 2 = 4."] * 8
    return decide(inp, CFG).to_dict()


def _unknown() -> dict:
    v = decide(DeepDiveInput("local", "11", "rl__a", state="RUNNING", problems=["log unknown: ssh refused"]), CFG)
    return v.to_dict()


def _handed_to_deep_dive(tmp_path, sweep_run: str = "s1") -> None:
    update_ledger(tmp_path, lambda led: (mark_given(led, "deep_dive", [{"cluster": "local", "job_id": "11"}], sweep_run),
                                         None))  # fmt: skip


def _settle(tmp_path, verdicts: list[dict], run_id: str, *, cap: int = 3, dry_run: bool = False):
    def change(led: Ledger):
        return led, settle_verdicts(led, verdicts, run_id, NOW.isoformat(), dry_run=dry_run, unknown_reprobes=cap,
                                   cancel_run=HandoffRun(f"{run_id}__cancel"))  # fmt: skip

    return update_ledger(tmp_path, change)


def _sweep(tmp_path, run_id: str, *, reward: float = 0.4, step: int = 12):
    """One sweep of the running job against the stored ledger: its flags and the hand-offs given."""
    tail = "".join(
        f'WANDB_MIRROR {{"trainer/global_step": {s}, "reward/mean": {reward}}}\n' for s in range(step - 2, step + 1)
    )
    tail += f"Training Step Progress: {step}/100\n"
    job = Job("local", "11", "rl__a", "RUNNING", "squeue", log_tail=tail, log_mtime=REMOTE_NOW - 60)
    snap = ClusterSnapshot("local", "slurm", ClusterStatus.OK, remote_now=REMOTE_NOW, running=[job])
    result = run_fan_in([snap], CONFIG, history=History(known=True, ledger=load_ledger(tmp_path)))
    mine = [f for f in result.flags if f.job_id == "11" and f.rule.startswith("deep_dive")]
    confs = plan_handoffs([snap], result.flags, dry_run=False, run_log="", trackers=False, hf_chain=False)
    given, notes = give_once(tmp_path, confs, run_id=run_id, dry_run=False)
    return mine, given, notes, job


def test_a_kill_is_a_deep_dive_kill_cancel_request_with_its_evidence_backed_by_the_sweep(tmp_path) -> None:
    _handed_to_deep_dive(tmp_path)
    v = _kill()
    assert v["verdict"] == "KILL" and v["basis"] == "one strong signal (all-reward-0)"
    kills, lines = _settle(tmp_path, [v], "dd1")
    (job,) = kills
    assert job["rule"] == "deep_dive_kill" and job["action"] == "kill-approval"
    assert job["evidence"].startswith("[deep_dive_kill] KILL verdict on one strong signal (all-reward-0): reward 0.0")
    assert "local 11: cancel handed off by dd1 (flagged by sweep s1)" in lines
    ledger = load_ledger(tmp_path)
    e = ledger.jobs["local|11"]
    assert e.deep_dive.startswith("2026-12-03 14:05Z KILL: reward 0.0")
    (act,) = [a for a in e.acts if a["kind"] == ActKind.VERDICT]
    assert act["verdict"] == "KILL" and act["weight"] == "2" and "reward 0.0" in act["evidence"]
    assert "deep_dive" not in e.handoffs  # the probe is done: the sweep's rules decide any re-probe
    # sweep_cancel trusts it: the sweep s1's deep-dive flag row (rule rl_new_untested) backs the request
    rows = {"s1": [{"cluster": "local", "job_id": "11", "name": "rl__a", "rule": "rl_new_untested",
                    "action": "deep-dive"}]}  # fmt: skip
    auth = judge("local", "11", "rl__a", "kill-approval", ledger, rows, dry_run=False,
                 run=HandoffRun("dd1__cancel"))  # fmt: skip
    assert auth.kind == SWEEP and auth.evidence == job["evidence"]
    assert (auth.rule, auth.severity) == ("deep_dive_kill", "critical")  # typed, from the ledger's record


def _decision(evidence: str) -> CancelDecision:
    req = CancelRequest("local", "11", "rl__a", "kill-approval", evidence, rule="deep_dive_kill", severity="critical")
    return CancelDecision(req, "cancel", state="RUNNING", elapsed="3:00:00", nodes="2", nodelist="node[1-2]",
                          by_hand=False)  # fmt: skip


def _ev() -> Evidence:
    return Evidence("11", "rl__a", int(REMOTE_NOW), "RUNNING", "1", "0", "node[1-2]", int(REMOTE_NOW) - 60, 12,
                    "Training Step Progress: 12/100\n")  # fmt: skip


def test_a_standing_permission_naming_deep_dive_kill_cancels_it_without_a_human(tmp_path) -> None:
    _handed_to_deep_dive(tmp_path)
    (job,), _ = _settle(tmp_path, [_kill()], "dd1")
    ledger = load_ledger(tmp_path)
    stand = CancelConfig.model_validate(
        {"standing": [{"action": "cancel", "rule": "deep_dive_kill", "clusters": ["local"], "name": "rl__.*"}]}
    )
    d = [_decision(job["evidence"])]
    assess(d, {("local", "11"): _ev()}, decisions_view(ledger, d), stand, now=NOW, run_id="dd1__cancel")
    assert d[0].verdict == "cancel" and not d[0].offer["relaunch"]  # a KILL is never requeued as it was
    assert d[0].offer["standing"] == "standing[0] cancel deep_dive_kill"
    assert standing_acts(d) == d
    subject, body = approval_prompt(d, dry_run=False, timeout_minutes=60)
    assert "0 job(s)" in subject and "Acted on under a standing permission (not asked): 1" in body
    # a permission for another rule does not cover it: a human is asked
    other = CancelConfig.model_validate({"standing": [{"action": "cancel", "rule": "liveness_stale",
                                                        "clusters": ["local"]}]})  # fmt: skip
    d = [_decision(job["evidence"])]
    assess(d, {("local", "11"): _ev()}, decisions_view(ledger, d), other, now=NOW, run_id="dd1__cancel")
    assert d[0].offer["standing"] == "" and standing_acts(d) == []


def test_unanswered_is_asked_again_the_next_sweep_and_only_once(tmp_path) -> None:
    _handed_to_deep_dive(tmp_path)
    _settle(tmp_path, [_kill()], "dd1")  # asked now, through the deep-dive's own hand-off
    flags, given, notes, _ = _sweep(tmp_path, "s2")  # the request is still open: not asked twice
    (flag,) = flags
    assert flag.rule == "deep_dive_kill" and flag.action == "kill-approval" and flag.severity == "critical"
    assert "KILL verdict of 2026-12-03T14:05 on one strong signal (all-reward-0): reward 0.0" in flag.message
    assert given["cancel"] is None and any("already handed off by dd1" in n for n in notes)
    # the approval timed out: unanswered, released
    record_acts(tmp_path, [("local", "11", "rl__a", {"kind": ActKind.UNANSWERED, "run": "dd1__cancel",
                                                      "at": NOW.isoformat()})],
                release=[{"cluster": "local", "job_id": "11"}])  # fmt: skip
    _, given, _, _ = _sweep(tmp_path, "s3")
    (job,) = given["cancel"]["jobs"]
    assert job["job_id"] == "11" and job["rule"] == "deep_dive_kill" and job["evidence"].startswith("[deep_dive_kill]")
    _, given, notes, _ = _sweep(tmp_path, "s4")  # s3's request open: once per sweep, not on top
    assert given["cancel"] is None and any("already handed off by s3" in n for n in notes)


def test_a_reject_stands_until_a_probe_finds_more_evidence(tmp_path) -> None:
    _handed_to_deep_dive(tmp_path)
    (job,), _ = _settle(tmp_path, [_kill()], "dd1")
    ledger = load_ledger(tmp_path)
    reject = {"kind": ActKind.REJECT, "run": "dd1__cancel", "at": NOW.isoformat(), "by": "ana",
              **reject_fields(ledger, "local", "11", job["rule"])}  # fmt: skip
    assert reject["rule"] == "deep_dive_kill" and reject["weight"] == "2"
    record_acts(tmp_path, [("local", "11", "rl__a", reject)], release=[{"cluster": "local", "job_id": "11"}])
    flags, given, _, _ = _sweep(tmp_path, "s2")
    (flag,) = flags  # not asked: probed again to see whether the evidence grew
    assert flag.rule == "deep_dive_reprobe" and flag.action == "deep-dive"
    assert "KILL rejected by ana" in flag.message and "asked again only when a probe finds more" in flag.message
    assert given["cancel"] is None and [j["job_id"] for j in given["deep_dive"]["jobs"]] == ["11"]
    kills, lines = _settle(tmp_path, [_kill()], "dd2")  # the same evidence: still not asked
    assert kills == [] and any("not asked: KILL rejected by ana" in ln for ln in lines)
    d = [_decision(job["evidence"])]  # nor by sweep_cancel, were it handed the job
    assess(
        d,
        {("local", "11"): _ev()},
        decisions_view(load_ledger(tmp_path), d),
        CancelConfig(),
        now=NOW,
        run_id="x__cancel",
    )
    assert d[0].verdict == "blocked" and "KILL rejected by ana" in d[0].reasons[0]
    _handed_to_deep_dive(tmp_path, "s3")
    kills, _ = _settle(tmp_path, [_kill(empty=True)], "dd3")  # two strong signals now: asked again
    (again,) = kills
    assert "2 strong signals (all-reward-0, empty-rollouts)" in again["evidence"]
    flags, _, _, _ = _sweep(tmp_path, "s4")
    assert [f.rule for f in flags] == ["deep_dive_kill"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("actor.lr=1e-6; rm -rf ~", "override #1 'actor.lr=1e-6;' refused"),
        ("actor.lr=$(reboot)", "override #1 'actor.lr=$(reboot)' refused"),
        ("--export=ALL", "override #1 '--export=ALL' refused"),
        ("lr", "override #1 'lr' refused"),
        ("   ", "no corrected setting given"),
    ],
)
def test_a_bad_override_is_refused_with_the_reason(text: str, why: str) -> None:
    with pytest.raises(ValueError) as exc:
        parse_overrides(text)
    assert why in str(exc.value)
    got, refused = override_answer([RELAUNCH_WITH], {"overrides": text})
    assert got == () and refused.startswith("Cancel and relaunch with … refused, nothing done: ") and why in refused


def test_good_overrides_fill_the_relaunch_command_one_element_each(tmp_path) -> None:
    assert parse_overrides("actor.lr=1e-6\n+rollout.n=8 model.path=/ckpt/s40") == (
        "actor.lr=1e-6", "+rollout.n=8", "model.path=/ckpt/s40")  # fmt: skip
    assert override_answer(["Cancel"], {"overrides": "x;y"}) == ((), "")  # only "with …" reads the field
    cmd = RelaunchCommand(match="^rl__", argv=["sbatch", "--parsable", "-J", "{name}", "run.sbatch", "{overrides}"])
    fill = {"job_id": "11", "name": "rl__a", "array_job": "11", "task": "", "exclude": ""}
    assert command_argv(cmd.argv, fill, ("actor.lr=1e-6", "rollout.n=8")) == (
        "sbatch", "--parsable", "-J", "rl__a", "run.sbatch", "actor.lr=1e-6", "rollout.n=8")  # fmt: skip
    assert command_argv(cmd.argv, fill) == ("sbatch", "--parsable", "-J", "rl__a", "run.sbatch")
    with pytest.raises(ValueError, match="refused"):  # checked again right before it is filled
        command_argv(cmd.argv, fill, ("a=1", "b=`id`"))
    with pytest.raises(ValueError, match="must be an argv element of its own"):
        RelaunchCommand(match="^rl__", argv=["run.sh", "--cfg={overrides}"])
    with pytest.raises(ValueError, match="would be parsed as shell code"):
        RelaunchCommand(match="^rl__", argv=["bash", "-c", "run.sh {overrides}"])
    plain = RelaunchCommand(match="^rl__", argv=["sbatch", "run.sbatch"])
    with pytest.raises(ValueError, match="has no \\{overrides\\} element"):
        command_argv(plain.argv, fill, ("a=1",))
    # the approval form offers it for a deep-dive KILL whose ops.md command takes {overrides}
    _handed_to_deep_dive(tmp_path)
    (job,), _ = _settle(tmp_path, [_kill()], "dd1")
    d = [_decision(job["evidence"])]
    assess(d, {("local", "11"): _ev()}, decisions_view(load_ledger(tmp_path), d), CancelConfig(), now=NOW, run_id="dd1__cancel",
           commands={"local": (cmd,)})  # fmt: skip
    assert approval_options(d[0]) == ["Cancel", RELAUNCH_WITH, "Reject"]
    _, body = approval_prompt(d, dry_run=False, timeout_minutes=60)
    assert f"**{RELAUNCH_WITH}** cancels it, then runs its ops.md relaunch command" in body
    d[0].offer = {**d[0].offer, "relaunch": True, "with": ["actor.lr=1e-6"]}
    plan = relaunch_plan(d[0], _ev(), CancelConfig(), (cmd,))
    assert plan.command[-1] == "actor.lr=1e-6"
    d2 = [_decision(job["evidence"])]
    assess(d2, {("local", "11"): _ev()}, decisions_view(load_ledger(tmp_path), d2), CancelConfig(), now=NOW, run_id="dd1__cancel",
           commands={"local": (plain,)})  # fmt: skip
    assert approval_options(d2[0]) == ["Cancel", "Reject"]


def test_a_watch_signal_that_flips_re_runs_the_probe_this_tick(tmp_path) -> None:
    _handed_to_deep_dive(tmp_path)
    v = _no_kill()
    assert v["verdict"] == "NO-KILL" and "watch reward_mean < 0.05" in v["watch"]
    _settle(tmp_path, [v], "dd1")
    flags, given, _, job = _sweep(tmp_path, "s2", reward=0.3)  # still healthy: no re-probe
    assert flags == [] and given["deep_dive"] is None
    assert job.metrics["deep_dive"].startswith("2026-12-03 14:05Z NO-KILL, watch reward_mean < 0.05")
    flags, given, _, _ = _sweep(tmp_path, "s3", reward=0.01)
    (flag,) = flags
    assert flag.rule == "deep_dive_reprobe" and flag.action == "deep-dive"
    assert "watch signal flipped: reward_mean < 0.05 (reward 0.01 now)" in flag.message
    assert [j["job_id"] for j in given["deep_dive"]["jobs"]] == ["11"]  # this sweep's deep-dive hand-off


def test_unknown_is_re_probed_up_to_the_cap_then_escalated_once(tmp_path) -> None:
    for n in (1, 2):
        _handed_to_deep_dive(tmp_path, f"s{n}")
        _, lines = _settle(tmp_path, [_unknown()], f"dd{n}", cap=3)
        assert f"local|11: UNKNOWN {n}/3: probed again next sweep" in lines
        flags, given, _, _ = _sweep(tmp_path, f"s{n + 1}")
        (flag,) = flags
        assert flag.rule == "deep_dive_reprobe" and flag.action == "deep-dive"
        assert f"deep-dive UNKNOWN {n} sweep(s) in a row (log unknown: ssh refused)" in flag.message
        assert [j["job_id"] for j in given["deep_dive"]["jobs"]] == ["11"]
    _, lines = _settle(tmp_path, [_unknown()], "dd3", cap=3)
    assert any(ln.startswith("local|11: escalated: deep-dive UNKNOWN 3 sweeps in a row (cap 3)") for ln in lines)
    for run in ("s4", "s5"):
        flags, given, _, _ = _sweep(tmp_path, run)
        (flag,) = flags
        assert flag.rule == "deep_dive_escalated" and flag.severity == "critical" and flag.action == "investigate"
        assert given["deep_dive"] is None  # never probed again until a person acts
    _settle(tmp_path, [_unknown()], "by-hand", cap=3)  # a deep-dive run by hand: no second escalation
    acts = load_ledger(tmp_path).jobs["local|11"].acts
    assert len([a for a in acts if a["kind"] == ActKind.ESCALATED]) == 1
    # a relaunch_escalated flag does not take the deep-dive's escalation for a relaunch's
    flags, _, _, _ = _sweep(tmp_path, "s6")
    assert [f.rule for f in flags] == ["deep_dive_escalated"]
