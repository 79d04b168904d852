"""A sweep run's use of the ledger: a re-run of the same run id tells the same changes and keeps
the hand-offs given since; a per-job hand-off another run gave is dropped with a note."""

from __future__ import annotations

import datetime as dt
import json

from ledger_rows import generations
from test_ledger import job, snap

from sweep_core.fanin.report import keep_sections, upsert_section
from sweep_core.ledger.runs import fold_sweep_run, give_once
from sweep_core.ledger.store import load_ledger

T0 = dt.datetime(2026, 12, 3, 3, 0, tzinfo=dt.UTC)


def lines(tmp_path, snaps, hours: int, run: str) -> list[str]:
    end = T0 + dt.timedelta(hours=hours)
    return [c.line for c in fold_sweep_run(tmp_path, snaps, run_id=run, window_end=end)]


def cleanup_conf(*jids: str) -> dict:
    jobs = [{"cluster": "leo", "job_id": j, "name": f"sft__{j}", "flavor": "sft-job-cleanup"} for j in jids]
    return {"cleanup": {"dry_run": False, "run_log": "", "jobs": jobs, "reclaim_clusters": []}, "harvest": {}}


def test_a_re_run_of_the_same_run_tells_the_same_changes_and_keeps_its_hand_offs(tmp_path) -> None:
    lines(tmp_path, [snap([job("1", "sft__1", "RUNNING"), job("2", "sft__2", "RUNNING")])], 0, "s0")
    second = [snap([job("2", "sft__2", "RUNNING")], [job("1", "sft__1", "COMPLETED", "sacct")])]
    told = lines(tmp_path, second, 3, "s3")
    assert told == ["completed: leo SFT 1 sft__1"]
    give_once(tmp_path, cleanup_conf("1"), run_id="s3", dry_run=False)
    assert lines(tmp_path, second, 3, "s3") == told  # not "no change": folded against the ledger before s3
    assert lines(tmp_path, second, 3, "s3") == told
    assert load_ledger(tmp_path).jobs["leo|1"].handoffs == {"cleanup": "s3"}
    confs, notes = give_once(tmp_path, cleanup_conf("1"), run_id="s3", dry_run=False)
    assert confs["cleanup"]["jobs"] and notes == []  # the same run: its trigger run id makes it a no-op
    # `dags test` again at the same logical date: a new run id, the same window, the same changes;
    # the hand-off the first gave is not given again
    assert lines(tmp_path, second, 3, "manual__again") == told
    confs, notes = give_once(tmp_path, cleanup_conf("1"), run_id="manual__again", dry_run=False)
    assert confs["cleanup"] is None and notes == ["cleanup: leo 1 sft__1 already handed off by s3"]
    assert lines(tmp_path, second, 3, "s3") == told  # and the first run id again: still the same
    assert lines(tmp_path, [snap([], [])], 6, "s6") == ["gone: leo SFT 2 sft__2 (was RUNNING, not running and not in this window's sacct)"]  # fmt: skip
    # s3 re-run after s6 folded: on top of s6 (an older window changes nothing s6 saw), its changes
    # told against the window before it (s0), not against s6: the same changes as its first run
    assert lines(tmp_path, second, 3, "s3") == told
    assert load_ledger(tmp_path).jobs["leo|2"].state == "GONE"


def test_a_hand_off_another_run_gave_is_dropped_with_a_note_and_a_dry_run_marks_nothing(tmp_path) -> None:
    lines(tmp_path, [snap([], [job("1", "sft__1", "COMPLETED", "sacct"), job("2", "sft__2", "COMPLETED", "sacct")])],
          0, "s0")  # fmt: skip
    confs, notes = give_once(tmp_path, cleanup_conf("1"), run_id="manual__a", dry_run=True)
    assert notes == [] and "cleanup" not in json.dumps(load_ledger(tmp_path).jobs["leo|1"].handoffs)
    give_once(tmp_path, cleanup_conf("1"), run_id="s0", dry_run=False)
    confs, notes = give_once(tmp_path, cleanup_conf("1", "2"), run_id="manual__b", dry_run=False)
    assert [j["job_id"] for j in confs["cleanup"]["jobs"]] == ["2"]
    assert notes == ["cleanup: leo 1 sft__1 already handed off by s0"]
    confs, notes = give_once(tmp_path, cleanup_conf("1", "2"), run_id="manual__c", dry_run=False)
    assert confs["cleanup"] is None and len(notes) == 2  # nothing left to hand off: not triggered
    assert confs["harvest"] == {}  # not per job: passed through


def test_nothing_per_job_leaves_the_ledger_untouched(tmp_path) -> None:
    confs, notes = give_once(tmp_path, {"cleanup": None, "hf_chain": {"dry_run": False}}, run_id="r", dry_run=False)
    assert notes == [] and confs["hf_chain"] == {"dry_run": False} and generations(tmp_path) == []


def test_a_rewritten_run_log_keeps_the_sections_of_its_own_run_only() -> None:
    old = upsert_section("# old\n", "sweep_cleanup:run1__cleanup", "## cleanup did X\n")
    old = upsert_section(old, "monitor_cron_sweep:run1:given", "## given\n")
    old = upsert_section(old, "sweep_cleanup:run10__cleanup", "## another run\n")
    new = keep_sections(old, "# new\n", "run1")
    assert new.startswith("# new\n") and "cleanup did X" in new and "## given" in new
    assert "another run" not in new
    again = keep_sections(new, new, "run1")
    assert again.count("cleanup did X") == 1 and again.count("## given") == 1  # a second re-run: still once


