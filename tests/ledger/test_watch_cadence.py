"""The watch (every 5 minutes) and the report sweep (every 3 hours) fold into one ledger: a watch
run is never taken for a re-run of the report run whose window ends with it (nor the reverse), and a
watch fold between two report sweeps neither loses nor repeats a hand-off either of them gave."""

from __future__ import annotations

import datetime as dt

from test_ledger import job, snap

from sweep_core.ledger.runs import fold_sweep_run, give_once
from sweep_core.ledger.store import load_ledger
from sweep_core.timing.cadence import is_watch_run, rules_of, same_cadence, watch_run_id

T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)
REPORT = "scheduled__2026-12-03T00:00:00+00:00"  # the report sweep [00:00, 03:00)
REPORT2 = "scheduled__2026-12-03T03:00:00+00:00"  # the next one [03:00, 06:00)
WATCH = watch_run_id("scheduled__2026-12-03T02:55:00+00:00")  # the watch [02:55, 03:00): ends with REPORT
WATCH2 = watch_run_id("scheduled__2026-12-03T03:00:00+00:00")  # [03:00, 03:05): its DAG run id is REPORT2's


def fold(tmp_path, snaps, minutes: int, run: str) -> list[str]:
    end = T0 + dt.timedelta(minutes=minutes)
    return [c.line for c in fold_sweep_run(tmp_path, snaps, run_id=run, window_end=end)]


def cancel_conf(*jids: str) -> dict:
    jobs = [{"cluster": "leo", "job_id": j, "name": f"rl__{j}", "action": "kill-approval", "rule": "liveness_stale",
             "evidence": f"[liveness_stale] leo rl__{j}: no output for 95 min"} for j in jids]  # fmt: skip
    return {"cancel": {"dry_run": False, "run_log": "", "jobs": jobs}}


def cleanup_conf(*jids: str) -> dict:
    jobs = [{"cluster": "leo", "job_id": j, "name": f"sft__{j}", "flavor": "sft-job-cleanup"} for j in jids]
    return {"cleanup": {"dry_run": False, "run_log": "", "jobs": jobs, "reclaim_clusters": []}}


def test_watch_run_ids_differ_from_the_report_runs_of_the_same_logical_date() -> None:
    assert watch_run_id(REPORT2) != REPORT2 and watch_run_id(WATCH2) == WATCH2  # prefixed once
    assert is_watch_run(WATCH) and not is_watch_run(REPORT)
    assert same_cadence(WATCH, WATCH2) and not same_cadence(WATCH, REPORT)
    assert rules_of(WATCH, ["liveness_stale"]) == {"liveness_stale"} and rules_of(REPORT, ["liveness_stale"]) is None


def test_a_watch_whose_window_ends_with_the_report_sweeps_folds_on_top_and_tells_nothing_twice(tmp_path) -> None:
    fold(tmp_path, [snap([job("1", "rl__1", "RUNNING")])], 0, "scheduled__2026-12-02T21:00:00+00:00")
    at_three = [snap([job("1", "rl__1", "RUNNING"), job("2", "sft__2", "RUNNING")])]
    assert fold(tmp_path, at_three, 180, REPORT) == ["new: leo SFT 2 sft__2 (RUNNING)"]
    # the watch's window [02:55, 03:00) ends with the report's: it is not a re-run of REPORT (it
    # would fold against the ledger before REPORT and tell job 2 new a second time)
    assert fold(tmp_path, at_three, 180, WATCH) == ["no change since the previous sweep"]
    assert load_ledger(tmp_path).run_id == WATCH
    # a re-run of the report after the watch folded is no longer the latest run's re-run: it folds on
    # top too (job 2 is not told new a third time); a re-run of the watch is the watch's own again
    assert fold(tmp_path, at_three, 180, REPORT) == ["no change since the previous sweep"]
    assert fold(tmp_path, at_three, 180, REPORT) == ["no change since the previous sweep"]


