"""A damaged ledger is recovered, not reset: ``ledger.before.json`` plus every entry of the damaged
document that still reads (a truncated one keeps the entries before the cut; one bad entry costs only
itself), the damaged document moved aside, a note naming what was lost; the recovered ledger holds every
submission and destructive act until a person confirms. An update that fails half-way writes nothing."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from sweep_core.handoffs.batch_job.remote import build_submit_script
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.given import given_by, mark_given
from sweep_core.ledger.hold import confirm_reset, held
from sweep_core.ledger.store import LEDGER_FILE, fold_run, load_ledger, update_ledger
from sweep_core.state.documents import document_names, read_document, write_document

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


def test_a_truncated_ledger_is_recovered_from_before_plus_its_readable_entries_and_holds_acts(tmp_path) -> None:
    _two_runs(tmp_path)
    text = read_document(tmp_path, LEDGER_FILE)
    cut = text.index('"leo|5"') + 40  # mid-way through job 5's entry
    write_document(tmp_path, LEDGER_FILE, text[:cut])
    notes: list[str] = []
    got = load_ledger(tmp_path, notes)
    assert set(got.jobs) == {f"leo|{i}" for i in range(1, 5)}  # 1 from ledger.before.json, 2..4 salvaged
    assert given_by(got, "cleanup", ITEM) == "r1"  # the hand-off given is not forgotten
    assert got.hold and "recovered from ledger.before.json (the ledger before run r2)" in got.hold
    assert "after entry 'leo|4'" in got.hold and "characters unreadable" in got.hold
    assert any("moved aside" in n for n in notes) and any(n.startswith("LEDGER RECOVERED WITH LOSS") for n in notes)
    (aside,) = document_names(tmp_path, "ledger.json.corrupt-")  # the damaged document is kept
    assert read_document(tmp_path, aside) == text[:cut]
    assert json.loads(read_document(tmp_path, LEDGER_FILE))["hold"] == got.hold  # saved: a second read is not an empty ledger
    assert held(tmp_path) == got.hold


def test_one_bad_entry_costs_only_itself_and_is_named(tmp_path) -> None:
    _two_runs(tmp_path)
    raw = json.loads(read_document(tmp_path, LEDGER_FILE))
    raw["jobs"]["leo|3"]["step"] = "five hundred"
    write_document(tmp_path, LEDGER_FILE, json.dumps(raw))
    notes: list[str] = []
    got = load_ledger(tmp_path, notes)
    assert set(got.jobs) == {f"leo|{i}" for i in range(1, 10)} - {"leo|3"}
    assert "job entry 'leo|3': 'step' is not int | None" in got.hold


def test_a_ledger_gone_while_its_before_file_is_there_is_recovered_and_held(tmp_path) -> None:
    _two_runs(tmp_path)
    write_document(tmp_path, LEDGER_FILE, None)
    got = load_ledger(tmp_path)
    assert "leo|1" in got.jobs and "unusable (missing while ledger.before.json is there)" in got.hold


def test_a_first_ledger_is_not_a_reset(tmp_path) -> None:
    assert load_ledger(tmp_path).hold == "" and not held(tmp_path)


def test_acts_are_held_until_a_person_confirms(tmp_path, monkeypatch) -> None:
    """The hand-offs' runner refuses an act script while held (read-only scripts still run)."""
    from sweep_operators import handoff_io

    _two_runs(tmp_path)
    write_document(tmp_path, LEDGER_FILE, "{")
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
    before = read_document(tmp_path, LEDGER_FILE)

    def half(ledger: Ledger) -> tuple[Ledger, None]:
        ledger.jobs.clear()
        raise RuntimeError("the worker died")

    with pytest.raises(RuntimeError):
        update_ledger(tmp_path, half)
    assert read_document(tmp_path, LEDGER_FILE) == before and len(load_ledger(tmp_path).jobs) == 9


def test_a_database_that_cannot_be_read_fails_never_an_empty_ledger(tmp_path, monkeypatch) -> None:
    """An unreadable database (here: not a database at all) raises; nothing reads as an empty ledger."""
    bad = tmp_path / "not-a.db"
    bad.write_bytes(b"\x00garbage" * 100)
    monkeypatch.setenv("SWEEP_STATE_URL", f"sqlite:///{bad}")
    with pytest.raises(Exception, match="not a database"):
        load_ledger(tmp_path)
