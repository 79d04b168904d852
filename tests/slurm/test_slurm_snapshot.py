"""Snapshot assembly: each part validated on its own; UNKNOWN never reads as zero jobs."""

from __future__ import annotations

from helpers import gather_stdout, slurm_fixture

from sweep_core.records.models import ClusterStatus
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.gather import parse_gather_output
from sweep_core.slurm.snapshot import snapshot_from_output

M = "@@SWEEP-t@@"
META = CommandResult(0, "login01\n1764680000\n+0000\nsweep\n", "")


def snap(records: dict[str, CommandResult], complete: bool = True):
    out = parse_gather_output(gather_stdout(M, records, complete), M)
    return snapshot_from_output("local", out, "login01", "2026-12-02T09:00:00+00:00", "2026-12-02T12:00:00+00:00")


def test_full_gather_attaches_logs() -> None:
    ctl = slurm_fixture("scontrol_job_multiline")
    s = snap(
        {
            "meta": META,
            "squeue": slurm_fixture("squeue_running"),
            "sacct": slurm_fixture("sacct_window"),
            "scontrol:13": ctl,
            "stat:13": CommandResult(0, "1764679400\n", ""),
            "tail:13": CommandResult(0, "hi\nTraining Step Progress: 3/10\n", ""),
        }
    )
    assert s.status == ClusterStatus.OK
    assert s.remote_now == 1764680000
    job = next(j for j in s.running if j.job_id == "13")
    assert job.stdout_path.endswith("fx rl__fx grpo|pipe-13.out")
    assert job.log_mtime == 1764679400
    assert "Step Progress" in job.log_tail
    other = next(j for j in s.running if j.job_id == "14_1")
    assert other.log_mtime is None and "no scontrol record" in other.log_note
    assert any(j.name == "sft__fx_fail" and j.state == "FAILED" for j in s.finished)


def test_controller_down_is_unknown_even_though_sacct_answered() -> None:
    s = snap({"meta": META, "squeue": slurm_fixture("squeue_ctld_down"), "sacct": slurm_fixture("sacct_window")})
    assert s.status == ClusterStatus.UNKNOWN
    assert s.running is None  # not []
    assert s.finished  # sacct (slurmdbd) still answered
    assert any("Unable to contact slurm controller" in n for n in s.notes)


def test_dbd_down_is_partial_with_finished_unknown() -> None:
    s = snap({"meta": META, "squeue": slurm_fixture("squeue_running"), "sacct": slurm_fixture("sacct_dbd_down")})
    assert s.status == ClusterStatus.PARTIAL
    assert s.finished is None and s.running
    assert any("Problem talking to the database" in n for n in s.notes)


def test_missing_squeue_record_is_unknown() -> None:
    s = snap({"meta": META}, complete=False)
    assert s.status == ClusterStatus.UNKNOWN
    assert any("did not run to its end" in n for n in s.notes)


def test_unreadable_log_says_why() -> None:
    s = snap(
        {
            "meta": META,
            "squeue": slurm_fixture("squeue_running"),
            "sacct": slurm_fixture("sacct_window"),
            "scontrol:13": slurm_fixture("scontrol_job_multiline"),
            "stat:13": CommandResult(1, "", "stat: cannot statx '/x': Permission denied\n"),
        }
    )
    job = next(j for j in s.running if j.job_id == "13")
    assert job.log_mtime is None
    assert "Permission denied" in job.log_note


def test_array_chunks_are_read_by_the_marker_and_a_name_forges_no_chunk() -> None:
    rows = f"40_1{M}COMPLETED{M}dg__x\n40_1.batch{M}COMPLETED{M}batch\n40_[2-3]{M}PENDING{M}dg\n41_9|COMPLETED|x\n"
    sq = f"JOBID{M}JOBID{M}STATE{M}TIME{M}TIME_LIMIT{M}NODES{M}PARTITION{M}NODELIST(REASON){M}NAME\n"
    sq += M.join(["40_1", "41", "RUNNING", "1:00", "1:00:00", "1", "p", "n", "dg__x"]) + "\n"
    s = snap({"meta": META, "squeue": CommandResult(0, sq, ""), "chunks:40": CommandResult(0, rows, "")})
    job = next(j for j in s.running or [] if j.job_id == "40_1")
    assert job.chunks == [["40_1", "COMPLETED"], ["40_[2-3]", "PENDING"]]
