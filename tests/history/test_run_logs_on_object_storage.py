"""Run logs and history on object storage, as a deployment runs them (issue 26): with run_log_dir
an ObjectStoragePath URL (``memory://``, attached to Airflow's object storage as s3:// would be by
its provider), the sweep's render task writes its run log there, two hand-offs append their
sections at once (both kept), the history task writes the Parquet history under the same URL and
names the run log in it, and the Sweeps page's app (its auth dependency aside: that is the
api-server's, tested in test_sweeps_page_auth) links the run to its log and serves it from the
store; a name outside the store is 404. A ``file://`` URL is the local folder."""

from __future__ import annotations

import datetime as dt
import re
import threading
import uuid
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from fsspec.implementations.memory import MemoryFileSystem

from sweep_core.history.rows import JOB, sweep_frame
from sweep_core.history.store import HistoryStore
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

ROOT = Path(__file__).resolve().parents[2]
SWEEP_YAML = str(ROOT / "include" / "sweep.yaml")
END = dt.datetime(2026, 12, 4, 3, 0, tzinfo=dt.UTC)


@pytest.fixture
def bucket(tmp_path, monkeypatch) -> str:
    """A fresh ``memory://`` run-log dir, Airflow's ObjectStoragePath able to open it, and a state
    database every worker would reach (a file here)."""
    from airflow.sdk.io import attach

    attach("memory", fs=MemoryFileSystem())
    where = f"memory://sweeps-{uuid.uuid4().hex[:8]}/logs"
    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", where)
    monkeypatch.setenv("SWEEP_STATE_URL", f"sqlite:///{tmp_path / 'state.db'}")
    monkeypatch.delenv("SWEEP_HISTORY", raising=False)
    monkeypatch.setenv("SWEEP_CONFIG", SWEEP_YAML)
    return where


def _client(monkeypatch) -> TestClient:
    from sweep_operators import sweeps_page

    monkeypatch.setattr(sweeps_page, "_auth", lambda: [])  # the api-server's login and DAG check
    return TestClient(sweeps_page.create_app())


def _sweep(run_log: str) -> dict:
    """The render task's XCom as the history task pulls it."""
    return {"overview": "", "tables": {}, "run_log": run_log}


class _TI:
    def __init__(self, pushed: dict) -> None:
        self.pushed = pushed

    def xcom_pull(self, task_ids: str, key: str = "return_value"):  # noqa: ANN201
        return self.pushed.get(task_ids)


def test_run_log_sections_history_and_page_on_one_object_store_url(bucket, monkeypatch) -> None:
    from airflow.sdk import ObjectStoragePath

    from sweep_core.config.sweep import load_sweep_config
    from sweep_operators.handoff_record import append_record, run_log_store
    from sweep_operators.notify_tasks import record_history

    store = run_log_store(load_sweep_config(SWEEP_YAML))
    assert not store.local
    name = "2026-12-04_monitor-sweep-0300Z.md"
    ref = store.update(name, lambda old: old + "# sweep manual__r1\n- Run: `manual__r1`\n")
    assert ref.startswith("memory://") and store.name_of(ref) == name

    def hand_off(dag_id: str) -> None:  # the cleanup and the tracker harvest, finishing at once
        context = {"run_id": f"manual__r1__{dag_id}", "params": {"run_log": ref}}
        append_record(context, SWEEP_YAML, dag_id, f"{dag_id} did its part\n" * 50)

    threads = [threading.Thread(target=hand_off, args=(d,)) for d in ("sweep_cleanup", "sweep_tracker_harvest")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    text = store.read(name) or ""
    assert text.startswith("# sweep manual__r1\n")
    assert set(re.findall(r"## Hand-off (\w+)", text)) == {"sweep_cleanup", "sweep_tracker_harvest"}

    job = Job("hpc", "41", "rl__a", "RUNNING", "squeue", bucket="RL", log_tail="step 9")
    snap = ClusterSnapshot("hpc", "slurm", ClusterStatus.OK, running=[job], finished=[])
    ti = _TI({"bucket": {"snapshots": [snap.to_dict()], "flags": []}, "rules": {"snapshots": [snap.to_dict()], "flags": []},
              "render": _sweep(ref)})  # fmt: skip
    context = {"ti": ti, "params": {}, "run_id": "manual__r1",
               "data_interval_start": END - dt.timedelta(hours=3), "data_interval_end": END}  # fmt: skip
    written = record_history(SWEEP_YAML, **context)
    assert written["path"].startswith("memory://") and f"{bucket.split('://')[1]}/history/" in written["path"]
    rows = HistoryStore(ObjectStoragePath(f"{bucket}/history")).read(records=[JOB])
    assert list(rows["run_log"]) == [name] and list(rows["name"]) == ["rl__a"]  # read back through the same URL

    client = _client(monkeypatch)
    page = client.get("/")
    assert page.status_code == 200
    link = re.search(r'<tr class=\'run\'>.*?<a class="runlog" href="([^"]+)"', page.text)
    assert link and link.group(1) == f"runlog?name={name}"  # the run's row: its log one click away
    got = client.get(f"/{link.group(1)}")
    assert got.status_code == 200 and got.text == text and got.headers["content-type"].startswith("text/plain")
    for outside in ("../logs/" + name, "/etc/passwd", "history/x.md", ".sweep-state.md", "passwd",
                    f"{bucket}/{name}", "..%2Flogs%2F" + name):  # fmt: skip
        assert client.get("/runlog", params={"name": outside}).status_code == 404, outside


def test_a_file_url_is_the_local_folder_and_the_page_serves_only_its_files(tmp_path, monkeypatch) -> None:
    from sweep_core.config.sweep import load_sweep_config
    from sweep_operators.handoff_record import run_log_store

    logs = tmp_path / "logs"
    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", f"file://{logs}")
    monkeypatch.delenv("SWEEP_STATE_URL", raising=False)
    monkeypatch.setenv("SWEEP_CONFIG", SWEEP_YAML)
    store = run_log_store(load_sweep_config(SWEEP_YAML))
    assert store.local
    store.update("2026-12-04_x.md", lambda old: "# mine\n")
    (tmp_path / "secret.md").write_text("not the store's")
    client = _client(monkeypatch)
    assert client.get("/runlog", params={"name": "2026-12-04_x.md"}).text == "# mine\n"
    assert (logs / "2026-12-04_x.md").read_text() == "# mine\n"  # today's local file
    for outside in ("../secret.md", str(tmp_path / "secret.md"), "missing.md"):
        assert client.get("/runlog", params={"name": outside}).status_code == 404, outside


def test_history_on_an_object_store_is_written_whole_and_read_back(bucket) -> None:
    from airflow.sdk import ObjectStoragePath

    root = ObjectStoragePath(f"{bucket}/history")
    store = HistoryStore(root)
    snap = ClusterSnapshot("hpc", "slurm", ClusterStatus.OK, running=[], finished=[])
    for i, run in enumerate(("r1", "r2")):
        end = END + dt.timedelta(hours=i)
        store.append(sweep_frame([snap], [], run_id=run, window_start=end - dt.timedelta(hours=1), window_end=end,
                                 run_log=f"{run}.md"), run_id=run, window_end=end)  # fmt: skip
    names = sorted(p.name for p in root.iterdir())
    assert len(names) == 2 and all(n.endswith(".parquet") and not n.startswith(".") for n in names)  # no temp object
    again = HistoryStore(ObjectStoragePath(f"{bucket}/history")).read()
    assert sorted(again["run_id"]) == ["r1", "r2"] and sorted(again["run_log"]) == ["r1.md", "r2.md"]
