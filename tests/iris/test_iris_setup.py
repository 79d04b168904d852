"""An iris cluster before and while it is set up (issue 17): the shipped ops.md is UNCONFIGURED
naming file and fields; a client path absent on this worker is an ERROR naming it; a controller
that does not answer (or answers too slowly) is UNKNOWN naming the address and the timeout."""

from __future__ import annotations

import datetime as dt
import os
import socket
from pathlib import Path

import pytest

from sweep_core.config.ops import load_cluster, parse_ops_text
from sweep_core.records.models import ClusterStatus
from sweep_operators.iris_gather import gather_iris

ROOT = Path(__file__).resolve().parents[2]
IRIS_PY = os.environ.get("SWEEP_IRIS_PYTHON", str(ROOT / ".venv-iris" / "bin" / "python"))
END = dt.datetime.now(dt.UTC)
START = END - dt.timedelta(hours=1)


def _cfg(tmp_path: Path, extra: str):
    path = tmp_path / "cw" / "ops.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nscheduler: iris\nstatus: active\nuser: sweep\n{extra}---\n")
    return parse_ops_text(path.read_text(), path, "cw")


def test_the_shipped_ops_md_is_unconfigured_naming_file_and_fields() -> None:
    cfg = load_cluster(ROOT / "include" / "ops", "coreweave")
    snap = gather_iris(cfg, START, END)
    assert snap.status == ClusterStatus.UNCONFIGURED and snap.running is None
    text = " | ".join(snap.notes)
    assert "include/ops/coreweave/ops.md: field 'iris_python' is unset" in text
    assert "Traceback" not in text


def test_an_iris_python_absent_on_this_worker_is_an_error_naming_it(tmp_path) -> None:
    cfg = _cfg(tmp_path, "controller_url: http://127.0.0.1:9\niris_python: /nonexistent/otagent/bin/python\n")
    snap = gather_iris(cfg, START, END)
    assert snap.status == ClusterStatus.ERROR
    assert snap.notes == [
        f"{tmp_path}/cw/ops.md: field 'iris_python' '/nonexistent/otagent/bin/python' does not exist "
        "or is not executable on this worker"
    ]


def test_a_poll_that_outlasts_iris_timeout_s_names_the_address_and_the_seconds(tmp_path) -> None:
    slow = tmp_path / "slow-python"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    cfg = _cfg(tmp_path, f"controller_url: http://10.9.8.7:10000\niris_python: {slow}\niris_timeout_s: 1\n")
    snap = gather_iris(cfg, START, END)
    assert snap.status == ClusterStatus.UNKNOWN
    assert (
        "controller http://10.9.8.7:10000: slow-python poll timed out after 1s (ops.md iris_timeout_s)"
        in (snap.notes[0])
    )


@pytest.mark.skipif(not Path(IRIS_PY).exists(), reason="iris venv missing")
def test_a_dead_controller_is_unknown_naming_its_address(tmp_path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = _cfg(tmp_path, f"controller_url: http://127.0.0.1:{port}\niris_python: {IRIS_PY}\niris_timeout_s: 30\n")
    snap = gather_iris(cfg, START, END)
    assert snap.status == ClusterStatus.UNKNOWN
    assert f"controller http://127.0.0.1:{port}: iris poll failed:" in snap.notes[0]
    print(snap.notes[0])


def test_the_images_iris_client_is_found_without_an_edit(monkeypatch, tmp_path) -> None:
    """issue 38: the image sets SWEEP_IRIS_VENV=/opt/iris-venv; the shipped ops.md (iris_python "")
    then uses that venv's python and CLI, and what is left is truly per-site. Here the venv is the
    lab's real one (.venv-iris): the client it ships, found with no ops.md edit."""
    venv = Path(IRIS_PY).parent.parent
    monkeypatch.setenv("SWEEP_IRIS_VENV", str(venv))
    cfg = load_cluster(ROOT / "include" / "ops", "coreweave")
    assert (cfg.iris_python, cfg.iris_binary) == (str(venv / "bin" / "python"), str(venv / "bin" / "iris"))
    from sweep_core.iris.setup import iris_setup_problems

    assert [p.field for p in iris_setup_problems(cfg)] == []  # the shipped iris_cluster + the image's CLI
    bare = _cfg(tmp_path / "bare", "")
    assert [p.field for p in iris_setup_problems(bare)] == ["controller_url"]  # only the address is left
    # a path the ops.md names wins over the image's
    named = _cfg(tmp_path / "named", "iris_python: /x/python\n")
    assert (named.iris_python, named.iris_binary) == ("/x/python", "")
    monkeypatch.delenv("SWEEP_IRIS_VENV")
    assert load_cluster(ROOT / "include" / "ops", "coreweave").iris_python == ""  # the lab's, a laptop's: unchanged
