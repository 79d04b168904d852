"""The watch cadence's cost per day (monitor_cron_watch every 5 minutes = 288 runs a day), per
cluster and in the Airflow metadata DB, from per-run figures measured here or in docs/benchmarks.md:

- slurmctld RPCs and SSH sessions per gather: the gather script's own count (gather.sh: three
  ``squeue --local`` of 2 RPCs each = 6 RPCs; sacct talks to slurmdbd, not slurmctld: 2 queries),
  one SSH session per cluster per run, ~16 login-node processes (benchmarks/gather.py, measured
  with sdiag and strace at 10-1,000 jobs: the same at any N).
- XCom bytes: measured here, one cluster's digested snapshot at N RUNNING jobs (benchmarks/xcom_bytes.py's
  jobs and logs, serialized as Airflow stores XCom), plus the bucket task's snapshots + flags.
- task instances per run: counted on the watch DAG as parsed (every task runs or is skipped: a row each).
- history: one watch file per run (flag and cluster rows only), written here with N/10 open flags;
  kept ``watch.history_days``.

Usage: source scripts/env.sh && python benchmarks/watch_cost.py [N running jobs per cluster, default 200]
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from xcom_bytes import snapshot, xcom_bytes  # noqa: E402

from sweep_core.config.sweep import load_sweep_config  # noqa: E402
from sweep_core.history.rows import sweep_frame  # noqa: E402
from sweep_core.history.store import HistoryStore  # noqa: E402
from sweep_core.pipeline.steps import digest_step  # noqa: E402
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag  # noqa: E402

GATHER = {"slurmctld_rpcs": 6, "slurmdbd_queries": 2, "ssh_sessions": 1, "login_processes": 16}  # per gather
RUNS_PER_DAY = 288
TI_ROW_BYTES = 1_500  # a task_instance row (+ its task_instance_history row when retried), Postgres, approx.
DAGRUN_ROW_BYTES = 1_000


def watch_tasks(clusters: int) -> int:
    """Task instances a watch run makes (parsed DAG: 2 per cluster + the fan-in, hand-off and digest tasks)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("monitor_cron_watch", ROOT / "dags" / "monitor_cron_watch.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    dag = mod.dag
    per_cluster = sum(1 for t in dag.task_ids if "." in t)
    groups = {t.split(".")[0] for t in dag.task_ids if "." in t}
    return len(dag.task_ids) - per_cluster + 2 * clusters if groups else len(dag.task_ids) + 2 * clusters


def history_bytes(n: int) -> tuple[int, int]:
    """(bytes, rows) of one watch run's history file with n/10 open flags and one cluster row."""
    flags = [Flag(rule="liveness_stale", severity="critical", cluster="leo", job_id=str(i), job_name=f"rl__job_{i}",
                  bucket="RL", message=f"no output for {90 + i} min (cadence 30 min)", action="kill-approval")
             for i in range(max(1, n // 10))]  # fmt: skip
    end = dt.datetime(2026, 12, 3, 3, 5, tzinfo=dt.UTC)
    snap = ClusterSnapshot("leo", "slurm", ClusterStatus.OK, running=[], finished=[])
    frame = sweep_frame([snap], flags, run_id="watch__x", window_start=end - dt.timedelta(minutes=5), window_end=end)
    with tempfile.TemporaryDirectory() as tmp:
        path = HistoryStore(Path(tmp)).append(frame, run_id="watch__x", window_end=end)
        return Path(path).stat().st_size, len(frame)


def main(n: int) -> None:
    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    snap = snapshot(n, config, 16_384)
    digest_step([snap], config)
    gather_xcom = xcom_bytes(snap.to_dict())
    bucket_xcom = gather_xcom + len(json.dumps([]).encode())  # the bucket task passes the snapshots on (+ flags)
    clusters = 1
    tis = watch_tasks(clusters)
    hbytes, hrows = history_bytes(n)
    day = RUNS_PER_DAY
    print(f"watch cost per day at N = {n:,} RUNNING jobs per cluster, {day} runs a day (*/5)")
    print("| item | per run | per day |")
    print("| --- | --- | --- |")
    for key, label in (("slurmctld_rpcs", "slurmctld RPCs per cluster"), ("slurmdbd_queries", "slurmdbd queries per cluster"),
                       ("ssh_sessions", "SSH sessions per cluster"), ("login_processes", "login-node processes per cluster")):  # fmt: skip
        print(f"| {label} | {GATHER[key]} | {GATHER[key] * day:,} |")
    print(f"| DAG runs | 1 | {day} |")
    print(f"| task instances (1 cluster: {tis}; +2 per cluster) | {tis} | {tis * day:,} |")
    ti_bytes = tis * TI_ROW_BYTES + DAGRUN_ROW_BYTES
    print(f"| metadata rows (task instances + dag run), ~bytes | {ti_bytes:,} B | {ti_bytes * day / 2**20:.1f} MiB |")
    xcom = gather_xcom + bucket_xcom
    print(
        f"| XCom bytes (gather {gather_xcom:,} + bucket {bucket_xcom:,}), 1 cluster | {xcom:,} B | {xcom * day / 2**20:.1f} MiB |"
    )
    print(f"| history (watch file, {hrows} rows) | {hbytes:,} B | {hbytes * day / 2**20:.2f} MiB, kept "
          f"{config.watch.history_days} d: {hbytes * day * config.watch.history_days / 2**20:.2f} MiB, "
          f"{day * config.watch.history_days} files |")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
