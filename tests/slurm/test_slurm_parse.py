"""Parsers on outputs captured from the real local Slurm 22.05, and on hand-written error outputs."""

from __future__ import annotations

import pytest
from helpers import slurm_fixture

from sweep_core.slurm.parse import (
    SQUEUE_HEADER,
    CommandResult,
    SlurmOutputError,
    parse_sacct,
    parse_scontrol_job,
    parse_squeue,
    read_records,
    read_sacct_jobs,
)


def test_squeue_real_output_keeps_names_with_pipes_and_array_ids() -> None:
    rows = parse_squeue(slurm_fixture("squeue_running"))
    by_id = {r.job_id: r for r in rows}
    assert by_id["13"].name == "rl__fx grpo|pipe"
    assert {"14_1", "14_2", "14_3"} <= set(by_id)
    assert by_id["14_1"].raw_id == "18"
    assert all(r.state == "RUNNING" for r in rows)


def test_sacct_real_output_states_arrays_and_cancelled_by() -> None:
    rows = parse_sacct(slurm_fixture("sacct_window"))
    by_name = {r.name: r for r in rows}
    assert by_name["sft__fx_fail"].base_state == "FAILED"
    assert by_name["sft__fx_fail"].exit_code == "3:0"
    cancelled = by_name["eval-fx_cancel"]
    assert cancelled.state.startswith("CANCELLED by ")
    assert cancelled.base_state == "CANCELLED"
    assert any(r.job_id.startswith("3_") for r in rows)


@pytest.mark.parametrize("fixture", ["scontrol_job_multiline", "scontrol_job_oneline"])
def test_scontrol_both_forms_give_paths_with_spaces_and_pipes(fixture: str) -> None:
    fields = parse_scontrol_job(slurm_fixture(fixture).stdout)
    assert fields["JobId"] == "13"
    assert fields["JobName"] == "rl__fx grpo|pipe"
    assert fields["StdOut"] == "/home/sweep/jobs/logs/fx rl__fx grpo|pipe-13.out"
    assert fields["JobState"] == "RUNNING"


def test_scontrol_value_with_equals_sign_is_not_split() -> None:
    text = "JobId=5 JobName=a b=c UserId=u(1) JobState=RUNNING StdOut=/x/y z.out Power="
    fields = parse_scontrol_job(text)
    assert fields["JobName"] == "a b=c"
    assert fields["StdOut"] == "/x/y z.out"


def test_scontrol_garbage_raises() -> None:
    with pytest.raises(SlurmOutputError, match="JobId="):
        parse_scontrol_job("slurm_load_jobs error: Invalid job id specified\n")


def test_squeue_controller_down_real_output_is_an_error_not_zero_jobs() -> None:
    with pytest.raises(SlurmOutputError, match="Unable to contact slurm controller"):
        parse_squeue(slurm_fixture("squeue_ctld_down"))


def test_squeue_exit_zero_with_error_on_stderr_is_an_error() -> None:
    # Real: squeue -u <unknown user> prints its header, exits 0, and complains on stderr.
    result = slurm_fixture("squeue_invalid_user")
    assert result.rc == 0
    with pytest.raises(SlurmOutputError, match="Invalid user"):
        parse_squeue(result)


@pytest.mark.parametrize(
    "stderr",
    [
        "slurm_load_jobs error: Socket timed out on send/recv operation\n",
        "slurm_load_jobs error: Zero Bytes were transmitted or received\n",
        "slurm_load_jobs error: Rate limit exceeded, please retry momentarily\n",
    ],
)
def test_squeue_timeout_texts_with_exit_zero_are_errors(stderr: str) -> None:
    # Older versions were seen exiting 0 with -M: match the text as well as the exit code.
    with pytest.raises(SlurmOutputError):
        parse_squeue(CommandResult(0, "", stderr))
    with pytest.raises(SlurmOutputError):
        parse_squeue(CommandResult(1, "", stderr))


def test_squeue_empty_output_is_missing_not_zero() -> None:
    with pytest.raises(SlurmOutputError, match="printed nothing"):
        parse_squeue(CommandResult(0, "", ""))


def test_squeue_header_only_is_zero_jobs() -> None:
    assert parse_squeue(CommandResult(0, SQUEUE_HEADER + "\n", "")) == []


def test_squeue_truncated_output_is_an_error() -> None:
    text = slurm_fixture("squeue_running").stdout
    with pytest.raises(SlurmOutputError, match="truncated|fields"):
        parse_squeue(CommandResult(0, text[: len(text) - 25], ""))


def test_squeue_wrong_header_is_an_error() -> None:
    with pytest.raises(SlurmOutputError, match="header"):
        parse_squeue(CommandResult(0, "JOBID PARTITION NAME USER ST TIME\n1 debug x u R 0:01\n", ""))