def test_a_watch_fold_between_two_report_sweeps_neither_loses_nor_repeats_a_hand_off(tmp_path) -> None:
    fold(tmp_path, [snap([job("1", "rl__1", "RUNNING")], [job("3", "sft__3", "COMPLETED", "sacct")])], 180, REPORT)
    confs, notes = give_once(tmp_path, cleanup_conf("3"), run_id=REPORT, dry_run=False)
    assert confs["cleanup"]["jobs"] and notes == []
    # the watch at 03:05 finds job 1 wedged and asks for the kill (its cancel hand-off)
    fold(tmp_path, [snap([job("1", "rl__1", "RUNNING", stale=True)])], 185, WATCH2)
    confs, notes = give_once(tmp_path, cancel_conf("1"), run_id=WATCH2, dry_run=False)
    assert [j["job_id"] for j in confs["cancel"]["jobs"]] == ["1"] and notes == []
    ledger = load_ledger(tmp_path)
    assert ledger.jobs["leo|3"].handoffs == {"cleanup": REPORT}  # the report's hand-off survives the watch's fold
    assert ledger.jobs["leo|1"].cancel_handoff["run"] == WATCH2  # what sweep_cancel trusts: the watch's flag
    # REPORT re-run after the watch folded (it folds against the ledger before its first fold): the
    # watch's hand-off is kept, and neither hand-off is given again
    fold(tmp_path, [snap([job("1", "rl__1", "RUNNING")], [job("3", "sft__3", "COMPLETED", "sacct")])], 180, REPORT)
    assert load_ledger(tmp_path).jobs["leo|1"].handoffs == {"cancel": WATCH2}
    confs, notes = give_once(tmp_path, {**cleanup_conf("3"), **cancel_conf("1")}, run_id=REPORT, dry_run=False,
                             handed={"cleanup": True, "cancel": False})  # fmt: skip
    assert confs["cleanup"] is None and confs["cancel"] is None
    assert notes == ["cleanup: leo 3 sft__3 in this run's hand-off run already",
                     f"cancel: leo 1 rl__1 already handed off by {WATCH2}"]  # fmt: skip
    # the next report sweep flags the same wedge: the watch gave it, the report does not give it again
    fold(tmp_path, [snap([job("1", "rl__1", "RUNNING", stale=True)])], 360, REPORT2)
    confs, notes = give_once(tmp_path, cancel_conf("1"), run_id=REPORT2, dry_run=False)
    assert confs["cancel"] is None and notes == [f"cancel: leo 1 rl__1 already handed off by {WATCH2}"]
    # ... and the next watch does not either (the report's cleanup is not the watch's to give)
    fold(
        tmp_path,
        [snap([job("1", "rl__1", "RUNNING", stale=True)])],
        365,
        watch_run_id(REPORT2[:-14] + "06:00:00+00:00"),
    )
    confs, notes = give_once(tmp_path, cancel_conf("1"), run_id=watch_run_id("x"), dry_run=False)
    assert confs["cancel"] is None and len(notes) == 1
    assert load_ledger(tmp_path).jobs["leo|3"].handoffs == {"cleanup": REPORT}


def test_a_report_run_sharing_the_watch_runs_dag_run_id_does_not_take_its_hand_off_for_its_own(tmp_path) -> None:
    """Both DAGs name a scheduled run ``scheduled__<logical date>``: without the watch's prefix, the
    report run of 03:00 would read the watch's hand-off as its own and give it again."""
    fold(tmp_path, [snap([job("1", "rl__1", "RUNNING", stale=True)])], 185, WATCH2)
    give_once(tmp_path, cancel_conf("1"), run_id=WATCH2, dry_run=False)
    fold(tmp_path, [snap([job("1", "rl__1", "RUNNING", stale=True)])], 360, REPORT2)
    confs, notes = give_once(tmp_path, cancel_conf("1"), run_id=REPORT2, dry_run=False)
    assert WATCH2.endswith(REPORT2) and confs["cancel"] is None and len(notes) == 1


