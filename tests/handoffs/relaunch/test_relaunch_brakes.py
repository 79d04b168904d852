"""Brakes on acts without a human (issue 30, items 4-6), pure: standing permissions scoped to clusters
and full-match names, capped per run and per day; a circuit breaker when many of one cluster's jobs
are flagged at once (tests/alerts/test_breaker_alert.py: 120 silent jobs); a job that moved
since it was judged is left alone, saying how; the relaunch cap counted in the series' own record
(not the 50 acts kept per job), across a rename; RECURRING with no readable step; "cap reached"
escalated once; a failed ops.md command after the cancel still recorded."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest
import yaml
from cancel_fleet import NOW, STANDING, T, cancel_cfg, fleet, silent_evidence, stale_flag, wedged_decision
from sweep_runner import ROOT

from sweep_core.alerts.acts_notice import notices
from sweep_core.handoffs.cancel.fresh import Evidence, moved
from sweep_core.handoffs.cancel.outcome import Act, ActOutcome, Did
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest, approval_prompt
from sweep_core.handoffs.relaunch.brakes import apply_brakes
from sweep_core.handoffs.relaunch.plan import (
    assess,
    decisions_view,
    rejudge,
    relaunch_offer,
    standing_permission,
    view_of,
)
from sweep_core.handoffs.relaunch.remote import RelaunchJob, read_requeue
from sweep_core.ledger.acts import MAX_ACTS, ActKind, add_act, link_acts, record_acts
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.store import load_ledger
from sweep_core.ledger.view import LedgerView, fold_job
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.gather import GatherOutput

# --- scope: clusters, full-match names -------------------------------------------------------------


def test_a_standing_permission_names_its_clusters_and_matches_the_whole_name() -> None:
    with pytest.raises(ValueError, match="clusters"):
        cancel_cfg(standing=[{"action": "relaunch", "rule": "liveness_stale"}])  # no cluster named: a config error
    perms = cancel_cfg(standing=[STANDING]).standing
    kw = {"action": "relaunch", "rule": "liveness_stale", "silent_s": 3 * 3600, "nodes": 2}
    assert standing_permission(perms, cluster="a", name="rl__x", **kw).startswith("standing[0]")
    assert standing_permission(perms, cluster="c", name="rl__x", **kw) == ""  # another cluster: asks
    assert standing_permission(perms, cluster="a", name="sft__rl__x", **kw) == ""  # search would match
    prefix = cancel_cfg(standing=[{**STANDING, "name": "^rl__"}]).standing
    assert standing_permission(prefix, cluster="a", name="rl__x", **kw) == ""  # a prefix is not the whole name


# --- caps and the circuit breaker --------------------------------------------------------------------


def test_a_few_independent_wedges_on_a_large_cluster_keep_their_standing_permission() -> None:
    decisions, evidence = fleet(2)  # 2 flagged of 80 RUNNING: below min_jobs 3 and 30 %
    ccfg = cancel_cfg(standing=[STANDING])
    assess(decisions, evidence, decisions_view(Ledger(), decisions), ccfg, now=NOW, run_id="c1")
    assert (
        apply_brakes(
            decisions, decisions_view(Ledger(), decisions), ccfg, running={"a": 80, "b": 80}, now=NOW, run_id="c1"
        )
        == {}
    )
    assert all(d.offer["standing"] for d in decisions)
    few, ev3 = fleet(3)  # 3 of 5 RUNNING: 60 %, trips
    assess(few, ev3, decisions_view(Ledger(), few), ccfg, now=NOW, run_id="c1")
    trips = apply_brakes(few, decisions_view(Ledger(), few), ccfg, running={"a": 5, "b": 80}, now=NOW, run_id="c1")
    assert list(trips) == ["a"] and trips["a"].flagged == 3
    assert [bool(d.offer["standing"]) for d in few] == [False] * 3 + [True] * 3


def test_max_per_run_and_max_per_day_ask_a_human_beyond_them_saying_why() -> None:
    decisions, evidence = fleet(2)
    ccfg = cancel_cfg(standing=[{**STANDING, "max_per_run": 3, "max_per_day": 5}], breaker={"min_jobs": 50})
    assess(decisions, evidence, decisions_view(Ledger(), decisions), ccfg, now=NOW, run_id="c1")
    apply_brakes(decisions, decisions_view(Ledger(), decisions), ccfg, running={"a": 80, "b": 80}, now=NOW, run_id="c1")
    assert [bool(d.offer["standing"]) for d in decisions] == [True, True, True, False]
    assert decisions[3].offer["brake"] == (
        "standing[0] relaunch liveness_stale: max_per_run 3 reached in this run: a human decides the rest"
    )
    ledger = Ledger()  # 4 standing acts in the last 24 h (one 25 h ago does not count)
    for i, hours in enumerate((1, 2, 3, 20, 25)):
        at = (NOW - dt.timedelta(hours=hours)).isoformat()
        act = {"kind": ActKind.RELAUNCH, "run": f"r{i}", "at": at, "standing": "standing[0] relaunch liveness_stale"}
        add_act(ledger, "a", f"9{i}", "rl__old", act)
    decisions, _ = fleet(2)
    assess(decisions, evidence, decisions_view(ledger, decisions), ccfg, now=NOW, run_id="c1")
    apply_brakes(decisions, decisions_view(ledger, decisions), ccfg, running={"a": 80, "b": 80}, now=NOW, run_id="c1")
    assert [bool(d.offer["standing"]) for d in decisions] == [True, False, False, False]
    assert "max_per_day 5 reached (5 in the last 24 h)" in decisions[1].offer["brake"]


# --- fresh judgement right before the act --------------------------------------------------------------


def test_a_job_that_printed_again_since_the_approval_is_left_alone_saying_how_it_moved() -> None:
    d = wedged_decision("a", "11", "rl__x")
    ccfg = cancel_cfg(standing=[STANDING])
    assess(
        [d], {("a", "11"): silent_evidence("11", "rl__x")}, decisions_view(Ledger(), [d]), ccfg, now=NOW, run_id="c1"
    )
    assert d.offer["relaunch"] and d.offer["standing"]
    fresh = silent_evidence("11", "rl__x", silent=5, step=520, size=4400)
    why = rejudge(d, fresh, view_of(LedgerView(), d), ccfg, now=NOW, relaunch=True)
    assert why == "moved since the flag: silent 5 s now (was 7,800 s), step 520 (was 500)"
    same = silent_evidence("11", "rl__x", silent=7800 + 60)  # a minute older, nothing written: still acted on
    assert rejudge(d, Evidence(**{**same.to_dict(), "remote_now": T + 60, "last_output": T - 7800}), view_of(LedgerView(), d), ccfg,
                   now=NOW, relaunch=True) == ""  # fmt: skip
    requeued = Evidence(**{**same.to_dict(), "state": "PENDING", "nodelist": ""})
    assert "state PENDING (was RUNNING)" in rejudge(d, requeued, view_of(LedgerView(), d), ccfg, now=NOW, relaunch=True)
    moved_nodes = Evidence(**{**same.to_dict(), "nodelist": "gpu[3-4]"})
    assert moved(d.evidence, moved_nodes) == "moved since the flag: nodes gpu[3-4] (was gpu[1-2])"


def test_a_standing_permission_no_longer_met_on_the_evidence_read_now_is_not_used() -> None:
    d = wedged_decision("a", "11", "rl__x")
    ccfg = cancel_cfg(standing=[STANDING])
    assess(
        [d], {("a", "11"): silent_evidence("11", "rl__x")}, decisions_view(Ledger(), [d]), ccfg, now=NOW, run_id="c1"
    )
    stricter = cancel_cfg(standing=[{**STANDING, "min_silent_hours": 3}])  # config changed between flag and act
    why = rejudge(d, silent_evidence("11", "rl__x"), view_of(LedgerView(), d), stricter, now=NOW, relaunch=True)
    assert (
        why
        == "standing[0] relaunch liveness_stale silent>=2h no longer covers it on the evidence read now (silent 7,800 s)"
    )


def test_the_act_scripts_leave_a_moved_job_alone_in_the_same_session() -> None:
    """The requeue reader: a job the script found moved (record rc 3 + moved:/fresh:) is left alone."""
    from sweep_core.handoffs.cancel.fresh import moved_in_script

    out = GatherOutput(records={
        "relaunch:0": CommandResult(3, "moved since it was judged: left alone", ""),
        "moved:0": CommandResult(3, f"{T - 5} 4400 {T}", ""),
        "fresh:0": CommandResult(0, "Training Step Progress: 520/1000\n", ""),
    }, complete=True, marker="MK")  # fmt: skip
    left = read_requeue(out, [RelaunchJob("11", "rl__x")], "")["11"]
    assert left.did == Did.LEFT_ALONE and left.text.startswith("left alone") and not left.relaunch_attempt
    how = moved_in_script(
        out, 0, "11", "rl__x", silent_evidence("11", "rl__x").to_dict(), [r"Training Step Progress: (\d+)"]
    )
    assert how == "moved since the flag: silent 5 s now (was 7,800 s), step 520 (was 500)"


# --- the relaunch cap: its own record, across renames; RECURRING with no step; escalated once ------------


def _offer(ledger: Ledger, job_id: str, name: str, step: int | None = 7, **relaunch):
    cfg = cancel_cfg(relaunch={"cooldown_minutes": 0, **relaunch}).relaunch
    job = fold_job(ledger, "a", job_id, name)
    return relaunch_offer(job, evidence=stale_flag("a", job_id, name), state="RUNNING", step=step, cfg=cfg, now=NOW)


def _relaunch(ledger: Ledger, job_id: str, name: str, step: str, hours_ago: float, series: str = "") -> None:
    at = (NOW - dt.timedelta(hours=hours_ago)).isoformat()
    add_act(ledger, "a", job_id, name, {"kind": ActKind.RELAUNCH, "run": f"r{hours_ago}", "at": at, "step": step,
                                        **({"series": series} if series else {})})  # fmt: skip


def test_the_cap_counts_relaunches_that_slid_out_of_the_job_s_acts() -> None:
    ledger = Ledger()
    _relaunch(ledger, "11", "rl__x", "3", 30)
    _relaunch(ledger, "11", "rl__x", "4", 20)
    for i in range(MAX_ACTS):  # unanswered re-asks push the relaunches out of the 50 acts kept
        add_act(ledger, "a", "11", "rl__x", {"kind": ActKind.UNANSWERED, "run": f"u{i}", "at": f"t{i}"})
    assert all(a["kind"] == ActKind.UNANSWERED for a in ledger.jobs["a|11"].acts)
    capped = _offer(ledger, "11", "rl__x")
    assert not capped.relaunch and capped.capped and "attempt cap reached: 2 relaunch(es)" in capped.why
    back = Ledger.from_dict(ledger.to_dict())  # the record survives the round trip
    assert back.relaunches["a|rl__x"].count == 2 and _offer(back, "11", "rl__x").capped


def test_a_relaunch_command_that_renames_the_job_stays_in_the_same_series(tmp_path) -> None:
    """Six renames in a row were six "attempt 1 of 2": the new id joins the old one's series."""
    name, job_id = "rl__x", "11"
    for n in range(3):
        offer = _offer(load_ledger(tmp_path), job_id, name, step=10 * (n + 1))
        if n == 2:
            assert not offer.relaunch and offer.capped and "series a|rl__x" in offer.why, offer
            break
        assert offer.relaunch and offer.attempt == n + 1, offer
        new_id, new_name = f"{20 + n}", f"rl__x_r{n + 1}"
        base = {"run": f"c{n}", "at": (NOW - dt.timedelta(hours=5 - n)).isoformat(), "step": str(10 * (n + 1)),
                "series": offer.series}  # fmt: skip
        acts = [("a", job_id, name, {**base, "kind": ActKind.RELAUNCH, "new_job_id": new_id}),
                *link_acts("a", job_id, new_id, new_name, base)]  # fmt: skip
        record_acts(tmp_path, acts)
        job_id, name = new_id, new_name
    assert load_ledger(tmp_path).relaunches["a|rl__x"].count == 2


