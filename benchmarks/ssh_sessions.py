"""SSH sessions opened per cluster per sweep, at 10 and 200 RUNNING jobs, counted from sshd's log.

Runs the real SLURM gather (the operator's gather_slurm) against the bundled local cluster
(scripts/local_cluster.sh up first). Prints one line per size: sessions, gather seconds, jobs seen.
Usage: source scripts/env.sh && python benchmarks/ssh_sessions.py
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))
CLUSTER_DIR = Path(os.environ.get("SWEEP_CLUSTER_DIR", "/var/tmp/sweep-local-cluster"))
USER = os.environ.get("SWEEP_CLUSTER_USER", "sweep")


def accepted(node: str) -> int:
    return (CLUSTER_DIR / "log" / f"sshd-{node}.log").read_text(errors="replace").count("Accepted publickey")


def running_count() -> int:
    out = subprocess.run(["squeue", "-h", "-u", USER, "-t", "RUNNING"], capture_output=True, text=True).stdout
    return len(out.splitlines())


def setup() -> tuple[Any, Any, dt.datetime, dt.datetime]:
    """(the local cluster's config, the gather limits, window start, end), the Connection set, the
    sweep user's jobs cancelled: what every gather benchmark starts from."""
    for conn_id, conn in json.loads((CLUSTER_DIR / "connections.json").read_text()).items():
        os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(conn)
    from sweep_core.config.ops import load_cluster
    from sweep_core.config.sweep import load_sweep_config

    cfg = load_cluster(ROOT / "lab-config" / "ops", "local")  # the lab's bundled cluster
    limits = load_sweep_config(ROOT / "include" / "sweep.yaml").gather
    # A window that ended a minute ago: the script's sacct settle wait (sacct_settle_s) is over.
    end = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=60)
    subprocess.run(["runuser", "-u", USER, "--", "scancel", "-u", USER], check=False)
    time.sleep(2)
    return cfg, limits, end - dt.timedelta(hours=1), end


def main() -> None:
    from sweep_operators.slurm_gather import gather_slurm

    cfg, limits, start, end = setup()
    print(
        "jobs_running  ssh_sessions_login01  ssh_sessions_all  gather_s  jobs_in_snapshot  logs_read  ended_in_window"
    )
    for n in (10, 200):
        subprocess.run(
            [
                "runuser",
                "-u",
                USER,
                "--",
                "sbatch",
                "-J",
                "rl__bench",
                f"--array=1-{n}",
                "-t",
                "15",
                "-o",
                f"/home/{USER}/jobs/logs/bench-%A_%a.out",
                "--wrap",
                "while true; do echo Training Step Progress: 1/9; sleep 5; done",
            ],
            check=True,
            capture_output=True,
        )
        deadline = time.time() + 180
        while running_count() < n and time.time() < deadline:
            time.sleep(1)
        b1, b2 = accepted("login01"), accepted("login02")
        t0 = time.perf_counter()
        snap = gather_slurm(cfg, limits, start, end)
        took = time.perf_counter() - t0
        d1, d2 = accepted("login01") - b1, accepted("login02") - b2
        jobs = len(snap.running or [])
        logs = sum(1 for j in snap.running or [] if j.log_mtime is not None)
        ended = len(snap.finished or [])
        print(f"{running_count():>12}  {d1:>20}  {d1 + d2:>16}  {took:>8.2f}  {jobs:>16}  {logs:>9}  {ended:>15}")
        subprocess.run(["runuser", "-u", USER, "--", "scancel", "-u", USER], check=False)
        time.sleep(3)


if __name__ == "__main__":
    main()