def test_the_report_tells_every_change_since_the_previous_report_the_watch_each_once(tmp_path) -> None:
    """report 03:00 -> watches 03:05, 03:10, 03:15 -> report 06:00: each watch tells what changed
    since the fold before it; the 06:00 report tells all of it (each line with its watch's time),
    not only what changed since the last watch, and the next report does not tell it again."""
    fold(tmp_path, [snap([job("1", "rl__1", "RUNNING"), job("2", "sft__2", "RUNNING")])], 180, REPORT)
    w1 = watch_run_id("scheduled__2026-12-03T03:00:00+00:00")
    w2 = watch_run_id("scheduled__2026-12-03T03:05:00+00:00")
    w3 = watch_run_id("scheduled__2026-12-03T03:10:00+00:00")
    ended = [snap([job("1", "rl__1", "RUNNING")], [job("2", "sft__2", "FAILED", "sacct")])]
    assert fold(tmp_path, ended, 185, w1) == ["new failure: leo SFT 2 sft__2 (FAILED; was RUNNING)"]
    stalled = [snap([job("1", "rl__1", "RUNNING", stale=True), job("4", "rl__4", "RUNNING")])]
    assert fold(tmp_path, stalled, 190, w2) == ["new stall: leo RL 1 rl__1", "new: leo RL 4 rl__4 (RUNNING)"]
    assert fold(tmp_path, stalled, 195, w3) == ["no change since the previous sweep"]  # told once, by w2
    at_six = [snap([job("1", "rl__1", "RUNNING", stale=True), job("4", "rl__4", "COMPLETED", "sacct")])]
    report = fold(tmp_path, at_six, 360, REPORT2)
    assert report == [
        "watch 03:05Z: new failure: leo SFT 2 sft__2 (FAILED; was RUNNING)",
        "watch 03:10Z: new stall: leo RL 1 rl__1",
        "watch 03:10Z: new: leo RL 4 rl__4 (RUNNING)",
        "completed: leo RL 4 rl__4",
    ]
    assert fold(tmp_path, at_six, 360, REPORT2) == report  # a re-run of the report tells the same
    assert load_ledger(tmp_path).since_report == []
    # the next watch tells nothing new; the next report tells only what changed after 06:00
    assert fold(tmp_path, at_six, 365, watch_run_id("scheduled__2026-12-03T06:00:00+00:00")) == [
        "no change since the previous sweep"
    ]
    assert fold(tmp_path, at_six, 540, "scheduled__2026-12-03T06:00:00+00:00") == ["no change since the previous sweep"]


def test_a_backfilled_report_leaves_the_later_watches_changes_to_the_next_report(tmp_path) -> None:
    fold(tmp_path, [snap([job("1", "rl__1", "RUNNING")])], 180, REPORT)
    gone = [snap([], [job("1", "rl__1", "COMPLETED", "sacct")])]
    assert fold(tmp_path, gone, 185, watch_run_id("scheduled__2026-12-03T03:00:00+00:00")) == [
        "completed: leo RL 1 rl__1"
    ]
    fold(tmp_path, [snap([job("1", "rl__1", "RUNNING")])], 120, "backfill__2026-12-02T23:00:00+00:00")
    assert [r["line"] for r in load_ledger(tmp_path).since_report] == ["completed: leo RL 1 rl__1"]
    assert fold(tmp_path, gone, 360, REPORT2)[0] == "watch 03:05Z: completed: leo RL 1 rl__1"


def test_the_changes_kept_for_the_report_are_bounded_and_the_cut_ones_counted(monkeypatch) -> None:
    from sweep_core.ledger import since_report
    from sweep_core.ledger.entries import Ledger
    from sweep_core.ledger.fold import Change

    monkeypatch.setattr(since_report, "KEEP", 3)
    base, new = Ledger(), Ledger()
    for i in range(5):
        end = (T0 + dt.timedelta(minutes=5 * i)).isoformat()
        since_report.carry(
            base, new, [Change("new", "leo", f"new: job {i}")], run_id=watch_run_id(str(i)), window_end=end
        )
        base, new = new, Ledger()
    told = since_report.carry(
        base, new, [Change("none", "", "no change")], run_id=REPORT2, window_end=T0.isoformat()[:11] + "06:00:00+00:00"
    )
    assert told == [
        Change(
            "dropped",
            "",
            "watch 00:10Z: 3 earlier change(s) found by the watch not kept (the ledger keeps the newest 3)",
        ),
        Change("new", "leo", "watch 00:15Z: new: job 3"),
        Change("new", "leo", "watch 00:20Z: new: job 4"),
    ]
    assert new.since_report == []
