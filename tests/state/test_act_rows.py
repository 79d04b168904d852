"""Acts and claims as rows of their own (schema 0004): a row store today's code wrote (commit 0cc8c1b,
tests/fixtures/state_v0003) upgraded by ``sweep-state upgrade`` reads the same as that code read it,
no job row left holding acts or claims inline (one that does reads as damaged, moved aside); a fold
writes no act or claim row, an act written touches only its own row; and on PostgreSQL (a throwaway
server: slow) two workers claiming one act at once: exactly one wins, a claim of another job never
waits."""

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

from sweep_core.handoffs.batch_job import usecase as batch
from sweep_core.ledger.acts import MAX_ACTS, ActKind, acts_of, record_acts
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.store import fold_run, ledger_for_run, load_ledger
from sweep_core.state import db, migrate
from sweep_core.state.cli import main

postgres_url = throwaway_pg.postgres_url  # the fixture
FIXTURE = Path(__file__).parents[1] / "fixtures" / "state_v0003"
SPACE, OTHER = "s3://ops-sweeps/run-logs", "s3://ops-sweeps/other-run-logs"
END = "2026-12-04T03:00:00+00:00"


def _table(run_log_dir: str | Path, table: str) -> list[tuple]:
    """(gen, job key, what, updated_at) of every row of ``table`` in the space, sorted."""
    what = "seq, body" if table == "sweep_state_acts" else "kind, run_id"
    with rows_of(run_log_dir) as rows:
        q = sa.text(f"SELECT gen, job_key, {what}, updated_at FROM {table} WHERE space=:s ORDER BY 1, 2, 3")
        return [tuple(r) for r in rows.conn.execute(q, {"s": rows.space})]


def test_a_row_store_of_today_upgraded_to_act_rows_reads_the_same_and_keeps_no_inline_acts(
    tmp_path, monkeypatch, capsys
) -> None:
    shutil.copy(FIXTURE / "state.db", tmp_path / "state.db")
    url = f"sqlite:///{tmp_path / 'state.db'}"
    monkeypatch.setenv(db.ENV, url)
    assert migrate.current(db.new_engine(url)) == "0003"
    assert main(["upgrade", "--url", url]) == 0
    assert "at 0006 (upgraded from 0003 through 0004, 0005, 0006)" in capsys.readouterr().out
    expected = json.loads((FIXTURE / "expected.json").read_text())
    for space in (SPACE, OTHER):  # the same, each attempt now saying its act (0005)
        ledger = load_ledger(space)
        assert acts_as_before(ledger.to_dict(), expected[space]["ledger"]) == expected[space]["ledger"]
        rerun = ledger_for_run(space, ledger.run_id, ledger.window_end).to_dict()
        assert acts_as_before(rerun, expected[space]["rerun"]) == expected[space]["rerun"]
    relaunch = acts_of(load_ledger(SPACE), "leo", "3", ActKind.RELAUNCH)[0]
    assert (relaunch["act"], relaunch["target"], relaunch["act_cluster"]) == ("requeue", "3", "leo")
    # the acts and claims are rows now, the job rows hold neither, in every generation
    with rows_of(SPACE) as rows:
        bodies = rows.conn.execute(sa.text("SELECT body FROM sweep_state_jobs WHERE body IS NOT NULL")).scalars()
        assert all(not {"acts", "handoffs"} & json.loads(b).keys() for b in bodies)
    acts = [(g, k, s, json.loads(b)["kind"]) for g, k, s, b, _ in _table(SPACE, "sweep_state_acts")]
    assert acts == [("now", "leo|3", 0, "evidence"), ("now", "leo|3", 1, "relaunch"), ("now", "leo|77", 0, "relaunched_from")]  # fmt: skip
    claims = [r[:4] for r in _table(SPACE, "sweep_state_claims")]
    assert ("now", "leo|4", "cleanup", "scheduled__r3") in claims and (
        "now",
        "leo|5",
        "cancel",
        "scheduled__r3",
    ) in claims
    assert ("before", "leo|2", "cleanup", "scheduled__r2") in claims  # the ledger before r3 keeps its own
    assert main(["upgrade", "--url", url]) == 0 and "(already there)" in capsys.readouterr().out


