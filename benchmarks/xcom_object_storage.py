"""Bytes the watch's XCom puts in the metadata DB per run, WITHOUT and WITH Airflow's object-storage
XCom backend (apache-airflow-providers-common-io ``XComObjectStorageBackend``, the settings
docker-compose.yaml and the Helm values set: threshold ``THRESHOLD`` bytes, gzip), at 10 / 200 /
1,000 RUNNING jobs on one cluster.

The values are the watch run's two big XComs, as benchmarks/watch_cost.py counts them: the gather's
digested snapshot (benchmarks/xcom_bytes.py's jobs and logs at 16 KiB tails) and the bucket task's
snapshots passed on; the small ones (hand-off confs, verdicts) stay under the threshold either way.
Each is serialized by the real backend class, as a task's XCom push does (``serialize_value``: what
the API server writes into the ``xcom`` table), into a real ``file://`` object store, read back
(``deserialize_value``) and compared. Per day: 288 watch runs (``*/5``).

Usage: source scripts/env.sh && python benchmarks/xcom_object_storage.py [10,200,1000]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))
sys.path.insert(0, str(ROOT / "benchmarks"))

THRESHOLD = 65_536  # docker-compose.yaml AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_THRESHOLD
RUNS_PER_DAY = 288
SIZES = (10, 200, 1_000)


def _values(n: int) -> list[tuple[str, Any]]:
    """(task id, value) of a watch run's big XComs at ``n`` RUNNING jobs."""
    from xcom_bytes import snapshot

    from sweep_core.config.sweep import load_sweep_config
    from sweep_core.pipeline.steps import digest_step

    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    snap = snapshot(n, config, 16_384)
    digest_step([snap], config)
    data = snap.to_dict()
    return [("leonardo.gather", data), ("bucket", {"snapshots": [data], "flags": []})]


def _db_bytes(stored: Any) -> int:
    return len(stored if isinstance(stored, bytes) else str(stored).encode())


def measure(n: int, store: Path) -> dict[str, float]:
    """DB bytes without / with the backend and object-store bytes of one run (each value read back)."""
    from airflow.models.xcom import BaseXCom
    from airflow.providers.common.io.xcom.backend import XComObjectStorageBackend as ObjXCom

    store.mkdir(parents=True, exist_ok=True)
    out = {"plain": 0.0, "with": 0.0, "object": 0.0}
    for task_id, value in _values(n):
        out["plain"] += _db_bytes(BaseXCom.serialize_value(value))
        before = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
        stored = ObjXCom.serialize_value(value, key="return_value", task_id=task_id, dag_id="monitor_cron_watch",
                                         run_id=f"scheduled__{n}", map_index=-1)  # fmt: skip
        out["with"] += _db_bytes(stored)
        out["object"] += sum(f.stat().st_size for f in store.rglob("*") if f.is_file()) - before
        back = ObjXCom.deserialize_value(type("Row", (), {"value": stored})())
        plain = BaseXCom.deserialize_value(type("Row", (), {"value": BaseXCom.serialize_value(value)})())
        assert back == plain, task_id
    return out


def main(sizes: tuple[int, ...]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_PATH"] = f"file://{tmp}/xcom"
        os.environ["AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_THRESHOLD"] = str(THRESHOLD)
        os.environ["AIRFLOW__COMMON_IO__XCOM_OBJECTSTORAGE_COMPRESSION"] = "gzip"
        print(
            f"watch run XCom (gather + bucket, 1 cluster); threshold {THRESHOLD:,} B, gzip; {RUNS_PER_DAY} runs a day"
        )
        print("| RUNNING jobs | metadata DB per run, without | with | object store per run (gz) | DB per day without | with | object store per day |")  # fmt: skip
        print("| --- | --- | --- | --- | --- | --- | --- |")
        measure(1, Path(tmp) / "warm-up")  # imports and the first file opened: not counted
        for n in sizes:
            m = measure(n, Path(tmp))
            day = RUNS_PER_DAY
            print(f"| {n:,} | {m['plain']:,.0f} B | {m['with']:,.0f} B | {m['object']:,.0f} B "
                  f"| {m['plain'] * day / 2**20:,.1f} MiB | {m['with'] * day / 2**20:,.2f} MiB "
                  f"| {m['object'] * day / 2**20:,.1f} MiB |")  # fmt: skip


if __name__ == "__main__":
    main(tuple(int(x) for x in sys.argv[1].split(",")) if len(sys.argv) > 1 else SIZES)
