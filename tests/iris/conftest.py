"""The iris tests' fixture: a REAL local iris controller per test module (tests/iris_local.py)."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from iris_local import start_controller


@pytest.fixture(scope="module")
def controller(tmp_path_factory):
    run = tmp_path_factory.mktemp("iris")
    (run / "tmp").mkdir()
    proc, url = start_controller(run)
    yield url, run
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