def test_a_job_with_no_readable_step_is_recurring_on_its_second_wedge() -> None:
    ledger = Ledger()
    assert _offer(ledger, "11", "rl__x", step=None).relaunch  # first wedge: relaunched
    _relaunch(ledger, "11", "rl__x", "", 3)
    again = _offer(ledger, "11", "rl__x", step=None)
    assert not again.relaunch and again.recurring and "RECURRING: wedged again with no readable step" in again.why


def test_cap_reached_is_escalated_once_per_series(tmp_path, monkeypatch) -> None:
    from sweep_operators.relaunch_tasks import remember

    conf = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text())
    conf["run_log_dir"] = str(tmp_path)
    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", str(tmp_path))
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(conf))
    for h in (30, 20):
        record_acts(tmp_path, [("a", "11", "rl__x", {"kind": ActKind.RELAUNCH, "run": f"r{h}", "step": str(h),
                                                    "at": (NOW - dt.timedelta(hours=h)).isoformat()})])  # fmt: skip
    for run in ("c1", "c2"):
        d = wedged_decision("a", "11", "rl__x")
        d.offer = _offer(load_ledger(tmp_path), "11", "rl__x").to_dict()
        assert d.offer["capped"]
        remember(str(tmp_path / "sweep.yaml"), {"run_id": run}, [d], {}, {"chosen_options": ["Reject"]}, {}, False)
    ledger = load_ledger(tmp_path)
    escalations = [a for a in ledger.jobs["a|11"].acts if a["kind"] == ActKind.ESCALATED]
    assert len(escalations) == 1 and escalations[0]["cap"] == "1"
    assert ledger.relaunches["a|rl__x"].escalated
    assert "(escalated at " in _offer(ledger, "11", "rl__x").why
    assert approval_prompt([d], dry_run=False, timeout_minutes=60)[0].startswith("[ESCALATED] ")
    (n,) = notices([d.to_dict()], {}, run_id="c2", links=[])  # one critical notice, keyed by the series
    assert n.key == "capped|a|rl__x" and "relaunch cap reached" in n.message.title


