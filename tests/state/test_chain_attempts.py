"""The chain's failed leg jobs as kernel attempt rows (schema 0006): a store of chain cells that
26d1348's code wrote (``failed`` as ``"<leg>:<id>,…"`` text, tests/fixtures/state_v0005) upgraded by
``sweep-state upgrade`` reads back the same legs, failed jobs, counts and escalation, each failed
leg now a kernel attempt row (an sbatch act) and no text reader left; an entry that is not
``<leg>:<id>`` is kept whole and reads UNKNOWN with the reason, never counted as a failure. On
SQLite and (slow: a throwaway server) PostgreSQL."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import throwaway_pg

from sweep_core.handoffs.chain import plan
from sweep_core.handoffs.chain.plan import CellState, ClusterView, advance, cell_values, chain_series
from sweep_core.handoffs.kernel.act import Act, ActKind
from sweep_core.handoffs.kernel.attempt import UNREADABLE, from_row, to_row
from sweep_core.handoffs.kernel.result import Outcome
from sweep_core.state import db, migrate
from sweep_core.state.cells import load_cells, move_in
from sweep_core.state.cli import main

postgres_url = throwaway_pg.postgres_url  # the fixture
FIXTURE = Path(__file__).parents[1] / "fixtures" / "state_v0005"
SPACE, OTHER = "s3://ops-sweeps/run-logs", "s3://ops-sweeps/other-run-logs"


def _reads_back(expected: dict[str, Any]) -> None:
    got = {f"{space}#{key}": body for space in (SPACE, OTHER) for key, body in load_cells(space).items()}
    assert got.keys() == expected.keys()
    for key, want in expected.items():
        body, was = got[key], want["stored"]
        assert {k: v for k, v in body.items() if k != "failed"} == {k: v for k, v in was.items() if k != "failed"}
        cs = CellState.from_dict(body)
        assert cs.leg == want["leg"] and cs.escalated == want["escalated"]
        assert {leg: cs.failures(leg) for leg in ("upload", "eval")} == want["failures"]
        assert (None if cs.hub is None else str(cs.hub.outcome)) == want["hub"]
        assert isinstance(body.get("failed", []), list)  # rows, no text left
        assert cs.to_dict() == body  # stored as it reads
        entries = [e for e in (was.get("failed") or "").split(",") if e]
        assert len(cs.failed) == len(entries)  # one row per entry: nothing lost
        cluster = "leo" if "#found@leo/" in key else ""
        for a, entry in zip(cs.failed, entries, strict=True):
            if a.problem:  # not <leg>:<id>: kept with its text, UNKNOWN, counted for no leg
                assert entry in want["unreadable"] and a.get("entry") == entry
                assert a.outcome is Outcome.UNKNOWN and f"{entry!r} is not <leg>:<id>" in a.result.reason
                continue
            assert f"{a.kind.removeprefix('chain_')}:{a.job}" == entry and a.outcome is Outcome.FAILED
            assert a.act == Act(ActKind.SBATCH, cluster, was["sft_job"])


def test_chain_cells_stored_as_text_upgraded_once_read_the_same_each_failed_leg_an_attempt_row(
    tmp_path, monkeypatch, capsys
) -> None:
    shutil.copy(FIXTURE / "state.db", tmp_path / "state.db")
    url = f"sqlite:///{tmp_path / 'state.db'}"
    monkeypatch.setenv(db.ENV, url)
    assert migrate.current(db.new_engine(url)) == "0005"
    assert main(["upgrade", "--url", url]) == 0
    assert "at 0006 (upgraded from 0005 through 0006)" in capsys.readouterr().out
    expected = json.loads((FIXTURE / "expected.json").read_text())
    _reads_back(expected)
    escalated = CellState.from_dict(load_cells(SPACE)["delphi/delphi_b"])
    assert [(a.attempt, a.job) for a in escalated.failed] == [(1, "202"), (2, "203")]
    assert main(["upgrade", "--url", url]) == 0 and "(already there)" in capsys.readouterr().out


@pytest.mark.slow
def test_on_postgresql_chain_cells_stored_as_text_upgraded_once_read_the_same(postgres_url, monkeypatch) -> None:
    """The fixture's cell rows (26d1348's, schema 0005) copied as they are into PostgreSQL at 0005,
    then ``sweep-state upgrade``."""
    engine = db.new_engine(postgres_url)
    migrate.upgrade(engine, to="0005")
    src = db.new_engine(f"sqlite:///{FIXTURE / 'state.db'}")
    with src.connect() as a, engine.begin() as b:
        got = a.execute(sa.text("SELECT space, cell, body FROM sweep_state_chain_cells")).mappings().all()
        b.execute(
            sa.text(
                "INSERT INTO sweep_state_chain_cells (space, cell, body, updated_at) VALUES (:space, :cell, :body, now())"
            ),
            [dict(r) for r in got],
        )
    assert main(["upgrade", "--url", postgres_url]) == 0 and migrate.current(engine) == "0006"
    monkeypatch.setenv(db.ENV, postgres_url)
    _reads_back(json.loads((FIXTURE / "expected.json").read_text()))


S = dataclasses.replace(
    chain_series(
        {
            "series": [
                {
                    "name": "delphi",
                    "cluster": "leo",
                    "match": r"^sft__(?P<cell>delphi_[a-z0-9_]+)$",
                    "hub_repo": "{org}/{cell}",
                    "upload": ["sbatch", "--parsable", "-J", "hf_upload__{cell}", "up.sh"],
                    "eval": ["sbatch", "--parsable", "-J", "eval-{cell}", "eval.sh"],
                    "tracker": "x/grid.md",
                }
            ]
        }
    )[0],
    leg_retries=1,
)


def test_a_failed_leg_is_stored_as_a_kernel_attempt_row_of_its_sbatch_and_escalates_as_before() -> None:
    values = cell_values(S, "delphi_a", "101", "ops", "")
    view = ClusterView({"hf_upload__delphi_a": [("201", "FAILED")]})
    first = advance(
        S, "delphi_a", CellState(leg="upload", sft_job="101", upload_job="201"), view, values, False, "x", None
    )  # noqa: E501
    (row,) = first.state.to_dict()["failed"]
    want = {"kind": "chain_upload", "attempt": "1", "job": "201", "outcome": "failed"}
    assert row == want | {"act": "sbatch", "target": "101", "act_cluster": "leo"}
    stored = CellState.from_dict(json.loads(json.dumps(first.state.to_dict())))
    stored.upload_job = "202"
    view = ClusterView({"hf_upload__delphi_a": [("202", "TIMEOUT"), ("201", "FAILED")]})
    second = advance(S, "delphi_a", stored, view, values, False, "x", None)
    assert second.escalated == "upload" and second.state.failures("upload") == ["201", "202"]
    assert [from_row(r).attempt for r in second.state.to_dict()["failed"]] == [1, 2]


GARBLED = {"kind": "chain_upload", "attempt": "x", "job": "201", "outcome": "failed"}


@pytest.mark.parametrize(
    ("failed", "why", "kept"),
    [  # kept: what is written back (less the reason)
        ("upload:201,eval:9", "failed is a str, not a list of attempt rows", [{"entry": "upload:201,eval:9"}]),
        (["upload:201"], "a failed leg row is not an object", [{"entry": "upload:201"}]),
        ([GARBLED], "attempt 'x' is not a number", [GARBLED]),
    ],
)
def test_a_failed_that_does_not_read_is_kept_whole_reads_unknown_and_counts_no_failure(
    failed: object, why: str, kept: list[dict[str, str]]
) -> None:
    cs = CellState.from_dict({"leg": "upload", "sft_job": "1", "failed": failed, "escalated": ""})
    assert cs.failures("upload") == [] and [a.outcome for a in cs.failed] == [Outcome.UNKNOWN]
    assert why in cs.failed[0].result.reason  # type: ignore[union-attr]
    again = CellState.from_dict(json.loads(json.dumps(cs.to_dict())))  # stored and read again
    assert [{k: v for k, v in r.items() if k != UNREADABLE} for r in again.to_dict()["failed"]] == kept
    assert again.failures("upload") == [] and why in again.failed[0].result.reason  # type: ignore[union-attr]


def test_no_text_reader_is_left_on_the_live_path() -> None:
    assert not hasattr(plan, "_failed_from_text") and not hasattr(plan, "_failed_to_text")


def test_an_earlier_versions_variable_is_moved_in_with_its_failed_legs_as_rows(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(db.ENV, f"sqlite:///{tmp_path / 'state.db'}")
    cell = {"leg": "upload", "sft_job": "5", "upload_job": "7", "failed": "upload:6,?", "escalated": ""}
    assert move_in(tmp_path, json.dumps({"found@leo/sft__x": cell})) == 1
    cs = CellState.from_dict(load_cells(tmp_path)["found@leo/sft__x"])
    assert cs.failures("upload") == ["6"] and cs.failed[0].act == Act(ActKind.SBATCH, "leo", "5")
    assert (
        cs.failed[1].outcome is Outcome.UNKNOWN
        and cs.failed[1].get(UNREADABLE)
        and to_row(cs.failed[1])["entry"] == "?"
    )
