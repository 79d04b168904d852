"""A past window's running set comes from sacct, never from squeue: the reader of ``sacct -s R``
over the window (a job running at the window's end is RUNNING as it was; one that ended in it or
started after it is not a running row; an odd line is an UNKNOWN row with its reason, never a
crash), and the gather script itself, run against a fake sacct/squeue: no squeue for a past window."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import time
from pathlib import Path

from sweep_core.records.models import ClusterStatus
from sweep_core.slurm.gather import GatherRequest, build_gather_script, parse_gather_output
from sweep_core.slurm.past_window import PAST_RUNNING_LOG_NOTE, elapsed_between, past_running_jobs
from sweep_core.slurm.snapshot import PAST_WINDOW_SOURCE, snapshot_from_output

M = "@@M@@"
END = 1_796_324_700  # the window's end, epoch seconds


def _line(job_id: str, state: str, start: str, end: str, name: str) -> str:
    return M.join([job_id, job_id, state, start, end, "debug", "node1", "1", name])


def test_a_job_running_at_the_window_end_is_running_as_it_was() -> None:
    text = _line("68", "COMPLETED", str(END - 3725), str(END + 600), "rl__a") + "\n"
    [job] = past_running_jobs("leo", text, M, END)
    assert (job.job_id, job.name, job.state, job.source) == ("68", "rl__a", "RUNNING", "squeue")
    assert job.elapsed == "01:02:05" and job.nodes == "node1" and job.num_nodes == 1
    assert "now COMPLETED" in job.note and job.log_note == PAST_RUNNING_LOG_NOTE
    still = past_running_jobs("leo", _line("69", "RUNNING", str(END - 90000), "Unknown", "x") + "\n", M, END)
    assert still[0].state == "RUNNING" and still[0].elapsed == "1-01:00:00"


def test_jobs_that_ended_in_the_window_or_started_after_it_are_no_running_rows() -> None:
    text = "".join(
        line + "\n"
        for line in (
            _line("70", "COMPLETED", str(END - 100), str(END - 10), "ended_in_it"),
            _line("71", "RUNNING", str(END + 5), "Unknown", "started_after"),
            _line("72.batch", "RUNNING", str(END - 100), "Unknown", "batch"),
        )
    )
    assert past_running_jobs("leo", text, M, END) == []


def test_odd_lines_are_unknown_rows_with_their_reason_never_a_crash() -> None:
    text = "sacct: warning: something\n" + _line("73", "RUNNING", "2026-12-03T18:00:00", "Unknown", "iso") + "\n"
    text += _line("74", "RUNNING", str(END - 60), "soon", "odd_end") + "\n"
    text += _line("75", "RUNNING", str(END - 60), "Unknown", "two") + "\nlines\n"
    jobs = past_running_jobs("leo", text, M, END)
    assert [(j.job_id, j.state) for j in jobs] == [
        ("?", "UNKNOWN"),
        ("73", "UNKNOWN"),
        ("74", "UNKNOWN"),
        ("75", "RUNNING"),
    ]
    assert "sacct line not understood" in jobs[0].note and "start time" in jobs[1].note and "end time" in jobs[2].note
    assert jobs[3].name == "two\nlines" and "job name holds a newline" in jobs[3].note
    assert past_running_jobs("leo", "", M, END) == [] and elapsed_between(10, 5) == "00:00:00"


def _fake_bin(tmp_path: Path, window_end: int) -> tuple[Path, Path]:
    """squeue and sacct that log their calls; sacct -s R prints one job running at the window end."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    running = _line("68", "COMPLETED", str(window_end - 60), str(window_end + 600), "rl__then")
    scripts = {
        "squeue": f'echo "squeue $*" >>{calls}\n',
        "sacct": f'echo "sacct $*" >>{calls}\ncase " $* " in *" -s R "*) printf "%s\\n" \'{running}\' ;; '
        f'*" -j "*) ;; *) printf "%s\\n" "JobID{M}JobIDRaw{M}State{M}ExitCode{M}Start{M}End{M}Elapsed{M}Partition'
        f'{M}NodeList{M}JobName" ;; esac\n',
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)
    return bin_dir, calls


def _gather(tmp_path: Path, window_end: int):
    bin_dir, calls = _fake_bin(tmp_path, window_end)
    req = GatherRequest(user="sweep", window_start=window_end - 180, window_end=window_end, settle_s=0)
    script, marker = build_gather_script(req, M)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    res = subprocess.run(["bash", "-s"], input=script, capture_output=True, text=True, env=env, timeout=60, check=False)
    end_iso = dt.datetime.fromtimestamp(window_end, dt.UTC).isoformat()
    snap = snapshot_from_output("leo", parse_gather_output(res.stdout, marker), "login", "", end_iso)
    return snap, calls.read_text() if calls.exists() else ""


def test_a_past_windows_gather_asks_no_squeue_and_lists_what_sacct_knew(tmp_path) -> None:
    snap, calls = _gather(tmp_path, int(time.time()) - 3600)  # ended an hour ago
    assert "squeue" not in [c.split()[0] for c in calls.splitlines()], calls
    assert any(" -s R " in c for c in calls.splitlines()), calls
    assert snap.status == ClusterStatus.OK and PAST_WINDOW_SOURCE in snap.notes
    assert [(j.job_id, j.state) for j in snap.running or []] == [("68", "RUNNING")] and snap.finished == []


def test_a_current_windows_gather_still_reads_squeue(tmp_path) -> None:
    snap, calls = _gather(tmp_path, int(time.time()))
    assert [c.split()[0] for c in calls.splitlines()].count("squeue") >= 2, calls
    assert not any(" -s R " in c for c in calls.splitlines()) and PAST_WINDOW_SOURCE not in snap.notes
