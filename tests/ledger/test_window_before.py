"""A backfilled (older) window tells its changes against the window folded BEFORE it, each job as
it stood then, not against the latest sweep; it leaves what later sweeps saw, the latest run and
that run's re-run as they were; a window older than every one on record says it has nothing to
compare with."""

from __future__ import annotations

import datetime as dt

from test_ledger import fold, job, snap

from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.fold import NO_WINDOW_BEFORE, as_it_stood, window_before
from sweep_core.ledger.runs import fold_sweep_run
from sweep_core.ledger.store import load_ledger

T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)


def _at(hours: int) -> str:
    return (T0 + dt.timedelta(hours=hours)).isoformat()


def _swept_0_and_9() -> Ledger:
    """Sweeps at 0 h and 9 h (the windows between were missed): 1 ran at 0 h, failed by 9 h; 2 ran
    all along; 3 was submitted at 4 h and runs at 9 h."""
    ledger, _ = fold(Ledger(), [snap([job("1", "sft__a", "RUNNING"), job("2", "rl__b", "RUNNING")])], 0)
    ledger, lines = fold(
        ledger,
        [snap([job("2", "rl__b", "RUNNING"), job("3", "sft__c", "RUNNING")], [job("1", "sft__a", "FAILED", "sacct")])],
        9,
    )
    assert lines == ["new failure: leo SFT 1 sft__a (FAILED; was RUNNING)", "new: leo SFT 3 sft__c (RUNNING)"]
    return ledger


def test_a_backfilled_window_is_compared_with_the_window_before_it_not_the_latest() -> None:
    ledger = _swept_0_and_9()
    # the 3 h window: 1 failed in it; 2 still ran; 3 did not exist yet
    back, lines = fold(
        ledger, [snap([job("2", "rl__b", "RUNNING")], [job("1", "sft__a", "FAILED", "sacct")])], 3, run="backfill__3"
    )
    assert lines == ["new failure: leo SFT 1 sft__a (FAILED)"]  # its state at 0 h was not kept: no "was"
    # the 6 h window, compared with the 3 h one just backfilled: 3 is new there, 1 is not told again
    back, lines = fold(
        back, [snap([job("2", "rl__b", "RUNNING"), job("3", "sft__c", "RUNNING")])], 6, run="backfill__6"
    )
    assert lines == ["new: leo SFT 3 sft__c (RUNNING)"]
    # what the 9 h sweep saw stands
    assert {k: e.state for k, e in back.jobs.items()} == {"leo|1": "FAILED", "leo|2": "RUNNING", "leo|3": "RUNNING"}
    assert back.window_end == ledger.window_end == _at(9) and back.windows == [_at(h) for h in (0, 3, 6, 9)]


def test_a_window_older_than_every_one_on_record_has_nothing_to_compare_with() -> None:
    ledger = _swept_0_and_9()
    _, lines = fold(ledger, [snap([job("1", "sft__a", "RUNNING")])], -3, run="backfill__-3")
    assert lines == [NO_WINDOW_BEFORE]


def test_each_job_as_it_stood_at_the_window_before() -> None:
    ledger = _swept_0_and_9()
    assert window_before(ledger, _at(6)) == _at(0) and window_before(ledger, _at(0)) == ""
    e1, e3 = ledger.jobs["leo|1"], ledger.jobs["leo|3"]
    assert as_it_stood(e3, _at(0), "RUNNING") is None  # first seen at 9 h: unknown at 0 h
    then = as_it_stood(e1, _at(0), "FAILED")  # FAILED since 9 h: at 0 h it was something else
    assert then is not None and then.state == "" and e1.state == "FAILED"  # the entry itself untouched
    assert as_it_stood(ledger.jobs["leo|2"], _at(0), "RUNNING").state == "RUNNING"  # type: ignore[union-attr]


def test_a_backfill_leaves_the_latest_run_and_its_re_run_as_they_were(tmp_path) -> None:
    def lines(snaps, hours: int, run: str) -> list[str]:
        return [c.line for c in fold_sweep_run(tmp_path, snaps, run_id=run, window_end=T0 + dt.timedelta(hours=hours))]

    lines([snap([job("1", "sft__a", "RUNNING")])], 0, "s0")
    nine = [snap([], [job("1", "sft__a", "COMPLETED", "sacct")])]
    told = lines(nine, 9, "s9")
    assert told == ["completed: leo SFT 1 sft__a"]
    assert lines([snap([job("1", "sft__a", "RUNNING")])], 3, "backfill__3") == ["no change since the previous sweep"]
    assert load_ledger(tmp_path).run_id == "s9" and load_ledger(tmp_path).jobs["leo|1"].state == "COMPLETED"
    assert lines(nine, 9, "s9") == told  # the latest run re-run: still against the ledger before it


def test_a_re_run_of_the_latest_run_after_a_backfill_keeps_what_the_backfill_learned(tmp_path) -> None:
    """Job 4 ran only between the two sweeps (only the backfill at 3 h saw it): re-running the
    latest sweep afterwards must not drop it from the ledger; the re-run tells what it told, and
    now also what it can tell of job 4 (not running at 9 h, not in that window's sacct)."""

    def lines(snaps, hours: int, run: str) -> list[str]:
        return [c.line for c in fold_sweep_run(tmp_path, snaps, run_id=run, window_end=T0 + dt.timedelta(hours=hours))]

    lines([snap([job("1", "sft__a", "RUNNING")])], 0, "s0")
    nine = [snap([], [job("1", "sft__a", "COMPLETED", "sacct")])]
    told = lines(nine, 9, "s9")
    backfill = lines([snap([job("1", "sft__a", "RUNNING"), job("4", "sft__d", "RUNNING")])], 3, "backfill__3")
    assert backfill == ["new: leo SFT 4 sft__d (RUNNING)"]
    assert load_ledger(tmp_path).jobs["leo|4"].first_seen == _at(3)
    again = lines(nine, 9, "s9")
    assert again == [*told, "gone: leo SFT 4 sft__d (was RUNNING, not running and not in this window's sacct)"]
    after = load_ledger(tmp_path)
    assert after.run_id == "s9" and after.jobs["leo|1"].state == "COMPLETED"
    assert after.jobs["leo|4"].first_seen == _at(3) and after.jobs["leo|4"].state == "GONE"  # not lost
    assert _at(3) in after.windows
