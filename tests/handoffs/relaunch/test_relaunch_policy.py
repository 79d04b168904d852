"""The relaunch policy, pure: which failure a flag names, when "Cancel and relaunch" is offered
(fixable kind, attempt cap, cooldown, RECURRING at the same step), standing permissions (default
none), a remembered Reject, and the ledger's acts (kept across folds, a released hand-off)."""

from __future__ import annotations

import datetime as dt

import pytest

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.handoffs.cancel.fresh import Evidence
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest, approval_prompt, asked
from sweep_core.handoffs.relaunch.plan import (
    asked_again,
    assess,
    decisions_view,
    failure_kind,
    relaunch_offer,
    standing_permission,
)
from sweep_core.ledger.acts import ActKind, add_act
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.given import mark_given, merge_given, release_given
from sweep_core.ledger.view import fold_job

NOW = dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC)
WEDGE = (
    "[liveness_stale] CRITICAL local RL 11 rl__a: no output for 185 min (cadence 30 min); 2 nodes held → kill-approval"
)


def _cfg(**kw) -> CancelConfig:
    return CancelConfig.model_validate(kw)


def _offer(ledger: Ledger | None = None, evidence: str = WEDGE, step: int | None = 5, state: str = "RUNNING", **kw):
    cfg = _cfg(**kw).relaunch
    job = fold_job(ledger or Ledger(), "local", "11", "rl__a")
    return relaunch_offer(job, evidence=evidence, state=state, step=step, cfg=cfg, now=NOW)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (WEDGE, "wedge"),
        (WEDGE + "; near the end: NCCL watchdog Timeout after 1800000 ms", "nccl_timeout"),
        (WEDGE + "; near the end: RPC call Timeout", "rpc_timeout"),
        (WEDGE + "; near the end: torch.OutOfMemoryError: CUDA out of memory", "oom"),
        (
            "[genuine_failure] CRITICAL local RL 9 rl__b: FAILED exit 1:0: Traceback (most recent call last)",
            "traceback",
        ),
        ("[rl_collapse] CRITICAL local RL 9 rl__b: 2 collapse signals at step 40 → cancel+salvage", "collapse"),
    ],
)
def test_failure_kind_is_read_off_the_flag(line: str, kind: str) -> None:
    assert failure_kind(line, _cfg().relaunch) == kind


def test_a_fixable_wedge_is_offered_and_what_a_relaunch_cannot_fix_never_is() -> None:
    ok = _offer()
    assert ok.relaunch and ok.kind == "wedge" and ok.attempt == 1 and "attempt 1 of 2" in ok.why
    oom = _offer(evidence=WEDGE + "; near the end: CUDA out of memory")
    assert not oom.relaunch and "failure kind oom: a relaunch cannot fix it" in oom.why
    assert not _offer(state="PENDING").relaunch


def _relaunched(ledger: Ledger, job_id: str, step: str, at: dt.datetime, name: str = "rl__a") -> Ledger:
    act = {"kind": ActKind.RELAUNCH, "run": "r1", "at": at.isoformat(), "step": step}
    return add_act(ledger, "local", job_id, name, act)


def test_wedged_again_at_the_step_of_its_relaunch_is_recurring_and_escalated() -> None:
    ledger = _relaunched(Ledger(), "11", "5", NOW - dt.timedelta(hours=3))
    again = _offer(ledger, step=5)
    assert not again.relaunch and again.recurring and "RECURRING: wedged again at step 5" in again.why
    moved_on = _offer(ledger, step=9)  # it trained on past the old wedge: a new wedge
    assert moved_on.relaunch and moved_on.attempt == 2


