"""The gather script run by real bash on hostile job names and log paths (FIFO, devices, a
newline or ``&`` in a name); squeue/sacct/scontrol are stand-ins that print real 22.05 formats
(tests/fixtures/slurm_stub), the files are real. The same cases on the real cluster over real
SSH are in test_gather_hostile_local.py."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.liveness import apply_liveness
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterStatus
from sweep_core.slurm.gather import GatherRequest, build_gather_script, parse_gather_output
from sweep_core.slurm.snapshot import snapshot_from_output

ROOT = Path(__file__).resolve().parents[2]
STUBS = ROOT / "tests" / "fixtures" / "slurm_stub"
SCONTROL = (ROOT / "tests" / "fixtures" / "slurm" / "scontrol_job_multiline.out").read_text()
READER = {"python": "python3"}


@pytest.fixture(autouse=True, params=["python3", ""], ids=["python", "shell"])
def _reader(request):
    """Every case on both paths: the login node's python3 (read_logs.py) and, for a cluster
    whose ops.md says it has none, the batched shell path (gather_shell.sh)."""
    READER["python"] = request.param
    yield
    READER["python"] = "python3"


def _scontrol(job_id: str, name: str, stdout: str) -> str:
    lines = SCONTROL.splitlines()
    lines[0] = f"JobId={job_id} JobName={name}"
    return "\n".join(f"   StdOut={stdout}" if ln.strip().startswith("StdOut=") else ln for ln in lines) + "\n"


def _job(job_id: str, name: str, elapsed: str = "5:00") -> dict[str, str]:
    return {"i": job_id, "A": job_id, "T": "RUNNING", "M": elapsed, "l": "UNLIMITED", "D": "1", "P": "debug",
            "R": "localhost", "j": name}  # fmt: skip


def _sweep(tmp: Path, running: list[tuple[str, str, str]], finished: list[dict[str, str]] = (), **req: object):
    """Run the real script under bash with the stand-ins; (snapshot, seconds it took)."""
    stub = tmp / "stub"
    stub.mkdir(exist_ok=True)
    (stub / "squeue_RUNNING.json").write_text(json.dumps([_job(i, n) for i, n, _ in running]))
    for i, n, out in running:
        (stub / f"scontrol_{i}.txt").write_text(_scontrol(i, n, out))
    (stub / "sacct.json").write_text(json.dumps(list(finished)))
    now = int(time.time())  # the window is read at call time: a window ended > grace ago is a PAST one
    script, marker = build_gather_script(
        GatherRequest(
            user="sweep", window_start=now - 3600, window_end=now - 60, settle_s=0, python=READER["python"], **req
        )  # type: ignore[arg-type]
    )
    (tmp / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "PATH": f"{STUBS}:{os.environ['PATH']}", "STUB_DIR": str(stub), "TMPDIR": str(tmp / "tmp")}
    t0 = time.monotonic()
    proc = subprocess.run(["bash", "-s"], input=script, text=True, capture_output=True, env=env, timeout=30)
    took = time.monotonic() - t0
    output = parse_gather_output(proc.stdout, marker)
    assert output.get("reader:" + ("python" if READER["python"] else "shell")) is not None, proc.stderr
    snap = snapshot_from_output("c", output, "login01", "s", "e")
    return snap, took


def _log(path: Path, text: str = "Training Step Progress: 3/600\n") -> str:
    path.write_text(text)
    return str(path)


def test_fifo_stdout_is_not_tailed_and_the_rest_of_the_cluster_is_intact(tmp_path) -> None:
    fifo = tmp_path / "rl__fifo-11.out"
    os.mkfifo(fifo)
    running = [
        ("10", "rl__ok", _log(tmp_path / "ok.out")),
        ("11", "rl__fifo", str(fifo)),
        ("12", "sft__ok", _log(tmp_path / "s.out")),
    ]
    snap, took = _sweep(tmp_path, running)
    assert took < 10
    assert snap.status == ClusterStatus.OK
    jobs = {j.job_id: j for j in snap.running or []}
    assert set(jobs) == {"10", "11", "12"}
    assert "Training Step" in jobs["10"].log_tail and "Training Step" in jobs["12"].log_tail
    assert "FIFO" in jobs["11"].log_note and "no log file to judge" in jobs["11"].log_note
    assert jobs["11"].log_mtime is None


def test_fifo_as_an_earlier_chain_link_is_skipped(tmp_path) -> None:
    os.mkfifo(tmp_path / "rl__chain-9.out")
    running = [("10", "rl__chain", _log(tmp_path / "rl__chain-10.out"))]
    snap, took = _sweep(tmp_path, running)
    assert took < 10
    job = (snap.running or [])[0]
    assert "Training Step" in job.log_tail and job.chain_tails == []


def test_newline_in_a_job_name_spoils_only_its_own_row(tmp_path) -> None:
    hostile = "rl__nl\n   StdOut=/etc/hostname\nx"
    real = _log(tmp_path / "nl.out", "the real log of the odd job\n")
    running = [
        ("10", "rl__ok", _log(tmp_path / "ok.out")),
        ("11", hostile, real),
        ("12", "sft__ok", _log(tmp_path / "s.out")),
    ]
    finished = [
        {"JobID": "7", "JobIDRaw": "7", "State": "FAILED", "ExitCode": "1:0", "JobName": "sft__nl\n7|7|COMPLETED|x"},
        {"JobID": "8", "JobIDRaw": "8", "State": "COMPLETED", "ExitCode": "0:0", "JobName": "eval-ok"},
    ]
    snap, _ = _sweep(tmp_path, running, finished)
    assert snap.status == ClusterStatus.OK, snap.notes
    jobs = {j.job_id: j for j in snap.running or []}
    assert set(jobs) == {"10", "11", "12"}
    assert jobs["11"].name == hostile and "newline" in jobs["11"].note
    # two StdOut lines in its scontrol record: which is the log cannot be told, none is read
    assert "which file is the log cannot be told" in jobs["11"].log_note
    assert jobs["11"].stdout_path == "" and jobs["11"].log_tail == "" and jobs["11"].log_mtime is None
    assert jobs["10"].note == "" and "Training Step" in jobs["10"].log_tail
    done = {j.job_id: j for j in snap.finished or []}
    assert set(done) == {"7", "8"}  # the name's fake "7|7|COMPLETED" line forged no row
    assert done["7"].state == "FAILED" and "newline" in done["7"].note
    assert done["8"].name == "eval-ok" and done["8"].note == ""


def test_newline_in_the_log_path_is_not_read_as_another_file(tmp_path) -> None:
    (tmp_path / "a").mkdir()
    target = tmp_path / "a" / "secret"
    target.write_text("not this job's log\n")
    path = f"{tmp_path}/rl__p\n   StdOut={target}\nx-11.out"  # what -o %x-%j.out gives
    Path(path).parent.mkdir(parents=True)  # Slurm creates no dirs; the tenant would have
    Path(path).write_text("the real log\n")
    hostile_name = f"rl__p\n   StdOut={target}\nx"
    snap, _ = _sweep(tmp_path, [("10", "rl__ok", _log(tmp_path / "ok.out")), ("11", hostile_name, path)])
    jobs = {j.job_id: j for j in snap.running or []}
    assert "which file is the log cannot be told" in jobs["11"].log_note
    assert "not this job's log" not in jobs["11"].log_tail
    assert "Training Step" in jobs["10"].log_tail


def test_device_logs_have_no_age_and_are_never_stale(tmp_path) -> None:
    zero = tmp_path / "zero.out"
    zero.symlink_to("/dev/zero")
    running = [("10", "rl__null", "/dev/null"), ("11", "rl__zero", str(zero))]
    snap, took = _sweep(tmp_path, running)
    assert took < 10
    for job in snap.running or []:
        job.bucket = "RL"
    apply_liveness(snap, {"RL": 30})
    for job in snap.running or []:
        assert "no log file to judge" in job.log_note, job.log_note
        assert job.log_mtime is None and job.minutes_since_output is None and not job.stale


def test_log_older_than_its_job_is_explained_and_feeds_no_kill_approval(tmp_path) -> None:
    old = tmp_path / "old.out"
    _log(old)
    os.utime(old, (time.time() - 22 * 3600, time.time() - 22 * 3600))
    snap, _ = _sweep(tmp_path, [("10", "rl__reused", str(old))])
    (snap.running or [])[0].num_nodes = 4  # a multi-node job: a stale one would ask for a kill
    result = run_fan_in([snap], load_sweep_config(str(ROOT / "include" / "sweep.yaml")))
    job = (snap.running or [])[0]
    assert "log last written before this job started (the job has run 5 min)" in job.log_note
    flags = [f for f in result.flags if f.rule == "liveness_stale"]
    assert [(f.severity, f.action) for f in flags] == [("warn", "investigate")]  # never kill-approval
    assert "before this job started" in flags[0].message


def test_ampersand_in_a_finished_jobs_name_keeps_its_log(tmp_path) -> None:
    name = "rl__a&b"
    (tmp_path / f"{name}-87.out").write_text("Traceback\nRuntimeError: boom\n")
    finished = [{"JobID": "87", "JobIDRaw": "87", "State": "FAILED", "ExitCode": "1:0", "JobName": name}]
    snap, _ = _sweep(tmp_path, [], finished, log_pattern=str(tmp_path / "%x-%j.out"))
    job = (snap.finished or [])[0]
    assert job.stdout_path == str(tmp_path / f"{name}-87.out")
    assert "RuntimeError: boom" in job.log_tail


def test_finished_job_on_a_fifo_is_not_tailed(tmp_path) -> None:
    os.mkfifo(tmp_path / "sft__f-88.out")
    finished = [{"JobID": "88", "JobIDRaw": "88", "State": "FAILED", "ExitCode": "1:0", "JobName": "sft__f"}]
    snap, took = _sweep(tmp_path, [], finished, log_pattern=str(tmp_path / "%x-%j.out"))
    assert took < 10
    job = (snap.finished or [])[0]
    assert "FIFO" in job.log_note and job.log_tail == ""


def test_the_bound_ends_the_script_and_every_process_it_started(tmp_path) -> None:
    token = f"{1000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    _, took = _sweep(tmp_path, [], quota_command=f"sleep {token}", bound_s=2)
    assert took < 15
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", f"sleep {token}"], capture_output=True, text=True)
    assert left.stdout.strip() == "", "a process of the script outlived its bound"
    assert list((tmp_path / "tmp").iterdir()) == []  # its temp dir removed on the way out
