"""TEST SUPPORT: a REAL marin-iris controller on 127.0.0.1 (local backend) per test module, and
helpers to submit jobs to it, write an iris ops.md for it and wait for job states."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HERE = Path(__file__).parent
IRIS_PY = os.environ.get("SWEEP_IRIS_PYTHON", str(ROOT / ".venv-iris" / "bin" / "python"))
needs_iris = pytest.mark.skipif(not Path(IRIS_PY).exists(), reason="iris venv missing: run via scripts/test.sh")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_controller(run: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cfg = subprocess.run(
        [IRIS_PY, "-c", "import iris, os; print(os.path.dirname(iris.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    text = (Path(cfg) / "config" / "local.yaml").read_text()
    text = re.sub(r"(?m)^(\s*)port:\s*\d+", rf"\g<1>port: {port}", text)
    (run / "local.yaml").write_text(text)
    env = {**os.environ, "HOME": str(run), "TMPDIR": str(run / "tmp")}
    proc = subprocess.Popen(
        [IRIS_PY, str(HERE / "iris_test_controller.py"), "--config", str(run / "local.yaml"), "cluster", "start"],
        env=env,
        stdout=open(run / "ctl.log", "wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    end = time.time() + 60
    while time.time() < end:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=1)
            return proc, url
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.3)
    proc.kill()
    raise AssertionError(f"iris controller did not come up:\n{(run / 'ctl.log').read_text()[-3000:]}")


def submit(url: str, run: Path, name: str, command: str, max_retries: int = 0) -> str:
    """Submit ``command`` as /sweep/<name> (``max_retries``: the launch's --max-retries)."""
    res = subprocess.run(
        [IRIS_PY, str(HERE / "iris_submit.py"), url, "sweep", name, command],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(run), "SWEEP_IRIS_MAX_RETRIES": str(max_retries)},
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return f"/sweep/{name}"


def iris_ops(path: Path, name: str, url: str, run: Path, extra: str = "") -> None:
    (path / name).mkdir(parents=True)
    (path / name / "ops.md").write_text(
        f"---\nscheduler: iris\nstatus: active\nuser: sweep\ncontroller_url: {url}\niris_python: {IRIS_PY}\n"
        f"iris_home: {run}\niris_timeout_s: 30\n{extra}---\nThe bundled local iris controller.\n"
    )


_WAIT_STATES = """
import json, sys, time
sys.path.insert(0, sys.argv[4])
from iris_poll import iris_api
IrisClient, JobName, job_pb2 = iris_api(10.0, 3)
want, end = json.loads(sys.argv[2]), time.time() + float(sys.argv[3])
client = IrisClient.remote(sys.argv[1], timeout_ms=5000)
while True:
    seen = {j.job_id: job_pb2.JobState.Name(j.state).removeprefix("JOB_STATE_") for j in client.list_jobs(prefix="/")}
    if all(seen.get(k) == v for k, v in want.items()) or time.time() > end:
        break
    time.sleep(0.5)
print(json.dumps(seen))
"""


def wait_states(url: str, run: Path, want: dict[str, str], timeout: float = 90) -> None:
    """Until the controller lists each job in its wanted state (a condition wait in ONE client
    process: a process per poll costs ~0.5 s of CPU on the shared cores)."""
    import json

    programs = str(ROOT / "plugins" / "sweep_core" / "programs")
    res = subprocess.run([IRIS_PY, "-c", _WAIT_STATES, url, json.dumps(want), str(timeout), programs],
                         capture_output=True, text=True, timeout=timeout + 60, env={**os.environ, "HOME": str(run)})  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    seen = json.loads(res.stdout.strip().splitlines()[-1])
    if not all(seen.get(k) == v for k, v in want.items()):
        raise AssertionError(f"iris states {seen} never reached {want}")


def stop_all(url: str, run: Path) -> None:
    """Terminate every live job of the test user (a test's jobs never outlive it)."""
    code = (
        "import sys; from iris.client.client import IrisClient; from iris.cluster.types import JobName\n"
        "c = IrisClient.remote(sys.argv[1], timeout_ms=5000)\n"
        "for j in c.list_jobs(prefix='/sweep/'):\n"
        "    try:\n"
        "        c.terminate(JobName.from_wire(j.job_id))\n"
        "    except Exception:\n"
        "        pass\n"
    )
    subprocess.run([IRIS_PY, "-c", code, url], capture_output=True, timeout=60, env={**os.environ, "HOME": str(run)})


def long_log_command(go: Path, then: str) -> str:
    """A job's shell command: its step 12 and reward 0.42, then >300 KB of engine output (3,000
    lines), and once ``go`` exists its step 13, ten more lines, ``flushed2``, then ``then``. The local
    backend emits a burst's last buffered lines when the next write comes: hence the flush lines."""
    noise = "x" * 100
    return (
        "echo 'Training Step Progress: 12/50'; "
        'echo \'WANDB_MIRROR {"trainer/global_step": 12, "reward/mean": 0.42}\'; '
        f'for i in $(seq 1 3000); do echo "engine {noise} $i"; done; sleep 1; echo flushed; '
        f"while [ ! -e {go} ]; do sleep 0.2; done; "
        "echo 'Training Step Progress: 13/50'; for i in $(seq 1 10); do echo more-$i; done; sleep 1; echo flushed2; "
        f"{then}"
    )
