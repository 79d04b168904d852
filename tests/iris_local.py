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


def wait_states(url: str, run: Path, want: dict[str, str], timeout: float = 90) -> None:
    from sweep_operators.iris_hook import IrisHook

    hook = IrisHook(url=url, user="sweep", python=IRIS_PY, home=str(run), timeout_s=30)
    end, seen = time.time() + timeout, {}
    while time.time() < end:
        seen = {j.job_id: j.state for j in hook.poll()[0]}
        if all(seen.get(k) == v for k, v in want.items()):
            return
        time.sleep(1)
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
