"""A damaged ledger is recovered, not reset: every row that still reads, a bad job row as it stood
before the latest fold when that is kept (one bad entry costs at most itself), a damaged ledger row
from the one before, the damaged rows moved aside, a note naming what was lost; the recovered ledger holds every
submission and destructive act until a person confirms. An update that fails half-way writes nothing."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from ledger_rows import generations, read_row, write_row

from sweep_core.handoffs.batch_job.remote import build_submit_script
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.given import given_by, mark_given
from sweep_core.ledger.hold import confirm_reset, held
from sweep_core.ledger.store import fold_run, load_ledger, update_ledger

ITEM = {"cluster": "leo", "job_id": "1", "name": "rl__a"}


def _add(*ids: str):
    def fold(ledger: Ledger) -> tuple[Ledger, None]:
        for i in ids:
            ledger.jobs[f"leo|{i}"] = LedgerEntry("leo", i, f"rl__{i}", state="RUNNING")
        return ledger, None

    return fold


def _two_runs(tmp_path) -> None:
    """Run r1 saw job 1 and handed it to cleanup; run r2 (the latest) saw jobs 2..9 too."""
    fold_run(tmp_path, "r1", "2026-12-04T00:00:00+00:00", _add("1"))
    update_ledger(tmp_path, lambda led: (mark_given(led, "cleanup", [ITEM], "r1") or led, None))
    fold_run(tmp_path, "r2", "2026-12-04T03:00:00+00:00", _add(*map(str, range(2, 10))))


def test_a_damaged_job_row_is_recovered_as_it_stood_before_the_latest_fold_and_holds_acts(tmp_path) -> None:
    _two_runs(tmp_path)
    update_ledger(tmp_path, lambda led: (mark_given(led, "cancel", [ITEM], "r2") or led, None))  # after r2's fold
    text = read_row(tmp_path, "leo|1")
    write_row(tmp_path, "leo|1", text[:40])  # cut mid-way (a bad write by hand)
    write_row(tmp_path, "leo|6", text[:30])  # job 6 was new in r2: nothing before it to recover from
    notes: list[str] = []
    got = load_ledger(tmp_path, notes)
    assert set(got.jobs) == {f"leo|{i}" for i in range(1, 10)} - {"leo|6"}
    assert got.jobs["leo|1"].handoffs == {"cleanup": "r1"}  # job 1 as it stood before r2 (its cancel is lost)
    assert given_by(got, "cleanup", ITEM) == "r1"  # the hand-off given is not forgotten
    assert "2 bad entries" in got.hold and "recovered from what still reads and the ledger before run r2" in got.hold
    assert "lost: job leo|6 (" in got.hold and "leo|1" not in got.hold.split("lost:")[1]
    assert any("moved aside" in n for n in notes) and any(n.startswith("LEDGER RECOVERED WITH LOSS") for n in notes)
    (aside,) = [g for g in generations(tmp_path) if g.startswith("corrupt-")]  # the damaged rows are kept
    assert read_row(tmp_path, "leo|1", aside) == text[:40] and read_row(tmp_path, "leo|6", aside) == text[:30]
    assert json.loads(read_row(tmp_path))["hold"] == got.hold  # saved: a second read is not an empty ledger
    assert held(tmp_path) == got.hold and load_ledger(tmp_path).to_dict() == got.to_dict()


def test_one_bad_entry_costs_only_itself_and_is_named(tmp_path) -> None:
    _two_runs(tmp_path)
    raw = json.loads(read_row(tmp_path, "leo|3"))
    raw["step"] = "five hundred"
    write_row(tmp_path, "leo|3", json.dumps(raw))
    notes: list[str] = []
    got = load_ledger(tmp_path, notes)
    assert set(got.jobs) == {f"leo|{i}" for i in range(1, 10)} - {"leo|3"}
    assert "entry 'leo|3': 'step' is not int | None" in got.hold


def test_a_damaged_ledger_row_is_recovered_from_the_one_before_with_every_job(tmp_path) -> None:
    _two_runs(tmp_path)
    write_row(tmp_path, None, '{"version": 1, "window_')
    got = load_ledger(tmp_path)
    assert set(got.jobs) == {f"leo|{i}" for i in range(1, 10)} and "the ledger row: JSONDecodeError" in got.hold
    assert "and the ledger before run r2" in got.hold  # the ledger row as it stood before r2's fold


def test_a_ledger_row_gone_while_the_one_before_is_there_is_recovered_and_held(tmp_path) -> None:
    _two_runs(tmp_path)
    write_row(tmp_path, None, None)
    got = load_ledger(tmp_path)
    assert "leo|1" in got.jobs and "unusable (the ledger row missing while the one before is there)" in got.hold


def test_a_first_ledger_is_not_a_reset(tmp_path) -> None:
    assert load_ledger(tmp_path).hold == "" and not held(tmp_path)


def test_acts_are_held_until_a_person_confirms(tmp_path, monkeypatch) -> None:
    """The hand-offs' runner refuses an act script while held (read-only scripts still run)."""
    from sweep_operators import handoff_io

    _two_runs(tmp_path)
    write_row(tmp_path, None, "{")
    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", str(tmp_path))
    sent: list[str] = []
    monkeypatch.setattr(
        handoff_io, "run_checked", lambda cfg, limits, log, script, marker, what: sent.append(what) or (None, "")
    )
    run = handoff_io.ssh_runner(SimpleNamespace(), handoff_io.logging.getLogger("t"))
    cfg = SimpleNamespace(name="leo")
    out, problem = run(cfg, build_submit_script([["sbatch", "x.sbatch"]], "@@M@@"), "@@M@@", "upload submit")
    assert out is None and problem.startswith("held: the ledger was recovered with loss") and sent == []
    run(cfg, "echo read-only\n", "@@M@@", "upload track")
    assert sent == ["upload track"]
    assert confirm_reset(tmp_path, "run manual__x").startswith("ledger hold cleared by run manual__x")
    run(cfg, build_submit_script([["sbatch", "x.sbatch"]], "@@M@@"), "@@M@@", "upload submit")
    assert sent == ["upload track", "upload submit"] and not held(tmp_path)


def test_an_update_that_fails_half_way_writes_nothing(tmp_path) -> None:
    """The change raises after editing the ledger: the stored ledger is the one before (one transaction)."""
    _two_runs(tmp_path)
    before = read_row(tmp_path), read_row(tmp_path, "leo|3")

    def half(ledger: Ledger) -> tuple[Ledger, None]:
        ledger.jobs.clear()
        raise RuntimeError("the worker died")

    with pytest.raises(RuntimeError):
        update_ledger(tmp_path, half)
    assert (read_row(tmp_path), read_row(tmp_path, "leo|3")) == before and len(load_ledger(tmp_path).jobs) == 9


def test_a_database_that_cannot_be_read_fails_never_an_empty_ledger(tmp_path, monkeypatch) -> None:
    """An unreadable database (here: not a database at all) raises; nothing reads as an empty ledger."""
    bad = tmp_path / "not-a.db"
    bad.write_bytes(b"\x00garbage" * 100)
    monkeypatch.setenv("SWEEP_STATE_URL", f"sqlite:///{bad}")
    with pytest.raises(Exception, match="not a database"):
        load_ledger(tmp_path)