def test_a_job_row_written_with_inline_acts_after_the_upgrade_is_moved_aside_never_read(tmp_path) -> None:
    fold_run(tmp_path, "r1", END, _jobs(3))
    fold_run(tmp_path, "r2", "2026-12-04T06:00:00+00:00", _jobs(3, "COMPLETED"))  # job 1's row before r2 kept
    old_format = json.dumps({**json.loads(read_row(tmp_path, "leo|1") or "{}"), "acts": [{"kind": "cancel"}]})
    with rows_of(tmp_path) as rows:  # as a writer of the format before 0004 would: acts inside the job row
        rows.conn.execute(
            sa.text("UPDATE sweep_state_jobs SET body=:b WHERE space=:s AND gen='now' AND job_key='leo|1'"),
            {"b": old_format, "s": rows.space},
        )
    notes: list[str] = []
    ledger = load_ledger(tmp_path, notes)
    assert "'acts' is not list[dict[str, str]]" in ledger.hold  # held until a person confirms
    assert ledger.jobs["leo|1"].state == "RUNNING" and ledger.jobs["leo|1"].acts == []  # as it stood before r2
    (note,) = [n for n in notes if "moved aside to corrupt-" in n]
    gen = note.split("moved aside to ")[1].split(",")[0]
    with rows_of(tmp_path) as rows:  # the row as stored, no reader in between
        q = sa.text("SELECT body FROM sweep_state_jobs WHERE space=:s AND gen=:g AND job_key='leo|1'")
        aside = json.loads(rows.conn.execute(q, {"s": rows.space, "g": gen}).scalar_one())
    assert aside["unread"] == {"acts": [{"kind": "cancel"}], "handoffs": {}}  # what it held inline: kept, not lost


def _jobs(n: int, state: str = "RUNNING"):
    def fold(ledger: Ledger) -> tuple[Ledger, None]:
        for i in range(n):
            e = ledger.jobs.setdefault(f"leo|{i}", LedgerEntry("leo", str(i), f"sft__{i}"))
            e.state = state if i == 1 else (e.state or "RUNNING")
        return ledger, None

    return fold


def _act(n: int, kind: str = ActKind.EVIDENCE) -> dict[str, str]:
    return {"kind": kind, "at": f"2026-12-04T03:{n // 60:02d}:{n % 60:02d}+00:00", "tail": f"line {n}"}


def test_a_fold_writes_no_act_row_and_an_act_written_touches_only_its_own_row(tmp_path) -> None:
    fold_run(tmp_path, "r1", END, _jobs(5))
    record_acts(tmp_path, [("leo", "1", "sft__1", _act(i)) for i in range(3)])
    acts0, claims0 = _table(tmp_path, "sweep_state_acts"), _table(tmp_path, "sweep_state_claims")
    time.sleep(0.01)
    fold_run(tmp_path, "r2", "2026-12-04T06:00:00+00:00", _jobs(5, "COMPLETED"))  # job 1 changed state
    now = lambda table: [r for r in _table(tmp_path, table) if r[0] == "now"]  # noqa: E731
    assert (
        now("sweep_state_acts") == acts0 and now("sweep_state_claims") == claims0
    )  # (the ledger before r2 keeps a copy)
    time.sleep(0.01)
    record_acts(tmp_path, [("leo", "1", "sft__1", _act(3))])
    acts1 = now("sweep_state_acts")
    assert acts1[:3] == acts0 and [r[2] for r in acts1] == [0, 1, 2, 3]  # appended, the others untouched
    # a claim act filled in place keeps its place; dropped, only its row goes
    entry = {"cluster": "leo", "job_id": "2", "name": "sft__2"}
    assert batch.claim_act(tmp_path, entry, lambda _: 1, {"kind": "submitted", "run": "r2"}) == 1
    record_acts(tmp_path, [("leo", "2", "sft__2", _act(9))])
    batch.fill_act(tmp_path, "leo", "2", "submitted", 1, "4242", "")
    rows2 = [r for r in now("sweep_state_acts") if r[1] == "leo|2"]
    assert [(r[2], json.loads(r[3]).get("job")) for r in rows2] == [(0, "4242"), (1, None)]
    batch.drop_act(tmp_path, "leo", "2", "submitted", 1)  # (nothing of it claimed any more: a no-op)
    assert [a.get("job") for a in acts_of(load_ledger(tmp_path), "leo", "2")] == ["4242", None]
    assert now("sweep_state_acts")[:4] == acts1  # job 1's rows never written again