def test_attempt_cap_and_cooldown_per_series() -> None:
    ledger = Ledger(jobs={"local|10": LedgerEntry("local", "10", "rl__a", series="rl__a")})
    ledger.jobs["local|11"] = LedgerEntry("local", "11", "rl__a", series="rl__a")
    _relaunched(ledger, "10", "3", NOW - dt.timedelta(minutes=20))
    cool = _offer(ledger, step=7)
    assert not cool.relaunch and cool.why.startswith("cooldown: series rl__a relaunched 20 min ago")
    assert _offer(ledger, step=7, relaunch={"cooldown_minutes": 10}).relaunch
    _relaunched(ledger, "10", "4", NOW - dt.timedelta(hours=5))
    capped = _offer(ledger, step=7, relaunch={"cooldown_minutes": 0})
    assert not capped.relaunch and "attempt cap reached: 2 relaunch(es) of series rl__a (max 2)" in capped.why
    per_series = {"cooldown_minutes": 0, "series": [{"match": "^rl__", "max_attempts": 3}]}
    assert _offer(ledger, step=7, relaunch=per_series).relaunch


def test_standing_permissions_default_to_none_and_need_every_condition() -> None:
    kw = {"action": "relaunch", "rule": "liveness_stale", "cluster": "local", "name": "rl__a", "silent_s": 3 * 3600,
          "nodes": 2}  # fmt: skip
    assert standing_permission(_cfg().standing, **kw) == ""  # default: every act asks
    perms = _cfg(standing=[{"action": "relaunch", "rule": "liveness_stale", "clusters": ["local"], "name": "rl__.*",
                            "min_silent_hours": 2}])  # fmt: skip
    assert standing_permission(perms.standing, **kw) == "standing[0] relaunch liveness_stale silent>=2h"
    assert standing_permission(perms.standing, **{**kw, "silent_s": 3600}) == ""
    assert standing_permission(perms.standing, **{**kw, "name": "sft__a"}) == ""
    assert standing_permission(perms.standing, **{**kw, "action": "cancel"}) == ""


def test_a_reject_is_remembered_until_the_evidence_grows() -> None:
    ledger = add_act(
        Ledger(), "local", "11", "rl__a", {"kind": ActKind.REJECT, "by": "ana", "at": "t", "silent_s": 3600}
    )
    job = fold_job(ledger, "local", "11", "rl__a")
    ok, why = asked_again(job, 5400, 2.0)
    assert not ok and why == "rejected by ana at t (silent 60 min); asked again once silent >= 120 min"
    assert asked_again(job, 7200, 2.0) == (True, "")
    assert asked_again(fold_job(Ledger(), "local", "11", "rl__a"), 60, 2.0) == (True, "")


def test_acts_survive_the_ledger_round_trip_and_a_fold_and_release_their_hand_off() -> None:
    ledger = _relaunched(Ledger(), "11", "5", NOW)
    mark_given(ledger, "cancel", [{"cluster": "local", "job_id": "11"}], "sweep1")
    back = Ledger.from_dict(ledger.to_dict())
    assert back.jobs["local|11"].acts == ledger.jobs["local|11"].acts
    merged = merge_given(Ledger(), back)
    assert merged.jobs["local|11"].acts[0]["step"] == "5"
    release_given(merged, "cancel", [{"cluster": "local", "job_id": "11"}])
    assert "cancel" not in merged.jobs["local|11"].handoffs


def _decision(job_id: str = "11", nodes: str = "2") -> CancelDecision:
    req = CancelRequest("local", job_id, "rl__a", "kill-approval", WEDGE, rule="liveness_stale")
    return CancelDecision(req, "cancel", state="RUNNING", elapsed="3:00:00", nodes=nodes, nodelist="node[1-2]",
                          by_hand=False)  # fmt: skip  # the sweep's own request (authority.authorize)


def _ev(requeue: str = "1", silent: int = 3 * 3600) -> Evidence:
    return Evidence("11", "rl__a", NOW.timestamp().__int__(), "RUNNING", requeue, "0", "node[1-2]",
                    int(NOW.timestamp()) - silent, 5, "Training Step Progress: 5/10\n")  # fmt: skip