def test_a_command_failing_after_the_cancel_is_a_recorded_relaunch_attempt() -> None:
    from sweep_core.handoffs.cancel.remember import outcome_acts

    job = RelaunchJob("11", "rl__x", command=("sbatch", "--parsable", "r.sbatch"))
    out = GatherOutput(records={"scancel:0": CommandResult(0, "", ""),
                                "relaunch:0": CommandResult(1, "", "sbatch: error: Batch job submission failed")},
                       complete=True, marker="MK")  # fmt: skip
    res = read_requeue(out, [job], "")["11"]
    assert res.text.startswith("cancelled; the ops.md relaunch command failed after the cancel (exit 1)"), res
    assert res.did == Did.COMMAND_FAILED and res.relaunch_attempt
    d = wedged_decision("a", "11", "rl__x")
    d.offer = {"relaunch": True, "series": "a|rl__x"}
    acts, release = outcome_acts([d], {"11": res}, "c1", NOW.isoformat(), "ana")
    assert [a[3]["kind"] for a in acts] == [ActKind.RELAUNCH] and release
    ledger = Ledger()
    for c, j, n, a in acts:
        add_act(ledger, c, j, n, a)
    assert ledger.relaunches["a|rl__x"].count == 1


def test_a_collapsed_job_that_keeps_logging_is_still_cancelled() -> None:
    """Only a flag that IS the log's silence is answered by a log write: a collapsed RL job (or a
    deep-dive KILL) keeps printing and is cancelled all the same; its state is still re-checked."""
    from sweep_core.handoffs.cancel.usecase import scancel_approved

    req = CancelRequest("a", "11", "rl__x", "cancel-salvage", "[rl_collapse] CRITICAL a RL 11 rl__x: reward collapsed",
                        rule="rl_collapse")  # fmt: skip
    d = CancelDecision(
        req, "cancel", state="RUNNING", nodes="2", by_hand=False, evidence=silent_evidence("11", "rl__x").to_dict()
    )
    printing = silent_evidence("11", "rl__x", silent=5, step=520, size=4400)
    assert rejudge(d, printing, view_of(LedgerView(), d), cancel_cfg(), now=NOW, relaunch=False) == ""
    assert "state PENDING" in rejudge(d, Evidence(**{**printing.to_dict(), "state": "PENDING"}), view_of(LedgerView(), d), cancel_cfg(),
                                      now=NOW, relaunch=False)  # fmt: skip
    scripts = []
    wedged = wedged_decision("a", "12", "rl__y")
    wedged.evidence = silent_evidence("12", "rl__y").to_dict()
    cfg = SimpleNamespace(name="a", scheduler="slurm", user="sweep")
    scancel_approved([d, wedged], confirm_timeout_s=5, dry_run=False, load_cluster=lambda _: cfg,
                     run_script=lambda _c, script, _m, _w: (scripts.append(script), (None, "stub: not sent"))[1],
                     say=print)  # fmt: skip
    assert "LOGS=('' /logs/rl__y.out)" in scripts[0]  # only the silent job's log is checked before its scancel


