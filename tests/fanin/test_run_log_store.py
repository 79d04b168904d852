"""Run logs on an object store (issue 26): through fsspec (``memory://``; a folder seen through a
non-local filesystem stands for a bucket that several processes share) the run log is written whole
(one put, no temp object left), a reference outside the store is refused, and hand-offs appending
their sections at once (threads; processes each with its own state-database engine) lose none: the
read-modify-write is guarded by the state database's document lock, not a flock. A plain path keeps
the local files (rename + flock)."""

from __future__ import annotations

import re
import threading
import uuid
from concurrent.futures import ProcessPoolExecutor

import fsspec
import pytest
from fsspec.implementations.dirfs import DirFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from sweep_core.fanin.report import upsert_section
from sweep_core.fanin.run_logs import RunLogStore
from sweep_core.state.db import NoStateDatabase

NAME = "2026-12-04_monitor-sweep-0300Z.md"


@pytest.fixture
def state_db(tmp_path, monkeypatch) -> str:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    monkeypatch.setenv("SWEEP_STATE_URL", url)
    return url


def _memory_store() -> RunLogStore:
    return RunLogStore.at(f"memory://bucket-{uuid.uuid4().hex[:8]}/logs")


def test_memory_store_writes_whole_objects_and_refuses_references_outside_it(state_db) -> None:
    store = _memory_store()
    assert not store.local and store.read(NAME) is None
    ref = store.write(NAME, "# sweep\n")
    assert ref.startswith("memory://") and ref.endswith(f"/logs/{NAME}")
    assert store.fs.ls(store.root, detail=False) == [f"{store.root}/{NAME}"]  # no temp object beside it
    assert store.update(NAME, lambda old: old + "more\n") == ref and store.read(NAME) == "# sweep\nmore\n"
    assert store.name_of(ref) == NAME
    bucket = store.root.rsplit("/", 1)[0]
    for outside in (f"memory://{bucket}/other/{NAME}", f"memory://{bucket}/logs/../{NAME}", "/etc/passwd",
                     f"s3://{bucket.strip('/')}/logs/{NAME}", f"memory://{bucket}/logs/.hidden.md",
                     f"memory://{bucket}/logs/x.txt", ""):  # fmt: skip
        assert store.name_of(outside) is None, outside
    with pytest.raises(ValueError):
        store.read("../x.md")


def test_run_logs_on_an_object_store_need_a_state_database_every_worker_reaches(monkeypatch) -> None:
    monkeypatch.delenv("SWEEP_STATE_URL", raising=False)
    store = _memory_store()
    with pytest.raises(NoStateDatabase, match="state.conn_id"):
        store.update(NAME, lambda old: old + "x")


def test_plain_path_keeps_local_files_renamed_and_flocked(tmp_path) -> None:
    store = RunLogStore(tmp_path)
    assert store.local and store.write(NAME, "# a\n") == str(tmp_path / NAME)
    store.update(NAME, lambda old: old + "b\n")
    assert (tmp_path / NAME).read_text() == "# a\nb\n" and (tmp_path / f".{NAME}.lock").exists()
    assert store.name_of(f"file://{tmp_path}/{NAME}") == NAME and store.name_of(tmp_path / "sub" / NAME) is None
    assert RunLogStore.at(f"file://{tmp_path}").local  # a file:// URL is this disk: the same files


def _section(store: RunLogStore, k: int) -> None:
    key = f"sweep_handoff_{k % 2}:manual__{k:03d}"
    store.update(NAME, lambda old: upsert_section(old, key, f"## hand-off {k}\n" + "did its part\n" * 20))


def test_sections_appended_by_threads_at_once_are_all_kept(state_db) -> None:
    store = _memory_store()
    store.write(NAME, "# sweep\n")
    threads = [threading.Thread(target=_section, args=(store, k)) for k in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    text = store.read(NAME) or ""
    assert text.startswith("# sweep\n") and len(set(re.findall(r"manual__(\d{3})", text))) == 24


def _bucket(folder: str) -> RunLogStore:
    """A bucket every process sees: a folder through a filesystem that is NOT the local one (so the
    store writes whole objects and locks through the state database, as on s3://)."""
    return RunLogStore("logs", DirFileSystem(path=folder, fs=fsspec.filesystem("file")), space="bucket://shared/logs")


def _section_in_process(folder: str, k: int) -> None:
    _section(_bucket(folder), k)  # a fresh process: its own engine on the state database


def test_two_processes_appending_sections_to_one_object_keep_both(tmp_path, state_db) -> None:
    (tmp_path / "logs").mkdir()
    store = _bucket(str(tmp_path))
    assert not store.local
    store.write(NAME, "# sweep\n")
    with ProcessPoolExecutor(max_workers=2) as pool:
        list(pool.map(_section_in_process, [str(tmp_path)] * 16, range(16)))
    text = store.read(NAME) or ""
    assert text.startswith("# sweep\n") and sorted(set(re.findall(r"manual__(\d{3})", text))) == [
        f"{k:03d}" for k in range(16)
    ]
    assert not (tmp_path / "logs" / f".{NAME}.lock").exists()  # no flock: the database's lock


def test_the_memory_of_an_object_store_run_log_dir_is_one_space_wherever_it_is_named(tmp_path) -> None:
    from sweep_core.state.db import space_of

    assert space_of("s3://ops/run-logs/") == space_of("s3://ops/run-logs") == "s3://ops/run-logs"
    assert space_of(f"file://{tmp_path}") == space_of(tmp_path) == str(tmp_path)  # file:// is this disk


class _Refusing(MemoryFileSystem):
    """A store that answers as S3 does for a bucket that is not there (s3fs: FileNotFoundError on
    the put, with no path in the message), and a connection error on a read."""

    def pipe_file(self, path, value, **kwargs) -> None:  # noqa: ANN001
        raise FileNotFoundError("The specified bucket does not exist")

    def cat_file(self, path, start=None, end=None, **kwargs) -> bytes:  # noqa: ANN001
        raise ConnectionError('Could not connect to the endpoint URL: "http://127.0.0.1:9/bucket"')


def test_a_store_that_refuses_fails_with_the_run_logs_url_and_writes_nowhere_else(tmp_path, monkeypatch) -> None:
    from sweep_core.fanin.run_logs import RunLogUnavailable

    monkeypatch.chdir(tmp_path)
    store = RunLogStore("missing-bucket/logs", _Refusing(skip_instance_cache=True))
    with pytest.raises(RunLogUnavailable, match=r"run log memory:///?missing-bucket/logs/" + re.escape(NAME) +
                       r" could not be written: FileNotFoundError: The specified bucket"):  # fmt: skip
        store.write(NAME, "# sweep\n")
    with pytest.raises(
        RunLogUnavailable, match=r"memory:///?missing-bucket/logs/.* could not be read: ConnectionError"
    ):
        store.read(NAME)
    assert list(tmp_path.iterdir()) == []  # no local file instead
