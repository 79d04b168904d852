"""The Parquet history (issue 13): one file per sweep with its job, cluster and flag rows; a re-run
replaces its own rows; a corrupt or foreign file is moved aside with a note, never a crash;
retention deletes old sweeps; the same store works at an Airflow ObjectStoragePath."""

from __future__ import annotations

import datetime as dt
import io

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sweep_core.history.rows import sweep_frame
from sweep_core.history.store import HistoryStore, read_sweep
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job

T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)
H = dt.timedelta(hours=3)


def _sweep(n_jobs: int = 2, status: ClusterStatus = ClusterStatus.OK, flag: bool = True):
    jobs = [
        Job("c1", str(100 + i), f"rl__run{i}", "RUNNING", "squeue", bucket="RL", metrics={"step": i, "reward": 0.5})
        for i in range(n_jobs)
    ]
    snap = ClusterSnapshot("c1", "slurm", status, login_node="login1", running=jobs, finished=[])
    flags = [Flag(rule="stall", severity="warn", cluster="c1", job_id="100", job_name="rl__run0", message="m")]
    return [snap], flags if flag else []


def _append(store: HistoryStore, end: dt.datetime, run_id: str, **kw) -> None:
    snaps, flags = _sweep(**kw)
    store.append(sweep_frame(snaps, flags, run_id=run_id, window_start=end - H, window_end=end), run_id=run_id,
                 window_end=end)  # fmt: skip


def test_rows_per_job_cluster_flag_with_metrics_run_id_and_window(tmp_path) -> None:
    store = HistoryStore(tmp_path)
    _append(store, T0, "r1")
    rows = store.read()
    assert sorted(rows["record"]) == ["cluster", "flag", "job", "job"]
    jobs = rows[rows["record"] == "job"]
    assert list(jobs["m.step"]) == [0.0, 1.0] and set(jobs["run_id"]) == {"r1"}
    assert set(rows["window_end"]) == {pd.Timestamp(T0)}
    assert rows[rows["record"] == "cluster"]["login_node"].item() == "login1"
    assert rows[rows["record"] == "flag"]["signature"].item() == "stall|c1|100"


def test_rerun_replaces_its_own_rows_and_another_run_adds(tmp_path) -> None:
    store = HistoryStore(tmp_path)
    _append(store, T0, "r1", n_jobs=2)
    _append(store, T0, "r1", n_jobs=3)  # a re-run of the same run
    _append(store, T0 + H, "r2", n_jobs=1)
    rows = store.read(records=["job"])
    assert rows.groupby("run_id").size().to_dict() == {"r1": 3, "r2": 1}
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(store.read(before=T0 + H)["run_id"].unique()) == 1
    assert read_sweep(store, "r2", T0 + H, records=["job"])["name"].tolist() == ["rl__run0"]


def test_corrupt_and_foreign_files_are_moved_aside_with_a_note(tmp_path) -> None:
    store = HistoryStore(tmp_path)
    _append(store, T0, "r1")
    _append(store, T0 + H, "r2")
    good, bad = sorted(p for p in tmp_path.iterdir() if p.suffix == ".parquet")
    bad.write_bytes(b"PAR1 not really parquet")
    foreign = io.BytesIO()
    pq.write_table(pa.table({"x": [1]}), foreign)
    (tmp_path / "elsewhere.parquet").write_bytes(foreign.getvalue())
    (tmp_path / f"{'2' * 8}T000000Z_{'0' * 12}.parquet").write_bytes(foreign.getvalue())
    notes: list[str] = []
    rows = store.read(notes=notes)
    assert set(rows["run_id"]) == {"r1"}
    assert len(notes) == 3 and all("moved aside" in n for n in notes), notes
    assert sorted(p.name.split(".corrupt-")[0] for p in tmp_path.glob("*.corrupt-*")) == sorted(
        [bad.name, "elsewhere.parquet", f"{'2' * 8}T000000Z_{'0' * 12}.parquet"]
    )
    assert good.exists()
    _append(store, T0 + 2 * H, "r3")  # the store goes on writing
    assert set(store.read()["run_id"]) == {"r1", "r3"}


def test_retention_deletes_sweeps_older_than_the_limit(tmp_path) -> None:
    store = HistoryStore(tmp_path, retention_days=2)
    for day in range(5):
        _append(store, T0 + dt.timedelta(days=day), f"r{day}")
    assert sorted(store.read()["run_id"].unique()) == ["r2", "r3", "r4"]


def test_object_storage_path_location(tmp_path) -> None:
    from airflow.sdk import ObjectStoragePath

    store = HistoryStore(ObjectStoragePath(f"file://{tmp_path}/hist"))
    _append(store, T0, "r1")
    _append(store, T0 + H, "r2")
    assert sorted(store.read(records=["flag"])["run_id"]) == ["r1", "r2"]
    assert len(list((tmp_path / "hist").glob("*.parquet"))) == 2
