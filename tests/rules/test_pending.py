"""The Pending table and its flags from the gather's PENDING listing (squeue --start, epoch times): a
successor held with DependencyNeverSatisfied is flagged at once, a job pending past max_minutes on a
bad reason is flagged, a long wait on Priority or a short one on a bad reason is not."""

from __future__ import annotations

from helpers import gather_stdout, slurm_fixture, table_rows
from rules.test_rules import CONFIG

from sweep_core.pipeline.steps import run_fan_in
from sweep_core.slurm.gather import parse_gather_output
from sweep_core.slurm.parse import PENDING_FIELDS, CommandResult, SlurmOutputError, parse_pending
from sweep_core.slurm.snapshot import snapshot_from_output

M = "@@SWEEP-t@@"
NOW = 1_764_680_000
META = CommandResult(0, f"login01\n{NOW}\n+0000\nsweep\n", "")


def listing(*rows: tuple[str, ...]) -> CommandResult:
    head = M.join(h for _, h in PENDING_FIELDS)
    return CommandResult(0, "\n".join([head, *(M.join(r) for r in rows)]) + "\n", "")


ROWS = (
    ("201", "201", "PENDING", str(NOW - 600), "N/A", "1", "debug", "(DependencyNeverSatisfied)",
     "afterok:200(failed)", "rl__a2_cell4_resume1"),
    ("202", "202", "PENDING", str(NOW - 8 * 3600), "N/A", "4", "gpu", "(ReqNodeNotAvail, UnavailableNodes:n[1-2])",
     "(null)", "sft__b1_big"),
    ("203", "203", "PENDING", str(NOW - 8 * 3600), str(NOW + 3600), "1", "gpu", "(Priority)", "(null)", "eval-q"),
    ("204", "204", "PENDING", str(NOW - 1800), "N/A", "1", "gpu", "(PartitionDown)", "(null)", "eval-r"),
)  # fmt: skip


def sweep():
    records = {"meta": META, "squeue": slurm_fixture("squeue_running"), "pending": listing(*ROWS),
               "sacct": slurm_fixture("sacct_window")}  # fmt: skip
    out = parse_gather_output(gather_stdout(M, records), M)
    snap = snapshot_from_output("local", out, "login01", "2026-12-02T09:00:00+00:00", "2026-12-02T12:00:00+00:00")
    result = run_fan_in([snap], CONFIG)
    return result, {(f.rule, f.job_id): f.line() for f in result.flags if f.rule in ("chain_dependency_broken",
                                                                                     "pending_stuck")}  # fmt: skip


def test_parse_pending_reads_epoch_times_reason_and_dependency() -> None:
    rows = parse_pending(listing(*ROWS))
    assert [(r.job_id, r.reason, r.dependency, r.start) for r in rows][:2] == [
        ("201", "(DependencyNeverSatisfied)", "afterok:200(failed)", "N/A"),
        ("202", "(ReqNodeNotAvail, UnavailableNodes:n[1-2])", "(null)", "N/A"),
    ]
    try:
        parse_pending(slurm_fixture("squeue_running"))  # the RUNNING format is not trusted as this one
    except SlurmOutputError as exc:
        assert "header" in str(exc)
    else:
        raise AssertionError("a listing of another format was trusted")


def test_a_broken_chain_and_a_long_wait_on_a_bad_reason_are_flagged() -> None:
    _, flags = sweep()
    assert flags == {
        ("chain_dependency_broken", "201"): "[chain_dependency_broken] WARN local 201 rl__a2_cell4_resume1: chain"
        " broken: held with DependencyNeverSatisfied (afterok:200(failed)): the job it depends on did not end as"
        " the dependency needs, so this one never starts; resubmit the link (or cancel it) → diagnose",
        ("pending_stuck", "202"): "[pending_stuck] WARN local 202 sft__b1_big: pending 8h00m on ReqNodeNotAvail,"
        " UnavailableNodes:n[1-2] (over 360 min on ReqNodeNotAvail) → investigate",
    }


def test_the_pending_table_shows_reason_wait_expected_start_and_flags() -> None:
    result, _ = sweep()
    rows = {r["Job ID"]: r for r in table_rows(result.rendered.tables["Pending"])}
    assert list(rows) == ["201", "202", "203", "204"]
    assert rows["203"]["Reason"] == "Priority" and rows["203"]["Pending for"] == "8h00m"
    assert rows["203"]["Expected start"] == "2025-12-02 13:53 UTC" and rows["203"]["Note"] == "—"
    assert rows["201"]["Expected start"] == "N/A" and rows["201"]["Pending for"] == "10 min"
    assert rows["201"]["Note"].startswith("[chain_dependency_broken] chain broken")
    assert rows["201"]["Note"].endswith("; dependency afterok:200(failed)")
    assert "Pending" in result.rendered.text()
