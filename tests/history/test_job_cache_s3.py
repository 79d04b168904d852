"""The job page's cache with the history on ``s3://`` against a STUB S3 (moto's server,
tests/s3_stub.py: no real S3 runs here), through Airflow's ObjectStoragePath and an ``aws``
Connection as a deployment's: the files' stamps come from one listing (their ETags), a warm request
reads no file, a re-run's replaced object is read again (its new value shown), and an object
removed by retention drops out."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from s3_stub import aws_connection, client, moto_s3

from sweep_core.history.job_cache import JobCache
from sweep_core.history.job_view import load_job_view
from sweep_core.history.rows import sweep_frame
from sweep_core.history.store import HistoryStore, file_stamps
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

pytest.importorskip("s3fs", reason="requirements-test.txt: apache-airflow-providers-amazon[s3fs], moto[s3]")
T0 = dt.datetime(2026, 12, 1, 0, 0, tzinfo=dt.UTC)
H = dt.timedelta(hours=1)


def _sweep(store: HistoryStore, i: int, reward: float = 0.0) -> None:
    job = Job("c1", "41", "rl__a", "RUNNING", "squeue", bucket="RL", metrics={"step": 10 * i + 9},
              points={"reward": [[float(s), reward + s / 100] for s in range(10 * i, 10 * i + 10)]})  # fmt: skip
    snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, running=[job], finished=[])
    end = T0 + i * H
    store.append(sweep_frame([snap], [], run_id=f"r{i}", window_start=end - H, window_end=end),
                 run_id=f"r{i}", window_end=end)  # fmt: skip


def test_the_job_cache_on_s3_stamps_by_etag_rereads_a_rerun_and_drops_a_pruned_object(tmp_path, monkeypatch) -> None:
    from airflow.sdk import ObjectStoragePath

    with moto_s3(tmp_path / "moto.log") as endpoint:
        client(endpoint).create_bucket(Bucket="ops-sweeps")
        conn = f"aws_jobcache_{uuid.uuid4().hex[:8]}"
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn.upper()}", aws_connection(endpoint))
        store = HistoryStore(ObjectStoragePath("s3://ops-sweeps/history", conn_id=conn), retention_days=10_000)
        for i in range(3):
            _sweep(store, i)
        stamps = file_stamps(store, store.files())
        assert len(stamps) == 3 and all(s[0] and s[1] not in ("", "None") for s in stamps.values())
        cache = JobCache()
        first = load_job_view(store, "c1", "41", cache=cache)
        assert cache.reads == 3 and len(first.rows) == 3 and not first.notes
        load_job_view(store, "c1", "41", cache=cache)
        assert cache.reads == 3  # warm: no object read
        _sweep(store, 1, reward=7.0)  # run r1 re-run: the same key, another object
        again = load_job_view(store, "c1", "41", cache=cache)
        assert cache.reads == 4 and dict(again.curves[0].points)[15] == 7.15
        store.retention_days = 0
        assert len(store.prune(T0 + H)) == 1  # sweep 0 past retention
        after = load_job_view(store, "c1", "41", cache=cache)
        assert cache.reads == 4 and len(after.rows) == 2 and after.curves[0].points[0][0] == 10
        fresh = load_job_view(store, "c1", "41")
        assert [c.points for c in after.curves] == [c.points for c in fresh.curves]