def test_an_error_on_a_later_cluster_leaves_the_earlier_cluster_s_acts_recorded(tmp_path, monkeypatch) -> None:
    """The act's evidence, relaunches and the other cluster's lost outcome reach the ledger in ONE call
    at the end: the earlier cluster's relaunch counted, the failed cluster's evidence kept, no act claimed."""
    from sweep_core.handoffs.relaunch import usecase
    from sweep_operators import relaunch_tasks

    conf = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text())
    conf["run_log_dir"] = str(tmp_path)
    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", str(tmp_path))
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(conf))

    def act_cluster(cluster, mine, *args):
        acts = args[-1]  # the act's list: the evidence kept before a requeue goes in with the rest
        acts += [(cluster, d.request.job_id, d.request.name, {"kind": ActKind.EVIDENCE, "run": "c1"}) for d in mine]
        if cluster == "b":
            raise ConnectionResetError("session dropped")
        said = "requeued (PENDING, Restarts=1, starts again ~x)"
        return {d.request.job_id: ActOutcome(Did.REQUEUED, said, Act.RELAUNCH) for d in mine}

    writes: list[int] = []
    real = usecase.record_acts
    monkeypatch.setattr(usecase, "record_acts", lambda *a, **k: (writes.append(len(a[1])), real(*a, **k))[1])
    monkeypatch.setattr(usecase, "act_on_cluster", act_cluster)
    decisions = [wedged_decision("a", "11", "rl__x"), wedged_decision("b", "12", "rl__y")]
    for d in decisions:
        d.offer = {"relaunch": True, "series": f"{d.request.cluster}|{d.request.name}"}
    got = relaunch_tasks.act(decisions, True, ccfg=cancel_cfg(), limits=None, load=None, sweep_yaml=str(tmp_path / "sweep.yaml"),
                             context={"run_id": "c1"}, dry_run=False, by="ana")  # fmt: skip
    assert got["b"]["12"] == ActOutcome(Did.ERROR, "outcome unknown: ConnectionResetError: session dropped")
    ledger = load_ledger(tmp_path)
    assert writes == [3]  # every act of the run in ONE ledger call, at the end
    assert [a["kind"] for a in ledger.jobs["a|11"].acts] == [ActKind.EVIDENCE, ActKind.RELAUNCH]
    assert ledger.relaunches["a|rl__x"].count == 1
    assert [a["kind"] for a in ledger.jobs["b|12"].acts] == [ActKind.EVIDENCE]  # kept; no relaunch claimed


