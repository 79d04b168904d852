"""The batched gather script: quoting, records, and reading its output back."""

from __future__ import annotations

import subprocess

import pytest
from helpers import gather_stdout, record, slurm_fixture

from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.gather import (
    GatherRequest,
    build_gather_script,
    looks_like_fork_failure,
    parse_gather_output,
)


def test_script_is_valid_bash_and_quotes_the_user(tmp_path) -> None:
    evil = "x'; touch " + str(tmp_path / "pwned") + "; echo '"
    script, marker = build_gather_script(GatherRequest(user=evil, window_start=1, window_end=2))
    assert "U='x'\"'\"'; touch" in script  # shlex.quote form
    syntax = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert syntax.returncode == 0, syntax.stderr
    assert marker.startswith("@@SWEEP-")
    assert "find " not in script and " du " not in script


@pytest.mark.parametrize("field", ["window_start", "window_end", "tail_bytes", "max_jobs", "settle_s"])
def test_script_refuses_non_integer_numbers(field: str) -> None:
    kwargs = {"user": "u", "window_start": 1, "window_end": 2, field: "1; rm -rf /"}
    with pytest.raises(ValueError, match=field):
        build_gather_script(GatherRequest(**kwargs))  # type: ignore[arg-type]


def test_two_scripts_use_different_markers() -> None:
    req = GatherRequest(user="u", window_start=1, window_end=2)
    assert build_gather_script(req)[1] != build_gather_script(req)[1]


def test_output_round_trip_ignores_banner_lines() -> None:
    marker = "@@SWEEP-abc@@"
    sq = slurm_fixture("squeue_running")
    text = "Welcome to login01\nMOTD: maintenance Friday\n" + gather_stdout(marker, {"squeue": sq})
    out = parse_gather_output(text, marker)
    assert out.complete
    assert out.get("squeue") == sq
    assert out.problems == []


def test_output_without_end_record_is_incomplete() -> None:
    marker = "@@SWEEP-abc@@"
    out = parse_gather_output(gather_stdout(marker, {"meta": CommandResult(0, "h\n", "")}, complete=False), marker)
    assert not out.complete
    assert "meta" in out.records


def test_corrupt_and_cut_records_are_reported_not_raised() -> None:
    marker = "@@SWEEP-abc@@"
    good = record(marker, "sacct", CommandResult(0, "x\n", ""))
    text = f"{marker} squeue 0 !!!notbase64 -\n{marker} scontrol:1 0\n{good}\n"
    out = parse_gather_output(text, marker)
    assert "sacct" in out.records and "squeue" not in out.records
    assert len(out.problems) == 2
    assert any("corrupt" in p for p in out.problems)
    assert any("cut short" in p for p in out.problems)


def test_fork_failure_detection() -> None:
    assert looks_like_fork_failure("bash: fork: retry: Resource temporarily unavailable\n")
    assert looks_like_fork_failure("-bash: fork: Cannot allocate memory")
    assert not looks_like_fork_failure("squeue: error: Invalid user: x")


def test_headroom_commands_run_last_and_quoted() -> None:
    from sweep_core.slurm.gather import GatherRequest, build_gather_script

    req = GatherRequest(user="u", window_start=1, window_end=2, df_paths=("/w/a b",), quota_command="jutil x -p 'p'")
    script, _ = build_gather_script(req, "MK")
    tail = script.splitlines()[-3:]
    assert tail == [
        "run dfi:0 df -i -P -- '/w/a b'",
        "run quota bash -c 'jutil x -p '\"'\"'p'\"'\"''",
        'echo "$M end 0 - -"',
    ]
