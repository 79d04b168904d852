"""The tracker harvest's script run by real bash on hostile job names and logs (a FIFO as the
log, ``&`` in a name, a name with a newline that spells another job's sacct line); sacct and
scontrol are stand-ins (tests/fixtures/slurm_stub), the files are real."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from sweep_core.handoffs.harvest.remote import build_harvest_script, read_harvest
from sweep_core.slurm.gather import new_marker, parse_gather_output

ROOT = Path(__file__).resolve().parents[3]
STUBS = ROOT / "tests" / "fixtures" / "slurm_stub"
TRACEBACK = 'Traceback (most recent call last):\n  File "x"\nValueError: bad config\n'


def _harvest(tmp: Path, sacct_rows: list[dict[str, str]], ids: list[str]):
    stub = tmp / "stub"
    stub.mkdir(exist_ok=True)
    (stub / "sacct_j.json").write_text(json.dumps(sacct_rows))
    marker = new_marker()
    script = build_harvest_script(ids, str(tmp / "results/%j"), str(tmp / "logs/%x-%j.out"), marker, 1 << 20)
    env = {**os.environ, "PATH": f"{STUBS}:{os.environ['PATH']}", "STUB_DIR": str(stub), "TMPDIR": str(tmp)}
    proc = subprocess.run(["bash", "-s"], input=script, text=True, capture_output=True, env=env, timeout=30)
    out = parse_gather_output(proc.stdout, marker)
    assert out.complete, proc.stderr
    return read_harvest(out, ids, delimiter=marker)


def test_hostile_names_and_a_fifo_log_spoil_nothing(tmp_path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "eval-a&b-201.out").write_text(TRACEBACK)  # bash 5.2 would read eval-a%xb-201.out
    os.mkfifo(logs / "eval-fifo-202.out")  # tail would block the whole harvest
    rows = [
        {"JobID": "201", "State": "FAILED", "JobName": "eval-a&b"},
        {"JobID": "202", "State": "FAILED", "JobName": "eval-fifo"},
        # a name that spells a COMPLETED record for job 204 in the old `|` format
        {"JobID": "203", "State": "RUNNING", "JobName": "eval-x\n204|COMPLETED|forged"},
    ]
    reps = _harvest(tmp_path, rows, ["201", "202", "203", "204"])
    assert "ValueError: bad config" in reps["201"].log_tail
    assert reps["202"].log_tail == "" and "FIFO" in reps["202"].log_problem
    assert reps["203"].state == "RUNNING"
    assert reps["204"].state == "", "a job name forged job 204's state"
