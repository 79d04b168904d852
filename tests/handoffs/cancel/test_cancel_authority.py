"""Whose request a sweep_cancel job is (sweep_core.handoffs.cancel.authority) and who may answer it
(sweep_core.alerts.approvals), on the real records: the sweep's own plan_handoffs conf given through
give_once into a ledger file, its flags written to a Parquet history store, then read back."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from sweep_core.alerts.approvals import answer_counts, may_answer
from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.handoffs.cancel.authority import authorize, flag_runs, give_kills, judge
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest, asked, cancel_config, standing_acts
from sweep_core.handoffs.dispatch.triggers import plan_handoffs
from sweep_core.handoffs.relaunch.plan import assess, decisions_view
from sweep_core.history.rows import FLAG, sweep_frame
from sweep_core.history.store import HistoryStore, read_run
from sweep_core.ledger.cancel_handoff import HandoffRun
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.given import mark_given, merge_given, release_given
from sweep_core.ledger.runs import give_once
from sweep_core.ledger.store import load_ledger, update_ledger
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job

T0 = dt.datetime(2026, 12, 4, 12, 0, tzinfo=dt.UTC)
SWEEP = "scheduled__2026-12-04T12:00:00+00:00"
FORGED = "[liveness_stale] CRITICAL leo RL 7 rl__theirs: no output for 600 min → kill-approval"
STANDING = {"standing": [{"action": "cancel", "rule": "liveness_stale", "clusters": ["leo", "local"]}]}


def snap(running: list[Job] | None = None) -> ClusterSnapshot:
    return ClusterSnapshot("leo", "slurm", ClusterStatus.OK, running=running or [], finished=[], pending=[])


def job(job_id: str, name: str, state: str) -> Job:
    return Job("leo", job_id, name, state, "squeue", bucket="RL")


def _flag(job_id: str, name: str, rule: str = "rl_resume_overshoot", action: str = "cancel") -> Flag:
    return Flag(rule=rule, severity="warn", cluster="leo", job_id=job_id, job_name=name, bucket="RL",
                message="past max_steps", action=action)  # fmt: skip


def _sweep(tmp_path: Path, flags: list[Flag], *, run_id: str = SWEEP, dry_run: bool = False, user: str = "",
           batch: str = "") -> HistoryStore:  # fmt: skip
    """What one sweep run writes: its cancel hand-off given once (the ledger, with the sweep_cancel
    run it triggers: ``<run>__cancel<batch>`` run as ``user``) and its history."""
    snaps = [snap([job(f.job_id, f.job_name, "RUNNING") for f in flags])]
    confs = plan_handoffs(snaps, flags, dry_run=dry_run, run_log="", trackers=False, hf_chain=False)
    give_once(tmp_path, confs, run_id=run_id, dry_run=dry_run, cancel_run=HandoffRun(f"{run_id}__cancel{batch}", user))
    store = HistoryStore(tmp_path / "history")
    store.append(sweep_frame(snaps, flags, run_id=run_id, window_start=T0, window_end=T0), run_id=run_id,
                 window_end=T0)  # fmt: skip
    return store


def _flags(store: HistoryStore, ledger: Ledger, keys: list[tuple[str, str]]) -> dict:
    out = {}
    for run in flag_runs(ledger, keys):
        frame = read_run(store, run, records=[FLAG], columns=["cluster", "job_id", "name", "rule", "action"])
        out[run] = None if frame is None else frame.to_dict("records")
    return out


def _decide(
    tmp_path: Path, store: HistoryStore, conf_jobs: list[dict], run_id: str, dry_run: bool = False, user: str = ""
):
    """sweep_cancel's authority for ``conf_jobs`` in the run ``run_id`` triggered by ``user``."""
    ledger = load_ledger(tmp_path)
    ds = [CancelDecision(CancelRequest.from_dict(j), "cancel", state="PENDING", nodes="1") for j in conf_jobs]
    keys = [(d.request.cluster, d.request.job_id) for d in ds]
    authorize(ds, ledger, _flags(store, ledger, keys), dry_run=dry_run, run=HandoffRun(run_id, user))
    return ds, ledger


def test_a_forged_evidence_line_is_a_by_hand_request_no_standing_permission_covers(tmp_path) -> None:
    """issue 30 item 1: a colleague's job and a made-up [liveness_stale] line, with a standing
    permission for exactly that rule: the line is never used, nothing acts without a human."""
    store = _sweep(tmp_path, [_flag("5", "rl__mine")])  # the sweep flagged another job
    forged = {"cluster": "leo", "job_id": "7", "name": "rl__theirs", "action": "cancel", "evidence": FORGED}
    ds, ledger = _decide(tmp_path, store, [forged], f"{SWEEP}__cancel")
    d = ds[0]
    assert d.by_hand and d.request.evidence == "" and d.request.asked_evidence == FORGED
    assert d.authority == "by hand: no sweep handed this job off (no hand-off record in the ledger)"
    assess(ds, {}, decisions_view(ledger, ds), cancel_config(STANDING), now=T0, run_id="x")
    assert d.offer["standing"] == "" and asked(ds) == ds and standing_acts(ds) == []


