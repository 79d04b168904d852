"""Harvest decisions (sweep_core.handoffs.harvest.plan) and the harvest script reader: UNKNOWN never reads as failed."""

from __future__ import annotations

import json
from pathlib import Path

from sweep_core.handoffs.harvest.plan import JobReport, PendingRow, apply_outcome, decide_row, scan, tracker_settings
from sweep_core.handoffs.harvest.remote import build_harvest_script, read_harvest
from sweep_core.handoffs.harvest.tracker_rows import pending_rows
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.gather import GatherOutput

GRID = (
    "| run | eval job | MATH500 | AIME24 | gsm8k | status | notes |\n|---|---|---|---|---|---|---|\n"
    "| cell_a | 101 | | | | ⏳ | |\n| cell_b | leonardo:102 | | | | ⏳ | |\n| cell_c | — | | | | ⏳ | |\n"
)
GOOD = json.dumps(
    {
        "results": {
            "math500": {"exact_match,none": 0.5},
            "aime24": {"exact_match,none": 0.1, "exact_match_stderr,none": 0.02},
            "gsm8k": {"exact_match,none": 0.7},
        }
    }
)


def _row(i: int = 0) -> PendingRow:
    return PendingRow(pending_rows(GRID, "grid.md")[i], "local")


def test_scan_defaults_cluster_and_notes_rows_without_job(tmp_path: Path) -> None:
    f = tmp_path / "grid.md"
    f.write_text(GRID)
    pending, notes = scan([f], "local")
    assert [(p.cluster, p.row.job_id) for p in pending] == [("local", "101"), ("leonardo", "102")]
    assert len(notes) == 1 and "cell_c" in notes[0]


def test_completed_with_scores_fills_and_copies_results() -> None:
    o = decide_row(_row(), JobReport(state="COMPLETED", results={"results_1.json": GOOD}))
    assert o.outcome == "filled" and o.files == {"cell_a/results_1.json": GOOD}
    new = apply_outcome(GRID, _row(), o)
    assert "| cell_a | 101 | 50.0 | 10.0±2.0 | 70.0 | ✅ | |" in new
    assert new.splitlines()[3:] == GRID.splitlines()[3:]


def test_completed_with_empty_results_stays_pending_and_flagged() -> None:
    o = decide_row(_row(), JobReport(state="COMPLETED", results={"results_1.json": '{"results": {}}'}))
    assert o.outcome == "flagged" and "COMPLETED but" in o.note
    line = apply_outcome(GRID, _row(), o).splitlines()[2]
    assert "⏳" in line and "COMPLETED but" in line
    assert decide_row(_row(), JobReport(state="COMPLETED")).outcome == "flagged"  # no results file at all


def test_failed_gets_first_real_traceback_and_unknown_is_never_failed() -> None:
    tail = 'Traceback (most recent call last):\n  File "a"\nValueError: bad config\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError: x\n'
    o = decide_row(_row(), JobReport(state="FAILED", log_tail=tail))
    assert o.outcome == "failed" and "ValueError: bad config" in o.note
    assert decide_row(_row(), JobReport(problem="unreachable")).outcome == "unknown"
    assert decide_row(_row(), JobReport(state="")).outcome == "unknown"
    assert decide_row(_row(), JobReport(state="RUNNING")).outcome == "waiting"
    assert apply_outcome(GRID, _row(), decide_row(_row(), JobReport(problem="x"))) == GRID


def test_read_harvest_maps_records_and_cluster_errors() -> None:
    out = GatherOutput(complete=True)
    out.records = {
        "sacct": CommandResult(0, "101|COMPLETED|eval-a\n102|FAILED|eval-b\n", ""),
        "rname:101:1": CommandResult(0, "results_x.json", ""),
        "rfile:101:1": CommandResult(0, GOOD, ""),
        "tail:102": CommandResult(0, "boom", ""),
    }
    reps = read_harvest(out, ["101", "102", "103"])
    assert reps["101"].results == {"results_x.json": GOOD} and reps["102"].log_tail == "boom"
    assert reps["103"].state == ""
    down = GatherOutput(complete=True)
    down.records = {"sacct": CommandResult(1, "", "sacct: error: Problem talking to the database: Connection refused")}
    assert all("Connection refused" in r.problem for r in read_harvest(down, ["101"]).values())


def test_script_refuses_bad_ids_and_settings_need_a_repo() -> None:
    import pytest

    with pytest.raises(ValueError):
        build_harvest_script(["1; rm -rf /"], "/d/%j", "", "M", 10)
    assert tracker_settings({"repo": None}, env={}) is None
    assert tracker_settings({}, env={"SWEEP_TRACKER_REPO": "/x"}).repo == "/x"
