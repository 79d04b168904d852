"""The gather's two log readers, the login node's python3 (read_logs.py) and the batched shell
path (gather_shell.sh, for a cluster without python3), give the same records for the same
cluster state: StdOut patterns expanded as scontrol prints them, chain links, finished logs,
arrays' chunk counts from ONE sacct -j. squeue/sacct are stand-ins (tests/fixtures/slurm_stub)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from sweep_core.config.sweep_schema import GatherLimits
from sweep_core.slurm.gather import GatherOutput, GatherRequest, build_gather_script, parse_gather_output

ROOT = Path(__file__).resolve().parents[2]
STUBS = ROOT / "tests" / "fixtures" / "slurm_stub"


def _job(job_id: str, name: str, raw: str, stdout: str, **over: str) -> dict[str, object]:
    base = {"i": job_id, "A": raw, "T": "RUNNING", "M": "5:00", "l": "UNLIMITED", "D": "1", "P": "debug",
            "R": "node7", "j": name}  # fmt: skip
    return {**base, "o": stdout, "O": {"JobID": raw, **over}}


def _run(tmp: Path, python: str, log_pattern: str) -> tuple[GatherOutput, list[str]]:
    now = int(time.time())  # at call time: a window ended > grace ago would be a PAST one
    script, marker = build_gather_script(
        GatherRequest(
            user="sweep",
            window_start=now - 3600,
            window_end=now - 60,
            settle_s=0,
            python=python,
            log_pattern=log_pattern,
        ),  # fmt: skip
        "@@SWEEP-0123456789ab@@",
    )
    env = {**os.environ, "PATH": f"{STUBS}:{os.environ['PATH']}", "STUB_DIR": str(tmp / "stub"), "TMPDIR": str(tmp)}
    proc = subprocess.run(["bash", "-s"], input=script, text=True, capture_output=True, env=env, timeout=60)
    out = parse_gather_output(proc.stdout, marker)
    assert out.complete, proc.stderr
    return out, [marker]


def _scene(tmp: Path) -> str:
    logs = tmp / "logs"
    logs.mkdir()
    stub = tmp / "stub"
    stub.mkdir()
    for name, age in (("rl__c-5.out", 300), ("rl__c-6.out", 200), ("rl__c-7.out", 0), ("rl__cx.out", 100)):
        (logs / name).write_text(f"{name}: Training Step Progress: 3/600\n" * 5)
        os.utime(logs / name, (time.time() - age, time.time() - age))
    (logs / "arr_9-3.out").write_text("chunk 3/16\n")
    (logs / "slurm-9_4.out").write_text("default array log\n")
    (logs / "pct%-node7-11.out").write_text("%% and %N expanded\n")
    (logs / ("x" * 200)).write_text("y" * 100_000)  # a long tail is cut to tail_bytes
    os.mkfifo(logs / "rl__c-8.out")  # an earlier chain link that is a FIFO: never opened
    running = [
        _job("7", "rl__c", "7", str(logs / "%x-%j.out")),
        _job("9_3", "arr", "12", str(logs / "%x_%A-%a.out"), ArrayJobID="9", ArrayTaskID="3"),
        _job("9_4", "arr", "13", str(logs / "slurm-13.out"), ArrayJobID="9", ArrayTaskID="4", WorkDir=str(logs)),
        _job("11", "pct", "11", "logs/pct%%-%N-%j.out", WorkDir=str(tmp)),
        _job("14", "gone", "14", str(logs / "missing-%j.out")),
        _job("15", "long", "15", str(logs / ("x" * 200))),
        _job("16", "interactive", "16", "/dev/null", BatchFlag="0"),
    ]
    (stub / "squeue_RUNNING.json").write_text(json.dumps(running))
    (logs / "sft__done-21.out").write_text("RuntimeError: boom\n")
    (logs / "sft__ctl-22.log").write_text("from the controller's StdOut\n")
    finished = [
        {"JobID": "21", "JobIDRaw": "21", "State": "FAILED", "ExitCode": "1:0", "JobName": "sft__done"},
        {"JobID": "22", "JobIDRaw": "22", "State": "FAILED", "ExitCode": "1:0", "JobName": "sft__ctl"},
        {"JobID": "23", "JobIDRaw": "23", "State": "FAILED", "ExitCode": "1:0", "JobName": "sft__lost"},
    ]
    (stub / "sacct.json").write_text(json.dumps(finished))
    ended = [_job("22", "sft__ctl", "22", str(logs / "%x-%j.log"))]
    (stub / "squeue_COMPLETED.json").write_text(json.dumps(ended))
    (stub / "sacct_j.json").write_text(json.dumps([{"JobID": "9_3", "State": "RUNNING", "JobName": "arr"}]))
    return str(logs / "%x-%j.out")


def test_python_and_shell_readers_give_the_same_records(tmp_path) -> None:
    pattern = _scene(tmp_path)
    py, _ = _run(tmp_path, "python3", pattern)
    sh, _ = _run(tmp_path, "", pattern)
    assert py.get("reader:python") is not None and sh.get("reader:shell") is not None
    strip = {k: v for k, v in py.records.items() if not k.startswith("reader:") and k != "meta"}
    assert strip == {k: v for k, v in sh.records.items() if not k.startswith("reader:") and k != "meta"}
    logs = tmp_path / "logs"

    def out(name: str) -> str:
        rec = py.get(name)
        assert rec is not None, sorted(py.records)
        return rec.stdout

    assert out("path:7") == f"{logs}/rl__c-7.out"
    # earlier links newest first (ls -1t order): the job's name with another id (rl__c-<id>.out);
    # rl__cx.out (another run's name) not, the job's own log and the FIFO skipped
    assert [out("chain:7:1"), out("chain:7:2")] == [(logs / n).read_text() for n in ("rl__c-6.out", "rl__c-5.out")]
    assert out("path:9_3") == f"{logs}/arr_9-3.out" and out("tail:9_3") == "chunk 3/16\n"
    assert out("path:9_4") == f"{logs}/slurm-9_4.out"  # squeue's default of an array task corrected
    assert out("path:11") == f"{tmp_path}/logs/pct%-node7-11.out"
    assert py.get("stat:14").rc == 1 and py.get("tail:14") is None  # type: ignore[union-attr]
    assert out("tail:15") == "y" * GatherLimits().tail_bytes
    assert out("path:16") == ""  # an interactive job: no log file
    assert out("ftail:21") == "RuntimeError: boom\n"
    assert out("fpath:22") == f"{logs}/sft__ctl-22.log"  # not at log_pattern: the controller's path
    assert py.get("fpath:23") is None
    assert "9_3" in out("chunks") and py.get("chunks:9") is None  # ONE sacct -j for all arrays