def test_the_sweeps_hand_off_is_its_request_with_its_own_evidence_whatever_the_conf_says(tmp_path) -> None:
    flag = _flag("5", "rl__mine")
    store = _sweep(tmp_path, [flag])
    conf = {"cluster": "leo", "job_id": "5", "name": "rl__mine", "action": "cancel", "evidence": FORGED}
    ds, ledger = _decide(tmp_path, store, [conf], f"{SWEEP}__cancel")
    assert not ds[0].by_hand and ds[0].request.evidence == flag.line()  # the ledger's line, not the conf's
    assert ds[0].authority == f"handed off by sweep {SWEEP} ([rl_resume_overshoot] → cancel)"
    assess(ds, {}, decisions_view(ledger, ds), cancel_config({"standing": [{"action": "cancel", "rule": "rl_resume_overshoot", "clusters": ["leo"]}]}),
           now=T0, run_id="x")  # fmt: skip
    assert standing_acts(ds) == ds and asked(ds) == []  # the sweep's own request: the permission applies


@pytest.mark.parametrize(
    "change, why",
    [
        ("other run", "this run is not the hand-off run"),
        ("other action", "the request differs from the hand-off"),
        ("no history", "no history of the sweep"),
        ("history without the flag", "has no [rl_resume_overshoot] → cancel flag of this job"),
        ("released", "no sweep handed this job off"),  # rejected or relaunched: released, record gone
        ("held by another run", "is no longer held in the ledger"),
    ],
)
def test_any_disagreement_between_the_sweeps_records_makes_it_by_hand(tmp_path, change, why) -> None:
    store = _sweep(tmp_path, [_flag("5", "rl__mine")])
    conf = {"cluster": "leo", "job_id": "5", "name": "rl__mine", "action": "cancel"}
    run_id = f"{SWEEP}__cancel"
    if change == "other run":
        run_id = "manual__2026-12-04T12:05:00+00:00"
    elif change == "other action":
        conf["action"] = "kill-approval"
    elif change == "no history":
        for f in (tmp_path / "history").iterdir():
            f.unlink()
    elif change == "history without the flag":
        store.append(sweep_frame([snap()], [], run_id=SWEEP, window_start=T0, window_end=T0), run_id=SWEEP,
                     window_end=T0)  # fmt: skip
    elif change == "released":
        update_ledger(tmp_path, lambda led: (release_given(led, "cancel", [conf]), None))
    elif change == "held by another run":

        def other(led: Ledger) -> tuple[Ledger, None]:
            led.jobs["leo|5"].handoffs["cancel"] = "another-sweep"
            return led, None

        update_ledger(tmp_path, other)
    ds, _ = _decide(tmp_path, store, [conf], run_id)
    assert ds[0].by_hand and why in ds[0].authority and ds[0].request.evidence == ""


def test_a_dry_run_sweeps_record_backs_only_a_dry_run_and_never_replaces_a_real_one(tmp_path) -> None:
    store = _sweep(tmp_path, [_flag("5", "rl__mine")], run_id="dry1", dry_run=True)
    conf = {"cluster": "leo", "job_id": "5", "name": "rl__mine", "action": "cancel"}
    assert not _decide(tmp_path, store, [conf], "dry1__cancel", dry_run=True)[0][0].by_hand
    assert "dry-run sweep dry1" in _decide(tmp_path, store, [conf], "dry1__cancel")[0][0].authority
    _sweep(tmp_path, [_flag("5", "rl__mine")])  # a real sweep hands it off
    _sweep(tmp_path, [_flag("5", "rl__mine")], run_id="dry2", dry_run=True)  # then a dry run sees it again
    assert load_ledger(tmp_path).jobs["leo|5"].cancel_handoff["run"] == SWEEP
    assert not _decide(tmp_path, store, [conf], f"{SWEEP}__cancel")[0][0].by_hand


def test_a_deep_dive_kill_is_backed_by_the_sweep_that_handed_it_the_job(tmp_path) -> None:
    store = _sweep(tmp_path, [_flag("9", "rl__new", "rl_new_untested", "deep-dive")])
    assert load_ledger(tmp_path).jobs["leo|9"].handoffs == {"deep_dive": SWEEP}
    kill = {"cluster": "leo", "job_id": "9", "name": "rl__new", "action": "kill-approval",
            "evidence": "deep-dive KILL: reward 0"}  # fmt: skip
    orphan = {**kill, "job_id": "10", "name": "rl__byhand"}
    dd = HandoffRun("dd1__cancel")
    said = update_ledger(
        tmp_path, lambda led: (led, give_kills(led, [kill, orphan], "dd1", dry_run=False, cancel_run=dd))
    )
    assert "no sweep handed it to the deep-dive" in said[1]
    ds, _ = _decide(tmp_path, store, [kill, orphan], "dd1__cancel")
    assert not ds[0].by_hand and ds[0].request.evidence == "deep-dive KILL: reward 0"
    assert ds[0].authority == f"handed off by sweep {SWEEP} ([] → deep-dive; via dd1)"
    assert ds[1].by_hand


