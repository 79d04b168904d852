"""The gather script as it was before issue 12 (one scontrol, stat, tail, ls... per job), kept ONLY
as the reference the batched one is compared with (test_gather_compare_local.py,
benchmarks/gather.py): its prelude.sh, log_helpers.sh and gather.sh from git at REF, composed under
the same header. Also: run a script over SSH on the bundled cluster's login01, optionally under
strace (processes started) and with the CPU time of everything it ran (bash ``times``)."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lab import LOGIN_PORTS, USER

from sweep_core.slurm.gather import GatherRequest, gather_values, new_marker
from sweep_core.slurm.remote_scripts import compose, headroom_lines

ROOT = Path(__file__).resolve().parents[2]
REF = "3f7eb66d7c62f7fb8de61d7d80aa226b59a92491"  # main before issue 12
CLUSTER_DIR = Path(os.environ.get("SWEEP_CLUSTER_DIR", "/var/tmp/sweep-local-cluster"))
_REF_DIR = Path(tempfile.gettempdir()) / f"sweep-gather-ref-{REF[:12]}"


def reference_dir() -> Path:
    """A folder with the REF versions of the old script's files (written once)."""
    if not (_REF_DIR / "gather.sh").exists():
        _REF_DIR.mkdir(parents=True, exist_ok=True)
        for name in ("prelude.sh", "log_helpers.sh", "gather.sh"):
            cmd = ["git", "-C", str(ROOT), "show", f"{REF}:include/remote/{name}"]
            (_REF_DIR / name).write_bytes(subprocess.run(cmd, check=True, capture_output=True).stdout)
    return _REF_DIR


def old_gather_script(req: GatherRequest, marker: str | None = None) -> tuple[str, str]:
    """The pre-issue-12 gather script for req (same header values; the new ones it ignores)."""
    marker = marker or new_marker()
    saved = os.environ.get("SWEEP_REMOTE_DIR")
    os.environ["SWEEP_REMOTE_DIR"] = str(reference_dir())
    try:
        trailer = headroom_lines(req.df_paths, req.quota_command)
        return compose(
            marker, gather_values(req, marker), ("log_helpers.sh", "gather.sh"), trailer, req.bound_s
        ), marker
    finally:
        if saved is None:
            os.environ.pop("SWEEP_REMOTE_DIR", None)
        else:
            os.environ["SWEEP_REMOTE_DIR"] = saved


@dataclass
class RemoteRun:
    stdout: str
    wall_s: float
    cpu_s: float  # user + sys of everything the script ran on the login node (bash `times`)
    processes: int | None  # processes started on the login node (strace -f), with the session's shell


def run_on_login01(script: str, strace: bool = False, port: int = LOGIN_PORTS[0]) -> RemoteRun:
    """One SSH session to this lane's login01 (its Slurm user) that runs ``bash -s`` on the script."""
    trace = f"/tmp/sweep-gather-strace-{os.getpid()}-{time.monotonic_ns()}.txt"
    inner = "bash -s"
    if strace:
        inner = f"strace -f -qq -e trace=clone,clone3,fork,vfork -o {trace} bash -s"
    cmd = ["ssh", "-i", str(CLUSTER_DIR / "ssh" / "id_ed25519"), "-p", str(port), "-o", "BatchMode=yes",
           "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
           f"{USER}@127.0.0.1", f"{inner}; times >&2"]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, input=script, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    times = re.findall(r"(\d+)m([\d.]+)s", proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "")
    cpu = sum(int(m) * 60 + float(s) for m, s in times)
    processes = None
    if strace and Path(trace).exists():
        lines = Path(trace).read_text().splitlines()
        forks = [ln for ln in lines if re.search(r"\b(clone3?|v?fork)\(", ln) and "CLONE_THREAD" not in ln]
        processes = 2 + sum(1 for ln in forks if re.search(r"= \d+$", ln))  # + login shell + bash -s
        Path(trace).unlink()
    return RemoteRun(proc.stdout, wall, cpu, processes)