def test_assess_refuses_a_requeue_disabled_job_when_configured_and_applies_a_standing_permission() -> None:
    d = [_decision()]
    assess(
        d,
        {("local", "11"): _ev("0")},
        decisions_view(Ledger(), d),
        _cfg(relaunch={"requeue_disabled": "refuse"}),
        now=NOW,
        run_id="c1",
    )
    assert not d[0].offer["relaunch"] and "Requeue=0 (sbatch --no-requeue): refused" in d[0].offer["why"]
    d = [_decision()]
    assess(
        d, {("local", "11"): _ev("0")}, decisions_view(Ledger(), d), _cfg(), now=NOW, run_id="c1"
    )  # default: set Requeue=1 first
    assert d[0].offer["relaunch"] and d[0].offer["standing"] == ""
    stand = _cfg(
        standing=[{"action": "relaunch", "rule": "liveness_stale", "clusters": ["local"], "min_silent_hours": 2}]
    )
    d = [_decision()]
    assess(d, {("local", "11"): _ev()}, decisions_view(Ledger(), d), stand, now=NOW, run_id="c1")
    assert d[0].offer["standing"].startswith("standing[0]")
    subject, body = approval_prompt(d, dry_run=False, timeout_minutes=60)
    assert "0 job(s)" in subject and "Acted on under a standing permission (not asked): 1" in body


def test_the_prompt_offers_the_relaunch_with_the_evidence_and_escalates_a_recurring_wedge() -> None:
    d = [_decision()]
    assess(d, {("local", "11"): _ev()}, decisions_view(Ledger(), d), _cfg(), now=NOW, run_id="c1")
    subject, body = approval_prompt(d, dry_run=False, timeout_minutes=60)
    assert subject == "scancel 1 job(s) on local? (1 may be relaunched)"
    assert "**Cancel and relaunch** requeues it" in body and "silent 180 min" in body and "step 5" in body
    assert "Training Step Progress: 5/10" in body and "node[1-2]" in body
    ledger = _relaunched(Ledger(), "11", "5", NOW - dt.timedelta(hours=4))
    d = [_decision()]
    assess(d, {("local", "11"): _ev()}, decisions_view(ledger, d), _cfg(), now=NOW, run_id="c2")
    subject, body = approval_prompt(d, dry_run=False, timeout_minutes=60)
    assert subject.startswith("[ESCALATED] ") and "relaunch NOT offered" in body and "RECURRING" in body
    d = [_decision()]
    assess(
        d, {("local", "11"): _ev()}, decisions_view(ledger, d), _cfg(), now=NOW, run_id="r1"
    )  # the run that relaunched it
    assert d[0].verdict == "blocked" and d[0].reasons == ["already acted on by this run (r1)"]


def test_a_standing_cancel_covers_a_pending_chain_link_and_nothing_else() -> None:
    link = CancelRequest(
        "local",
        "12",
        "rl__a",
        "cancel",
        "[rl_resume_overshoot] WARN local RL 12 rl__a: past max_steps",
        rule="rl_resume_overshoot",
    )
    d = [CancelDecision(link, "cancel", state="PENDING", nodes="1", by_hand=False), _decision()]
    stand = _cfg(
        standing=[{"action": "cancel", "rule": "rl_resume_overshoot", "clusters": ["local"], "name": "rl__.*"}]
    )
    assess(d, {("local", "11"): _ev()}, decisions_view(Ledger(), d), stand, now=NOW, run_id="c1")
    assert d[0].offer["standing"] == "standing[0] cancel rl_resume_overshoot" and not d[0].offer["relaunch"]
    assert d[1].offer["standing"] == "" and d[1].offer["relaunch"]  # the wedge still asks a human
    by_hand = [CancelDecision(link, "cancel", state="PENDING", nodes="1")]  # the default: nothing backs it
    assess(by_hand, {}, decisions_view(Ledger(), by_hand), stand, now=NOW, run_id="c1")
    assert by_hand[0].offer["standing"] == "" and asked(by_hand) == by_hand  # never a standing act: asked