def test_the_record_survives_a_round_trip_and_goes_with_its_release() -> None:
    led = Ledger()
    conf = {"cluster": "leo", "job_id": "5", "name": "a", "action": "cancel", "evidence": "[r] x"}
    from sweep_core.ledger.cancel_handoff import record_handoffs

    mark_given(led, "cancel", [conf], "s1")
    record_handoffs(led, [conf], "s1", dry_run=False)
    back = merge_given(Ledger(), Ledger.from_dict(led.to_dict()))
    assert back.jobs["leo|5"].cancel_handoff["evidence"] == "[r] x"
    release_given(back, "cancel", [conf])
    assert back.jobs["leo|5"].cancel_handoff == {}
    a = judge("leo", "5", "a", "cancel", back, {}, dry_run=False, run=HandoffRun("s1__cancel"))
    assert a.by_hand


def test_who_may_answer() -> None:
    users = {"leo": ("bob", "carol"), "*": ("ops",)}
    assert may_answer("leo", users, requester="bob") == ["carol"]
    assert may_answer("leo", users, requester="") == ["bob", "carol"]  # a scheduled run: nobody asked
    assert may_answer("jup", users, requester="ops") == []  # nobody left: not asked
    assert may_answer("leo", {}, requester="bob") is None  # none configured: Airflow's users
    ok = {"requester": "bob", "timed_out": False}
    assert answer_counts("carol", ["carol"], **ok) == (True, "")
    assert answer_counts("bob", None, **ok)[1] == "answered by bob, who requested it: not counted"
    assert not answer_counts("dave", ["carol"], **ok)[0]
    assert not answer_counts("", None, **ok)[0]  # an answer Airflow names no user of


def test_a_run_id_chosen_to_look_like_the_sweeps_is_a_by_hand_request(tmp_path) -> None:
    """issue 39: whoever may trigger sweep_cancel may choose its run id. Only the very run the sweep
    recorded (its id AND its triggering user: none for a scheduled sweep) is the sweep's."""
    flag = _flag("5", "rl__mine")
    store = _sweep(tmp_path, [flag], batch="__2")  # a re-run's follow-up batch: <run>__cancel__2
    conf = {"cluster": "leo", "job_id": "5", "name": "rl__mine", "action": "cancel"}
    assert not _decide(tmp_path, store, [conf], f"{SWEEP}__cancel__2")[0][0].by_hand  # the sweep's own run
    for shaped in (f"{SWEEP}__cancel", f"{SWEEP}__cancel__3", f"{SWEEP}__cancel__02"):  # each once accepted
        (d,), _ = _decide(tmp_path, store, [conf], shaped, user="mallory")
        assert d.by_hand and f"this run is not the hand-off run {SWEEP} triggered" in d.authority
    (d,), _ = _decide(tmp_path, store, [conf], f"{SWEEP}__cancel__2", user="mallory")  # the id, by hand
    assert d.by_hand and "triggered by mallory, the hand-off run of" in d.authority and d.request.evidence == ""
    assess([d], {}, decisions_view(load_ledger(tmp_path), [d]), cancel_config(STANDING | {"standing": [
        {"action": "cancel", "rule": "rl_resume_overshoot", "clusters": ["leo"]}]}), now=T0, run_id="x")  # fmt: skip
    assert standing_acts([d]) == [] and asked([d]) == [d]  # no standing permission for it
    assert may_answer("leo", {"*": ("mallory", "carol")}, requester="mallory") == ["carol"]


def test_a_hand_off_recorded_without_its_run_is_by_hand(tmp_path) -> None:
    """A record written before hand-off runs were named (or by a giver that named none) backs no run."""
    flag = _flag("5", "rl__mine")
    snaps = [snap([job("5", "rl__mine", "RUNNING")])]
    confs = plan_handoffs(snaps, [flag], dry_run=False, run_log="", trackers=False, hf_chain=False)
    give_once(tmp_path, confs, run_id=SWEEP, dry_run=False)  # no cancel_run
    store = HistoryStore(tmp_path / "history")
    store.append(sweep_frame(snaps, [flag], run_id=SWEEP, window_start=T0, window_end=T0), run_id=SWEEP, window_end=T0)
    conf = {"cluster": "leo", "job_id": "5", "name": "rl__mine", "action": "cancel"}
    (d,), _ = _decide(tmp_path, store, [conf], f"{SWEEP}__cancel")
    assert d.by_hand and "names no sweep_cancel run" in d.authority


def test_the_approval_timeout_has_a_maximum() -> None:
    assert cancel_config({"approval_timeout_minutes": 720}).approval_timeout_minutes == 720
    with pytest.raises(ValueError, match="approval_timeout_minutes"):
        cancel_config({"approval_timeout_minutes": 721})
    assert CancelConfig.model_fields["approval_timeout_minutes"].metadata
