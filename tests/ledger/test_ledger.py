"""The per-job ledger across sweeps (issue 18): every change told, UNKNOWN changes nothing, an older
window never overwrites a newer one, series max steps remembered, hand-offs given once."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from ledger_rows import generations, write_row

from sweep_core.ledger.entries import Ledger, LedgerError
from sweep_core.ledger.fold import FIRST_SWEEP, fold_sweep
from sweep_core.ledger.given import mark_given, split_given
from sweep_core.ledger.store import load_ledger, save_ledger, update_ledger
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)


def job(jid: str, name: str, state: str, source: str = "squeue", **kw) -> Job:
    bucket = kw.pop("bucket", "RL" if name.startswith("rl__") else "SFT")
    return Job("leo", jid, name, state, source, bucket=bucket, **kw)


def snap(running=(), finished=(), pending=(), status=ClusterStatus.OK, cluster="leo", scheduler="slurm"):
    known = status in (ClusterStatus.OK, ClusterStatus.PARTIAL)
    return ClusterSnapshot(
        cluster,
        scheduler,
        status,
        running=list(running) if known else None,
        finished=list(finished) if status == ClusterStatus.OK else None,
        pending=list(pending) if known else None,
    )


def fold(ledger: Ledger, snaps: list[ClusterSnapshot], hours: int, run: str = "") -> tuple[Ledger, list[str]]:
    new, changes = fold_sweep(
        ledger,
        snaps,
        run_id=run or f"scheduled__{hours}",
        window_end=T0 + dt.timedelta(hours=hours),
    )
    return new, [c.line for c in changes]


def test_every_kind_of_change_is_told_and_nothing_that_ended_is_dropped() -> None:
    first = [
        job("1", "rl__a", "RUNNING"),
        job("2", "rl__b", "RUNNING"),
        job("3", "rl__c", "RUNNING"),
        job("4", "sft__d", "RUNNING"),
        job("5", "sft__e", "RUNNING", stale=True),
        job("6", "sft__f", "RUNNING"),
        job("9", "sft__g", "RUNNING"),
    ]
    ledger, lines = fold(Ledger(), [snap(first, pending=[job("7", "rl__a_resume1", "PENDING")])], 3)
    assert lines == [FIRST_SWEEP]
    second_running = [
        job("1", "rl__a", "RUNNING", stale=True),
        job("5", "sft__e", "RUNNING"),
        job("7", "rl__a_resume1", "RUNNING"),
        job("8", "sft__new", "RUNNING"),
        job("9", "sft__g", "SUSPENDED"),
    ]
    ended = [
        job("2", "rl__b", "CANCELLED by 1001", "sacct"),
        job("3", "rl__c", "TIMEOUT", "sacct"),
        job("4", "sft__d", "COMPLETED", "sacct"),
        job("6", "sft__f", "FAILED", "sacct"),
    ]
    ledger, lines = fold(ledger, [snap(second_running, ended)], 6)
    assert "new: leo SFT 8 sft__new (RUNNING)" in lines
    assert "state: leo RL 7 rl__a_resume1 PENDING → RUNNING" in lines
    assert "state: leo SFT 9 sft__g RUNNING → SUSPENDED" in lines
    assert "ended: leo RL 2 rl__b (CANCELLED; was RUNNING)" in lines
    assert "ended: leo RL 3 rl__c (TIMEOUT; was RUNNING)" in lines
    assert "completed: leo SFT 4 sft__d" in lines
    assert "new failure: leo SFT 6 sft__f (FAILED; was RUNNING)" in lines
    assert "new stall: leo RL 1 rl__a" in lines
    assert "stall cleared: leo SFT 5 sft__e (output again)" in lines
    assert len(lines) == 9, lines
    assert (
        ledger.jobs["leo|2"].state == "CANCELLED" and ledger.jobs["leo|2"].first_seen < ledger.jobs["leo|2"].last_seen
    )


def test_an_unknown_cluster_changes_nothing_and_the_next_known_sweep_tells_what_happened_meanwhile() -> None:
    ledger, _ = fold(Ledger(), [snap([job("1", "rl__a", "RUNNING"), job("2", "rl__b", "RUNNING")])], 3)
    before = json.dumps(ledger.to_dict()["jobs"], sort_keys=True)
    ledger, lines = fold(ledger, [snap(status=ClusterStatus.UNKNOWN)], 6)
    assert lines == ["cluster leo: OK → UNKNOWN"]
    assert json.dumps(ledger.to_dict()["jobs"], sort_keys=True) == before
    ledger, lines = fold(ledger, [snap(status=ClusterStatus.UNREACHABLE)], 9)
    assert json.dumps(ledger.to_dict()["jobs"], sort_keys=True) == before
    ledger, lines = fold(ledger, [snap([job("2", "rl__b", "RUNNING")], [])], 12)
    assert "cluster leo: UNREACHABLE → OK" in lines
    # it ended while the sweeps could not read the queue: said so, not "not in this window's sacct"
    assert any(ln.startswith("gone: leo RL 1 rl__a (was RUNNING, ended while the sweeps did not read the cluster "
                             "(UNREACHABLE): its end state is in that window's sacct") for ln in lines)  # fmt: skip
    _, lines = fold(ledger, [snap([], [])], 15)
    assert lines == ["gone: leo RL 2 rl__b (was RUNNING, not running and not in this window's sacct)"]


def test_sacct_unknown_says_left_the_queue_and_iris_vanish_is_terminal() -> None:
    ledger, _ = fold(Ledger(), [snap([job("1", "rl__a", "RUNNING")])], 3)
    _, lines = fold(ledger, [snap([], status=ClusterStatus.PARTIAL)], 6)
    assert any(ln.startswith("left the queue: leo RL 1 rl__a") and "end state not known" in ln for ln in lines)
    cw = [Job("cw", "/u/rl__x", "rl__x", "RUNNING", "iris", bucket="RL")]
    ledger, _ = fold(Ledger(), [snap(cw, cluster="cw", scheduler="iris")], 3)
    ledger, lines = fold(ledger, [snap([], cluster="cw", scheduler="iris")], 6)
    assert any("gone: cw RL /u/rl__x" in ln and "TERMINAL" in ln for ln in lines)
    assert ledger.jobs["cw|/u/rl__x"].state == "GONE"
    _, lines = fold(ledger, [snap([], cluster="cw", scheduler="iris")], 9)
    assert lines == ["no change since the previous sweep"]  # said once


def test_an_older_window_never_overwrites_what_a_later_sweep_saw() -> None:
    ledger, _ = fold(Ledger(), [snap([job("1", "rl__a", "RUNNING")])], 3)
    ledger, _ = fold(ledger, [snap([], [job("1", "rl__a", "COMPLETED", "sacct")])], 9)
    back, lines = fold(
        ledger, [snap([job("1", "rl__a", "RUNNING"), job("2", "rl__b", "RUNNING")])], 6, run="backfill__6"
    )
    assert back.jobs["leo|1"].state == "COMPLETED"
    assert "leo|2" in back.jobs and not any("gone" in ln for ln in lines)
    assert back.window_end == ledger.window_end


def test_series_max_steps_come_from_whichever_link_printed_them() -> None:
    link0 = job("1", "rl__a", "COMPLETED", "sacct", metrics={"run_series": "rl__a", "step": 500, "max_steps": 500})
    ledger, _ = fold(Ledger(), [snap([], [link0])], 3)
    link1 = job("2", "rl__a_resume1", "RUNNING", metrics={"run_series": "rl__a", "step": 3, "max_steps": None})
    ledger, _ = fold(ledger, [snap([link1])], 6)
    s = ledger.series["rl__a"]
    assert (s.max_steps, s.source_job, s.completed_at_max) == (500, "leo|1", "leo|1")
    assert ledger.jobs["leo|2"].max_steps is None  # the link itself never printed it


def test_a_hand_off_is_given_once_per_job_and_kind_but_a_re_run_of_the_same_run_may_repeat_it() -> None:
    ledger, _ = fold(Ledger(), [snap([], [job("4", "sft__d", "COMPLETED", "sacct")])], 3)
    items = [{"cluster": "leo", "job_id": "4", "name": "sft__d"}]
    todo, notes = split_given(ledger, "cleanup", items, "scheduled__3")
    assert todo == items and notes == []
    mark_given(ledger, "cleanup", todo, "scheduled__3")
    assert split_given(ledger, "cleanup", items, "scheduled__3") == (items, [])  # the same run again
    todo, notes = split_given(ledger, "cleanup", items, "manual__x")
    assert todo == [] and notes == ["cleanup: leo 4 sft__d already handed off by scheduled__3"]
    assert split_given(ledger, "cancel", items, "manual__x")[0] == items  # another kind


def test_the_ledger_round_trips_and_a_corrupt_one_is_moved_aside_with_a_note(tmp_path) -> None:
    ledger, _ = fold(Ledger(), [snap([job("1", "rl__a", "RUNNING", log_mtime=1.5e9)])], 3)
    mark_given(ledger, "cancel", [{"cluster": "leo", "job_id": "1"}], "r1")
    save_ledger(tmp_path, ledger)
    assert load_ledger(tmp_path).to_dict() == ledger.to_dict()
    got = update_ledger(tmp_path, lambda led: (led, len(led.jobs)))
    assert got == 1
    write_row(tmp_path, "leo|1", '{"cluster": "leo", "job_id": 5}')
    notes: list[str] = []
    assert load_ledger(tmp_path, notes).jobs == {}
    assert notes and "'job_id' is not str" in notes[0] and "moved aside" in notes[0]
    assert [g for g in generations(tmp_path) if g.startswith("corrupt-")]


@pytest.mark.parametrize(
    "raw",
    [[], {"version": 2}, {"version": 1, "jobs": []}, {"version": 1, "known": "leo"},
     {"version": 1, "jobs": {"a|1": {"cluster": "a", "job_id": "1", "name": "n", "stale": "yes"}}},
     {"version": 1, "jobs": {"a|1": {"cluster": "a", "job_id": "1", "name": "n", "handoffs": {"cleanup": 3}}}},
     {"version": 1, "series": {"s": {"max_steps": "500", "source_job": "a|1"}}}],
)  # fmt: skip
def test_a_wrong_shape_is_a_ledger_error(raw) -> None:
    with pytest.raises(LedgerError):
        Ledger.from_dict(raw)


def test_ended_jobs_are_pruned_after_thirty_days_active_ones_kept() -> None:
    ledger, _ = fold(Ledger(), [snap([job("1", "rl__a", "RUNNING")], [job("2", "rl__b", "COMPLETED", "sacct")])], 3)
    ledger, _ = fold(ledger, [snap([job("1", "rl__a", "RUNNING")], [])], 24 * 31)
    assert set(ledger.jobs) == {"leo|1"}