def test_a_run_log_is_replaced_by_its_own_re_run_never_by_another_run(tmp_path) -> None:
    from sweep_core.fanin.report import own_run_log
    from sweep_core.safe.text import md_code

    path = tmp_path / "2026-12-03_monitor-sweep-0300Z.md"
    assert own_run_log(path, "scheduled__1", "02:00", "03:00") == path  # none yet
    path.write_text(f"# Sweep\n\n- Run: {md_code('scheduled__1')}\n- Window (sacct -S/-E): 02:00 → 03:00\n")
    assert own_run_log(path, "scheduled__1", "02:00", "03:00") == path  # the same run id
    assert own_run_log(path, "manual__again", "02:00", "03:00") == path  # dags test again: the same window
    by_hand = own_run_log(path, "manual__x", "02:50", "03:00")  # a run by hand ending in that minute
    assert by_hand.name == "2026-12-03_monitor-sweep-0300Z-2.md"
    by_hand.write_text(f"- Run: {md_code('manual__x')}\n")
    assert own_run_log(path, "manual__x", "02:50", "03:00") == by_hand  # and its re-run replaces it


def test_a_re_run_whose_hand_off_run_exists_gives_only_what_it_alone_found(tmp_path) -> None:
    give_once(tmp_path, cleanup_conf("1"), run_id="s3", dry_run=False)
    # clear of s3 after a config fix: its cleanup run (s3__cleanup) exists and holds job 1
    confs, notes = give_once(tmp_path, cleanup_conf("1", "2"), run_id="s3", dry_run=False, handed={"cleanup": True})
    assert [j["job_id"] for j in confs["cleanup"]["jobs"]] == ["2"]  # for the follow-up run s3__cleanup__2
    assert notes == ["cleanup: leo 1 sft__1 in this run's hand-off run already"]
    assert load_ledger(tmp_path).jobs["leo|2"].handoffs == {"cleanup": "s3"}
    confs, _ = give_once(tmp_path, cleanup_conf("1", "2"), run_id="s3", dry_run=False, handed={"cleanup": True})
    assert confs["cleanup"] is None  # both in hand-off runs of s3 already: nothing triggered
    # its hand-off run does not exist (the trigger failed before it was created): given again, all of it
    confs, _ = give_once(tmp_path, cleanup_conf("1", "2"), run_id="s3", dry_run=False)
    assert [j["job_id"] for j in confs["cleanup"]["jobs"]] == ["1", "2"]


def test_catch_up_reaches_back_to_the_last_window_whose_sacct_was_read(tmp_path) -> None:
    from sweep_core.ledger.catch_up import catch_up_start
    from sweep_core.records.models import ClusterStatus

    lines(tmp_path, [snap([job("1", "sft__1", "RUNNING")])], 0, "s0")
    hour, day = dt.timedelta(hours=1), dt.timedelta(hours=24)
    blind = snap([])
    blind.status, blind.running, blind.finished = ClusterStatus.UNKNOWN, None, None
    lines(tmp_path, [blind], 3, "s3")  # UNKNOWN: read_until stays at T0
    ledger = load_ledger(tmp_path)
    assert ledger.read_until == {"leo": T0.isoformat()}
    start, end = T0 + 3 * hour, T0 + 6 * hour
    assert catch_up_start(ledger, "leo", start, end, day) == (T0, "sacct window widened back to 2026-12-03 03:00:00Z: the sweeps since did not read it")  # fmt: skip
    since, note = catch_up_start(ledger, "leo", start, end, hour)
    assert since == start - hour and "capped at gather.catch_up_hours" in note
    assert catch_up_start(ledger, "other", start, end, day) == (start, "")  # never read: its first sweep
    assert catch_up_start(ledger, "leo", T0 - 3 * hour, T0 - 2 * hour, day) == (T0 - 3 * hour, "")  # backfill
    lines(tmp_path, [snap([], [job("1", "sft__1", "CANCELLED", "sacct")])], 6, "s6")
    assert load_ledger(tmp_path).read_until == {"leo": end.isoformat()}
    assert catch_up_start(load_ledger(tmp_path), "leo", end, end + 3 * hour, day) == (end, "")


def test_a_deep_dive_is_given_once_per_job_and_its_verdict_survives_a_re_run_fold(tmp_path) -> None:
    from sweep_core.ledger.store import update_ledger

    deep = {
        "deep_dive": {"dry_run": False, "run_log": "", "jobs": [{"cluster": "leo", "job_id": "5", "name": "rl__x"}]}
    }
    lines(tmp_path, [snap([job("5", "rl__x", "RUNNING")])], 0, "s0")
    confs, _ = give_once(tmp_path, deep, run_id="s0", dry_run=False)
    assert confs["deep_dive"]["jobs"] == deep["deep_dive"]["jobs"]
    confs, notes = give_once(tmp_path, deep, run_id="s3", dry_run=False)
    assert confs["deep_dive"] is None and notes == ["deep_dive: leo 5 rl__x already handed off by s0"]

    def note(ledger):
        ledger.jobs["leo|5"].deep_dive = "2026-12-03 03:05Z NO-KILL, watch reward_mean < 0.05"
        return ledger, None

    update_ledger(tmp_path, note)
    lines(tmp_path, [snap([job("5", "rl__x", "RUNNING")])], 0, "s0")  # a re-run of s0 folds against before-s0
    assert load_ledger(tmp_path).jobs["leo|5"].deep_dive == "2026-12-03 03:05Z NO-KILL, watch reward_mean < 0.05"
