"""XCom bytes the fan-in of one sweep pushes, at 200 and 1,000 jobs: every task between the gathers
and ``verdict`` runs in process with a recording task instance, in DAG order, its return value
serialized as Airflow stores it (serde, then JSON). Gathers are the snapshots of benchmarks/fan_in.py,
with the fixture tails (0.1-1.7 KB) and with every tail at the gather's bound (sweep.yaml tail_bytes).
Usage: source scripts/env.sh && python benchmarks/fanin_xcom.py [PROJECT]  (PROJECT: another
checkout to measure with this script, e.g. ``git archive main`` unpacked: its dags/ and plugins/)
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

PROJECT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]).resolve()
sys.path.insert(0, str(PROJECT / "plugins"))
sys.path.insert(1, str(Path(__file__).resolve().parent))

for package in ("sweep_core", "sweep_operators"):  # PROJECT's, before fan_in puts this checkout's first
    importlib.import_module(package)

from fan_in import NOW, snapshots  # noqa: E402

SIZES = (200, 1_000)


class RecordingTI:
    """xcom_pull answers from what earlier tasks returned (after a serde + JSON round trip)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.sizes: dict[str, int] = {}

    def push(self, task_id: str, value: Any) -> None:
        from airflow.sdk.serde import deserialize, serialize

        wire = json.dumps(serialize(value))
        self.sizes[task_id] = len(wire.encode())
        self.values[task_id] = deserialize(json.loads(wire))

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> Any:
        value = self.values.get(task_ids)
        return value.get(key) if key != "return_value" and isinstance(value, dict) else value


def fan_in_tasks(dag: Any) -> list[Any]:
    """The tasks ``verdict`` waits on, cluster groups excluded, in DAG order."""
    upstream = {t.task_id for t in dag.get_task("verdict").get_flat_relatives(upstream=True)}
    return [t for t in dag.topological_sort() if t.task_id in upstream and "." not in t.task_id]


def measure(dag: Any, n: int, tail_bytes: int | None) -> tuple[dict[str, int], float]:
    ti = RecordingTI()
    clusters = {s.cluster: s for s in snapshots(n)}
    for job in (j for s in clusters.values() for j in s.all_jobs() if tail_bytes):
        job.log_tail = (job.log_tail * (1 + tail_bytes // len(job.log_tail)))[-tail_bytes:]
    for task in dag.tasks:
        if task.task_id.endswith(".gather") and task.task_id.split(".")[0] in clusters:
            ti.push(task.task_id, clusters[task.task_id.split(".")[0]].to_dict())
    end = dt.datetime.fromtimestamp(NOW, dt.UTC)
    run = SimpleNamespace(dag_id=dag.dag_id, run_id=f"bench__{n}", run_after=end)
    context = {"ti": ti, "params": {"clusters": sorted(clusters), "lookback_hours": None, "dry_run": True}}
    context |= {"data_interval_start": end - dt.timedelta(hours=3), "data_interval_end": end}
    context |= {"dag_run": run, "run_id": run.run_id}
    t0 = time.perf_counter()
    for task in fan_in_tasks(dag):
        with contextlib.redirect_stdout(None):  # the tables the report prints into its task log
            ti.push(task.task_id, task.python_callable(**task.op_kwargs, **context))
    return {k: v for k, v in ti.sizes.items() if not k.endswith(".gather")}, time.perf_counter() - t0


def main() -> None:
    from airflow.dag_processing.dagbag import DagBag

    from sweep_core.config.sweep import load_sweep_config

    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as logs:
        os.environ["SWEEP_RUN_LOG_DIR"] = logs
        dag = DagBag(str(PROJECT / "dags")).get_dag("monitor_cron_sweep")
        core = Path(sys.modules["sweep_core"].__file__ or "").parents[1]
        print(f"project {PROJECT} (sweep_core from {core})")
        full = load_sweep_config(PROJECT / "include" / "sweep.yaml").gather.tail_bytes
        for n, tails in ((n, t) for n in SIZES for t in (None, full)):
            sizes, secs = measure(dag, n, tails)
            parts = ", ".join(f"{k} {v / 1024:.0f}" for k, v in sizes.items())
            what = f"{n:>5} jobs, {f'{tails} B' if tails else 'fixture'} tails"
            print(f"{what}: {len(sizes)} tasks push {sum(sizes.values()) / 2**20:.2f} MiB ({parts} KiB), {secs:.2f} s")


if __name__ == "__main__":
    main()
