"""The ledger as rows: a store the document store wrote (commit 2127ded's own code,
tests/fixtures/state_v0001) upgraded by ``sweep-state upgrade`` reads the same as that code read it,
the documents gone from the live path; a damaged document is recovered on the way in; a fold writes
only the rows it changed; a claim touches only its jobs' rows, and on PostgreSQL (a throwaway server:
slow) two claims of different jobs never wait on each other while two of one job: one wins."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
import throwaway_pg
from ledger_rows import acts_as_before, read_row, rows_of

from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.given import given_by, mark_given
from sweep_core.ledger.runs import give_once
from sweep_core.ledger.store import fold_run, ledger_for_run, load_ledger, update_jobs
from sweep_core.state import db, migrate
from sweep_core.state.cli import main
from sweep_core.state.documents import document_names, read_document

postgres_url = throwaway_pg.postgres_url  # the fixture
FIXTURE = Path(__file__).parents[1] / "fixtures" / "state_v0001"
SPACE, OTHER = "s3://ops-sweeps/run-logs", "s3://ops-sweeps/other-run-logs"
END = "2026-12-04T03:00:00+00:00"


def _old_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    shutil.copy(FIXTURE / "state.db", tmp_path / "state.db")
    url = f"sqlite:///{tmp_path / 'state.db'}"
    monkeypatch.setenv(db.ENV, url)
    return url


def _as_then(ledger: dict, then: dict) -> dict:
    """``ledger`` without the entry fields added since the fixture's code, where they hold their empty
    default (a field added later, e.g. the metric streams' cursors, is no change to what was kept)."""
    jobs = {
        key: {k: v for k, v in entry.items() if k in then["jobs"].get(key, {}) or v not in ({}, [], None)}
        for key, entry in ledger["jobs"].items()
    }
    return {**ledger, "jobs": jobs}


def test_a_document_store_upgraded_to_rows_reads_the_same_as_before(tmp_path, monkeypatch, capsys) -> None:
    url = _old_store(tmp_path, monkeypatch)
    assert migrate.current(db.new_engine(url)) == "0001"
    assert main(["upgrade", "--url", url]) == 0
    assert f"at {migrate.head()} (upgraded from 0001 through 0002, 0003, 0004, 0005, 0006)" in capsys.readouterr().out
    expected = json.loads((FIXTURE / "expected.json").read_text())
    for space in (SPACE, OTHER):
        ledger = load_ledger(space)
        then = expected[space]["ledger"]
        assert _as_then(acts_as_before(ledger.to_dict(), then), then) == then
        rerun = ledger_for_run(space, ledger.run_id, ledger.window_end).to_dict()
        then = expected[space]["rerun"]
        assert _as_then(acts_as_before(rerun, then), then) == then
    assert len(expected[SPACE]["ledger"]["jobs"]) == 10 and expected[SPACE]["rerun"]["run_id"] == "scheduled__r2"
    # no reader of the old format is left: the ledger documents are gone, the backlog document stays
    assert document_names(SPACE) == ["cleanup_backlog.json"] and read_document(OTHER, "ledger.json") is None
    assert main(["upgrade", "--url", url]) == 0 and "(already there)" in capsys.readouterr().out
    # a re-run of the latest run after the upgrade folds against the ledger before it, as before
    fold_run(SPACE, "scheduled__r3", expected[SPACE]["ledger"]["window_end"], lambda led: (led, None))
    again = load_ledger(SPACE)
    assert set(again.jobs) == set(expected[SPACE]["rerun"]["jobs"]) | {"leo|77"}  # job 9 came with r3; 77's link kept
    assert again.jobs["leo|4"].handoffs == {"cleanup": "scheduled__r3"} and again.jobs["leo|3"].acts


def test_a_damaged_ledger_document_is_recovered_on_the_way_in_and_kept(tmp_path, monkeypatch) -> None:
    url = _old_store(tmp_path, monkeypatch)
    engine = db.new_engine(url)
    with engine.begin() as conn:
        text = conn.execute(sa.text("SELECT body FROM sweep_state_documents WHERE space=:s AND name='ledger.json'"), {"s": SPACE}).scalar_one()  # fmt: skip
        cut = text.index('"leo|5"') + 40  # mid-way through job 5's entry
        conn.execute(sa.text("UPDATE sweep_state_documents SET body=:b WHERE space=:s AND name='ledger.json'"), {"b": text[:cut], "s": SPACE})  # fmt: skip
    migrate.upgrade(engine)
    got = load_ledger(SPACE)
    expected = json.loads((FIXTURE / "expected.json").read_text())[SPACE]
    # jobs 1..4 from the damaged text; 5..8 as the ledger before r3 had them; 9 and 77 (new in r3, after the cut) lost
    assert set(got.jobs) == {f"leo|{i}" for i in range(1, 9)}
    assert got.jobs["leo|4"].handoffs == {"cleanup": "scheduled__r3"}  # salvaged, the hand-off given kept
    assert "ledger.json unusable at the upgrade to rows" in got.hold and "after entry 'leo|4'" in got.hold
    assert got.run_id == "" and got.window_end == expected["rerun"]["window_end"]
    (aside,) = document_names(SPACE, "ledger.json.corrupt-")
    assert read_document(SPACE, aside) == text[:cut]


def _rows_written(run_log_dir: Path) -> dict[str, object]:
    with rows_of(run_log_dir) as rows:
        q = sa.text("SELECT job_key, updated_at FROM sweep_state_jobs WHERE space=:s AND gen='now'")
        return dict(rows.conn.execute(q, {"s": rows.space}).tuples().all())


def _jobs(n: int, state: str):
    def fold(ledger: Ledger) -> tuple[Ledger, None]:
        for i in range(n):
            e = ledger.jobs.setdefault(f"leo|{i}", LedgerEntry("leo", str(i), f"sft__{i}"))
            e.state = state if i == 7 else (e.state or "RUNNING")
        return ledger, None

    return fold


def test_a_fold_and_a_claim_write_only_the_rows_they_change(tmp_path) -> None:
    fold_run(tmp_path, "r1", "2026-12-04T00:00:00+00:00", _jobs(200, "RUNNING"))
    first = _rows_written(tmp_path)
    time.sleep(0.01)
    fold_run(tmp_path, "r2", END, _jobs(200, "COMPLETED"))  # only job 7 changed
    second = _rows_written(tmp_path)
    assert len(first) == 200 and {k for k in first if first[k] != second[k]} == {"leo|7"}
    assert read_row(tmp_path, "leo|7", "before") is not None and read_row(tmp_path, "leo|8", "before") is None
    assert ledger_for_run(tmp_path, "r2", END).jobs["leo|7"].state == "RUNNING"  # a re-run's base: before r2
    time.sleep(0.01)
    confs, _ = give_once(
        tmp_path, {"cleanup": {"jobs": [{"cluster": "leo", "job_id": "7"}]}}, run_id="r2", dry_run=False
    )
    third = _rows_written(tmp_path)
    assert confs["cleanup"]["jobs"] and {k for k in third if third[k] != second[k]} == {"leo|7"}
    assert load_ledger(tmp_path).jobs["leo|7"].handoffs == {"cleanup": "r2"}


def test_a_claim_that_reaches_past_its_jobs_is_refused_and_writes_nothing(tmp_path) -> None:
    fold_run(tmp_path, "r1", END, _jobs(3, "RUNNING"))

    def greedy(ledger: Ledger) -> tuple[Ledger, None]:
        mark_given(ledger, "cleanup", [{"cluster": "leo", "job_id": "9"}], "r1")  # not a job it locked
        return ledger, None

    with pytest.raises(ValueError, match="touched more than its jobs' rows"):
        update_jobs(tmp_path, {"leo|1"}, greedy)
    assert "leo|9" not in load_ledger(tmp_path).jobs


def _claim(url_dir: Path, key: str, run: str, inside: threading.Event | None = None, go: threading.Event | None = None):
    def change(ledger: Ledger) -> tuple[Ledger, str]:
        item = {"cluster": "leo", "job_id": key}
        if inside is not None and go is not None:
            inside.set()
            assert go.wait(60)
        by = given_by(ledger, "cleanup", item)
        if by and by != run:
            return ledger, by
        mark_given(ledger, "cleanup", [item], run)
        return ledger, ""

    return update_jobs(url_dir, {f"leo|{key}"}, change)


@pytest.mark.slow
def test_on_postgresql_claims_of_two_jobs_never_wait_and_of_one_job_exactly_one_wins(
    tmp_path, postgres_url, monkeypatch
) -> None:
    migrate.upgrade(db.new_engine(postgres_url))
    monkeypatch.setenv(db.ENV, postgres_url)
    fold_run(tmp_path, "r1", END, _jobs(3, "RUNNING"))
    inside, go, got = threading.Event(), threading.Event(), {}
    a = threading.Thread(target=lambda: got.setdefault("a", _claim(tmp_path, "1", "worker-a", inside, go)))
    a.start()
    assert inside.wait(30)  # worker a holds job 1's row, its transaction open
    t0 = time.monotonic()
    assert _claim(tmp_path, "2", "worker-b") == ""  # job 2: never waits on job 1's row
    assert time.monotonic() - t0 < 5 and a.is_alive()
    c = threading.Thread(target=lambda: got.setdefault("c", _claim(tmp_path, "1", "worker-c")))
    c.start()
    c.join(2)
    assert c.is_alive()  # job 1 again: waits for worker a's transaction
    go.set()
    a.join(30), c.join(30)
    assert got == {"a": "", "c": "worker-a"}  # exactly one wins; the other sees who
    ledger = load_ledger(tmp_path)
    assert ledger.jobs["leo|1"].handoffs == {"cleanup": "worker-a"} and ledger.jobs["leo|2"].handoffs == {
        "cleanup": "worker-b"
    }