def test_a_job_past_its_act_cap_keeps_its_newest_acts_in_order(tmp_path) -> None:
    fold_run(tmp_path, "r1", END, _jobs(2))
    for i in range(MAX_ACTS + 7):
        record_acts(tmp_path, [("leo", "1", "sft__1", _act(i))])
    got = acts_of(load_ledger(tmp_path), "leo", "1")
    assert [a["tail"] for a in got] == [f"line {i}" for i in range(7, MAX_ACTS + 7)]
    assert len([r for r in _table(tmp_path, "sweep_state_acts") if r[0] == "now"]) == MAX_ACTS


def _reserve(run_log_dir: Path, job: str, run: str, inside=None, go=None) -> int:
    """claim_act of the next submission of ``job``: the attempt won, 0 when one is held already."""

    def allowed(ledger: Ledger) -> int:
        if inside is not None:
            inside.set()
            assert go.wait(60)
        return 0 if acts_of(ledger, "leo", job, "submitted") else 1

    entry = {"cluster": "leo", "job_id": job, "name": f"sft__{job}"}
    return batch.claim_act(run_log_dir, entry, allowed, {"kind": "submitted", "run": run})


@pytest.mark.slow
def test_on_postgresql_two_workers_claiming_one_act_exactly_one_wins_and_another_job_never_waits(
    tmp_path, postgres_url, monkeypatch
) -> None:
    migrate.upgrade(db.new_engine(postgres_url))
    monkeypatch.setenv(db.ENV, postgres_url)
    fold_run(tmp_path, "r1", END, _jobs(3))
    inside, go, got = threading.Event(), threading.Event(), {}
    a = threading.Thread(target=lambda: got.setdefault("a", _reserve(tmp_path, "1", "worker-a", inside, go)))
    a.start()
    assert inside.wait(30)  # worker a holds job 1's row, its claim open
    t0 = time.monotonic()
    assert _reserve(tmp_path, "2", "worker-b") == 1  # job 2: never waits on job 1's row
    assert time.monotonic() - t0 < 5 and a.is_alive()
    c = threading.Thread(target=lambda: got.setdefault("c", _reserve(tmp_path, "1", "worker-c")))
    c.start()
    c.join(2)
    assert c.is_alive()  # the same act: waits for worker a's transaction
    go.set()
    a.join(30), c.join(30)
    assert got == {"a": 1, "c": 0}  # exactly one wins
    (claim,) = acts_of(load_ledger(tmp_path), "leo", "1", "submitted")
    assert claim["run"] == "worker-a"


@pytest.mark.slow
def test_on_postgresql_a_row_store_of_today_upgraded_to_act_rows_reads_the_same(postgres_url, monkeypatch) -> None:
    """The fixture's rows (0cc8c1b's, schema 0003) copied as they are into PostgreSQL at 0003, then
    ``sweep-state upgrade``: the same ledger and re-run base as that code read."""
    engine = db.new_engine(postgres_url)
    migrate.upgrade(engine, to="0003")
    src = db.new_engine(f"sqlite:///{FIXTURE / 'state.db'}")
    tables = ("sweep_state_documents", "sweep_state_ledger", "sweep_state_jobs")
    with src.connect() as a, engine.begin() as b:
        for table in tables:
            got = a.execute(sa.text(f"SELECT * FROM {table}")).mappings().all()
            cols = ", ".join(got[0].keys())
            marks = ", ".join(f":{c}" for c in got[0].keys())
            b.execute(sa.text(f"INSERT INTO {table} ({cols}) VALUES ({marks})"), [dict(r) for r in got])
    assert main(["upgrade", "--url", postgres_url]) == 0 and migrate.current(engine) == migrate.head()
    monkeypatch.setenv(db.ENV, postgres_url)
    expected = json.loads((FIXTURE / "expected.json").read_text())
    for space in (SPACE, OTHER):
        ledger = load_ledger(space)
        assert acts_as_before(ledger.to_dict(), expected[space]["ledger"]) == expected[space]["ledger"]
        rerun = ledger_for_run(space, ledger.run_id, ledger.window_end).to_dict()
        assert acts_as_before(rerun, expected[space]["rerun"]) == expected[space]["rerun"]
    assert len(_table(SPACE, "sweep_state_acts")) == 3
