"""Old act formats migrated once (schema 0005): a row store 64b833f's code wrote with acts of older
versions (tests/fixtures/state_v0004) upgraded by ``sweep-state upgrade`` reads back as that code
read it, each attempt now saying its act and each old cancel what it did, and no reader of the old
formats left: an act the migration could not read is kept whole and reads UNKNOWN with the reason.
On SQLite and (slow: a throwaway server) PostgreSQL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import throwaway_pg
from ledger_rows import acts_as_before

from sweep_core.handoffs.kernel.act import Act, ActKind
from sweep_core.handoffs.kernel.attempt import UNREADABLE, from_row, to_row
from sweep_core.handoffs.kernel.result import Outcome
from sweep_core.ledger.reconcile import lost_cancel
from sweep_core.ledger.store import ledger_for_run, load_ledger
from sweep_core.state import db, migrate
from sweep_core.state.cli import main
from sweep_core.state.migrations.v0005_acts_said import said, with_severity

postgres_url = throwaway_pg.postgres_url  # the fixture
FIXTURE = Path(__file__).parents[1] / "fixtures" / "state_v0004"
SPACE, OTHER = "s3://ops-sweeps/run-logs", "s3://ops-sweeps/other-run-logs"
DIDS = {"leo|4": "cancelled", "leo|5": "unknown", "leo|6": "requeued"}  # read from the old acts' texts
OUTCOMES = {"cancelled": Outcome.OK, "unknown": Outcome.UNKNOWN, "requeued": Outcome.OK}


def _reads_back(expected: dict[str, Any]) -> None:
    for space in (SPACE, OTHER):
        ledger = load_ledger(space)
        assert acts_as_before(ledger.to_dict(), expected[space]["ledger"]) == expected[space]["ledger"]
        rerun = ledger_for_run(space, ledger.run_id, ledger.window_end).to_dict()
        assert acts_as_before(rerun, expected[space]["rerun"]) == expected[space]["rerun"]
    ledger = load_ledger(SPACE)
    for key, attempts in expected["attempts"].items():
        e = ledger.jobs[key]
        for row, want in zip(e.acts, attempts, strict=True):
            a = from_row(row)
            assert to_row(a) == row  # stored as it reads
            if key == "leo|1":  # the cancel whose text no version printed: kept whole, UNKNOWN, no act guessed
                was = expected[SPACE]["ledger"]["jobs"][key]["acts"][0]
                assert {k: v for k, v in row.items() if k != UNREADABLE} == was
                assert a.act is None and a.outcome is Outcome.UNKNOWN
                assert "'scancel: rc 1?'" in a.result.reason and "check the job by hand" in a.result.reason
                continue
            want_act = None if want["act"] is None else Act(ActKind(want["act"]), "leo", want["target"])
            assert a.act == want_act and a.problem == ""  # the act the old reader derived, now stored
            assert row.get("did") == (DIDS.get(key) if a.kind in ("cancel", "relaunch") and key in DIDS else None)
            said_ = OUTCOMES[row["did"]] if "did" in row else None
            assert a.outcome is (said_ if said_ else (Outcome(want["outcome"]) if want["outcome"] else None))
    lost = {k: (lost_cancel(e) or {}).get("at") for k, e in sorted(ledger.jobs.items())}
    assert lost == expected["lost_cancel"] | {"leo|1": "2026-12-04T12:20:00+00:00"}  # unreadable: reconciled from sacct


def test_a_store_with_old_act_formats_upgraded_once_reads_the_same_each_act_saying_what_it_is(
    tmp_path, monkeypatch, capsys
) -> None:
    shutil.copy(FIXTURE / "state.db", tmp_path / "state.db")
    url = f"sqlite:///{tmp_path / 'state.db'}"
    monkeypatch.setenv(db.ENV, url)
    assert migrate.current(db.new_engine(url)) == "0004"
    assert main(["upgrade", "--url", url]) == 0
    assert "at 0006 (upgraded from 0004 through 0005, 0006)" in capsys.readouterr().out
    _reads_back(json.loads((FIXTURE / "expected.json").read_text()))
    assert main(["upgrade", "--url", url]) == 0 and "(already there)" in capsys.readouterr().out


@pytest.mark.slow
def test_on_postgresql_a_store_with_old_act_formats_upgraded_once_reads_the_same(postgres_url, monkeypatch) -> None:
    """The fixture's rows (64b833f's, schema 0004) copied as they are into PostgreSQL at 0004, then
    ``sweep-state upgrade``."""
    engine = db.new_engine(postgres_url)
    migrate.upgrade(engine, to="0004")
    src = db.new_engine(f"sqlite:///{FIXTURE / 'state.db'}")
    tables = ("sweep_state_documents", "sweep_state_ledger", "sweep_state_jobs", "sweep_state_acts", "sweep_state_claims")  # fmt: skip
    with src.connect() as a, engine.begin() as b:
        for table in tables:
            got = a.execute(sa.text(f"SELECT * FROM {table}")).mappings().all()
            cols, marks = ", ".join(got[0].keys()), ", ".join(f":{c}" for c in got[0].keys())
            b.execute(sa.text(f"INSERT INTO {table} ({cols}) VALUES ({marks})"), [dict(r) for r in got])
    assert main(["upgrade", "--url", postgres_url]) == 0 and migrate.current(engine) == migrate.head()
    monkeypatch.setenv(db.ENV, postgres_url)
    _reads_back(json.loads((FIXTURE / "expected.json").read_text()))


OLD_ROWS = [  # as the code before 7dbfeed wrote them: no act (and before 59f3363: no did)
    ({"kind": "cancel", "run": "r", "at": "t", "by": "ana", "result": "UNKNOWN: lost", "did": "unknown"},
     ActKind.SCANCEL, Outcome.UNKNOWN),
    ({"kind": "cancel", "run": "r", "result": "stopped (iris KILLED)"}, ActKind.STOP, Outcome.OK),
    ({"kind": "relaunch", "run": "r", "result": "requeued (PENDING)", "did": "requeued"}, ActKind.REQUEUE, Outcome.OK),
    ({"kind": "relaunch", "run": "r", "result": "cancelled and relaunched by the ops.md command as job 12",
      "new_job_id": "12"}, ActKind.SBATCH, Outcome.OK),
    ({"kind": "relaunch", "run": "r", "result": "x", "did": "exploded"}, ActKind.REQUEUE, Outcome.UNKNOWN),
    ({"kind": "upload", "attempt": "1", "upload_job": "77", "run": "r"}, ActKind.SBATCH, None),
    ({"kind": "consolidate", "job": "", "attempt": "1", "run": "r"}, ActKind.SBATCH, None),
    ({"kind": "db_register", "attempt": "1", "outcome": "done"}, ActKind.COMMAND, Outcome.OK),
]  # fmt: skip


@pytest.mark.parametrize(("row", "kind", "outcome"), OLD_ROWS, ids=[r["kind"] + str(i) for i, (r, _, _) in enumerate(OLD_ROWS)])  # fmt: skip
def test_an_old_attempt_is_given_its_act_once_and_reads_it_stored(
    row: dict[str, str], kind: ActKind, outcome: Outcome | None
) -> None:
    assert from_row(row).act is None  # the reader derives nothing any more
    new = said("leo|11", row)
    assert new is not None and {k: new[k] for k in row} == row  # nothing of it changed, only added
    back = from_row(new)
    assert back.act == Act(kind, "leo", "11") and back.outcome is outcome
    assert said("leo|11", new) is None  # written once: a second pass finds nothing to do


@pytest.mark.parametrize(
    "row",
    [
        {"kind": "reconciled", "of": "cancel", "did": "not taken"},  # a mark, not an act
        {"kind": "upload", "attempt": "1", "act": "sbatch", "target": "11", "act_cluster": "leo"},  # says it
        {"kind": "upload", "attempt": 1},  # not an object of strings: the reader says why, as before
        {"kind": "cancel", "act": "nuke", "target": "11", "did": "cancelled"},  # an unknown act: the reader says why
    ],
)
def test_a_mark_an_act_that_says_itself_or_a_garbled_row_is_left_as_it_is(row: dict[str, Any]) -> None:
    assert said("leo|11", row) is None


def test_an_old_cancel_whose_text_says_nothing_known_is_kept_whole_and_reads_unknown_with_the_reason() -> None:
    row = {"kind": "cancel", "run": "r", "at": "t", "result": "scancel: rc 1?"}
    new = said("leo|11", row)
    assert new is not None and new.keys() == {*row, UNREADABLE} and "did" not in new and "act" not in new
    back = from_row(new)
    assert back.outcome is Outcome.UNKNOWN and "'scancel: rc 1?'" in back.result.reason
    assert to_row(back) == new


LINE = "[liveness_stale] CRITICAL local RL 11 rl__a: no output for 185 min → kill-approval"


@pytest.mark.parametrize(
    ("record", "severity"),
    [
        ({"run": "r", "rule": "liveness_stale", "action": "kill-approval", "evidence": LINE}, "critical"),
        ({"run": "r", "rule": "", "action": "cancel", "evidence": "deep-dive KILL: reward 0"}, ""),  # no flag line
        ({"run": "r", "evidence": "[liveness_stale] LOUD no output"}, ""),  # not a severity
    ],
)
def test_a_cancel_handoff_stored_before_it_kept_the_severity_gets_it_once_from_its_line(
    record: dict[str, str], severity: str
) -> None:
    """(before a3a9719 the record kept no ``severity``; the authority check read it off the line on
    every read: handoffs.cancel.authority now reads the field only)"""
    row = {"cluster": "leo", "job_id": "11", "state": "RUNNING", "cancel_handoff": record}
    got = json.loads(with_severity(json.dumps(row)) or "{}")
    assert got == {**row, "cancel_handoff": {**record, "severity": severity}}
    assert with_severity(json.dumps(got)) is None  # once
    assert with_severity(json.dumps({**row, "cancel_handoff": {}})) is None and with_severity("{not json") is None