def test_sacct_database_down_real_output_is_an_error() -> None:
    with pytest.raises(SlurmOutputError, match="Problem talking to the database"):
        parse_sacct(slurm_fixture("sacct_dbd_down"))


def test_sacct_accounting_disabled_is_an_error() -> None:
    with pytest.raises(SlurmOutputError, match="accounting storage is disabled"):
        parse_sacct(CommandResult(1, "", "sacct: error: Slurm accounting storage is disabled\n"))


def test_sacct_steps_are_dropped() -> None:
    header = slurm_fixture("sacct_window").stdout.splitlines()[0]
    text = (
        f"{header}\n"
        "7|7|COMPLETED|0:0|2026-12-02T10:00:00|2026-12-02T11:00:00|01:00:00|p|n1|sft__a\n"
        "7.batch|7.batch|COMPLETED|0:0|2026-12-02T10:00:00|2026-12-02T11:00:00|01:00:00||n1|batch\n"
        "123+0|123|TIMEOUT|0:15|Unknown|Unknown|00:00:00|p|None assigned|het|name\n"
    )
    rows = parse_sacct(CommandResult(0, text, ""))
    assert [r.job_id for r in rows] == ["7", "123+0"]
    assert rows[1].name == "het|name"
    assert rows[1].start == "Unknown"


NL_NAME = "rl__nl\n   StdOut=/etc/hostname\nx"


def test_newline_in_a_name_spoils_only_its_own_squeue_row() -> None:
    text = (
        SQUEUE_HEADER
        + "\n"
        + "\n".join(
            [
                "10|10|RUNNING|5:00|UNLIMITED|1|debug|localhost|rl__ok",
                f"11|11|RUNNING|5:00|UNLIMITED|1|debug|localhost|{NL_NAME}",
                "12|12|RUNNING|5:00|UNLIMITED|1|debug|localhost|sft__ok",
            ]
        )
    )
    rows = {r.job_id: r for r in parse_squeue(CommandResult(0, text + "\n", ""))}
    assert set(rows) == {"10", "11", "12"}
    assert rows["11"].name == NL_NAME and rows["11"].note == "job name holds a newline"
    assert rows["10"].note == rows["12"].note == ""


def test_a_nonce_delimiter_is_read_off_the_header_and_no_name_can_forge_a_row() -> None:
    d = "@@SWEEP-abc@@"
    fields = ["JobID", "JobIDRaw", "State", "ExitCode", "Start", "End", "Elapsed", "Partition", "NodeList", "JobName"]
    forged = "sft__x\n99|99|COMPLETED|0:0|a|b|c|d|e|f"  # a '|' row inside the name
    text = "\n".join([d.join(fields), d.join(["7", "7", "FAILED", "1:0", "", "", "", "", "", forged])]) + "\n"
    rows = parse_sacct(CommandResult(0, text, ""))
    assert [(r.job_id, r.name, r.note) for r in rows] == [("7", forged, "job name holds a newline")]


def test_scontrol_real_stdout_wins_over_one_faked_in_the_job_name() -> None:
    text = slurm_fixture("scontrol_job_multiline").stdout.replace("JobName=rl__fx grpo|pipe", f"JobName={NL_NAME}")
    assert parse_scontrol_job(text)["StdOut"] == "/home/sweep/jobs/logs/fx rl__fx grpo|pipe-13.out"


def test_headerless_records_split_by_the_marker_cannot_be_forged() -> None:
    m = "@@SWEEP-abc@@"
    text = f"101{m}COMPLETED{m}eval-x\n102|COMPLETED|forged\n103{m}FAILED{m}sft__y\n"
    recs = read_records(text, m, 3)
    assert [f[0] for f, _ in recs] == ["101", "103"]
    assert recs[0] == (["101", "COMPLETED", "eval-x\n102|COMPLETED|forged"], "job name holds a newline")
    assert read_records("garbage\n\n", m, 3) == []


def test_one_sacct_jobs_reader_names_last_steps_dropped_no_row_forged() -> None:
    m = "@@SWEEP-abc@@"
    text = (
        "login banner\n"
        f"812_1{m}COMPLETED{m}dg__x\n"
        f"812_1.batch{m}COMPLETED{m}batch\n"
        f"812_[2-4]{m}PENDING{m}dg__x\n"
        f"813{m}CANCELLED by 1001 {m}nl\n814|COMPLETED|forged\n"
    )
    rows = read_sacct_jobs(text, m)
    assert [(r.job_id, r.state, r.name) for r in rows] == [
        ("812_1", "COMPLETED", "dg__x"),
        ("812_[2-4]", "PENDING", "dg__x"),
        ("813", "CANCELLED by 1001", "nl\n814|COMPLETED|forged"),
    ]
    assert rows[-1].note == "job name holds a newline" and rows[0].note == ""
    with pytest.raises(ValueError):
        read_sacct_jobs(text, "")