def test_a_task_timeout_on_a_later_cluster_still_records_the_earlier_cluster_s_relaunch(tmp_path, monkeypatch) -> None:
    """Airflow's task timeout is a BaseException, not an Exception: the act's one ledger write still
    runs (the earlier cluster's relaunch counted in its series), and the timeout is raised on."""
    from sweep_core.handoffs.relaunch import usecase

    class Timeout(BaseException):  # what airflow.sdk.exceptions.AirflowTaskTimeout derives from
        pass

    def act_cluster(cluster, mine, *_args):
        if cluster == "b":
            raise Timeout("Timeout, PID: 1")
        return {d.request.job_id: ActOutcome(Did.REQUEUED, "requeued (PENDING)", Act.RELAUNCH) for d in mine}

    monkeypatch.setattr(usecase, "act_on_cluster", act_cluster)
    decisions = [wedged_decision("a", "11", "rl__x"), wedged_decision("b", "12", "rl__y")]
    for d in decisions:
        d.offer = {"relaunch": True, "series": f"{d.request.cluster}|{d.request.name}"}
    io = usecase.CancelPorts(load=None, run_script=None, stop_iris=None, run_local=None, say=print,
                             note=lambda *_: None, log_dir=str(tmp_path), run_id="c1", now=lambda: NOW.isoformat())  # fmt: skip
    with pytest.raises(Timeout):
        usecase.act(decisions, True, cancel_cfg(), io, LedgerView(), dry_run=False, by="ana")
    ledger = load_ledger(tmp_path)
    assert [a["kind"] for a in ledger.jobs["a|11"].acts] == [ActKind.RELAUNCH]
    assert ledger.relaunches["a|rl__x"].count == 1 and "b|12" not in ledger.jobs
