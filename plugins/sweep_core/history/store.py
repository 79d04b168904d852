"""Where the history lives: ``<root>/<window end>_<run hash>.parquet``, one file per sweep, under a
root that is an Airflow ObjectStoragePath in production (``s3://``, ``gs://``, ``file://``) or a
pathlib.Path (anything with ``iterdir``/``read_bytes``/``write_bytes``/``rename``/``unlink``).

A sweep's file is written whole: on a local disk to a dot-name and renamed, on an object store as
one put of the whole object (a rename there is a copy and a delete); readers never see half of it,
and a re-run of the same run writes the same name and so replaces its own rows. A file that does not parse, or a Parquet
file that is not ours, is moved aside as ``<name>.corrupt-<stamp>`` with a warning and a note. A file
or folder that cannot be READ (EIO, a permission, an expired object-store token: it may pass) is
never moved: HistoryUnavailable is raised and the caller says the history is UNKNOWN this run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sweep_core.history.rows import SCHEMA_VERSION
from sweep_core.state.state_dir import move_aside

if TYPE_CHECKING:  # pandas and pyarrow are imported where used: a DAG file's parse and most tasks need neither
    import pandas as pd

log = logging.getLogger(__name__)
META_KEY = b"sweep_history"
ROW_GROUP_ROWS = 10_000  # rows per Parquet row group: its min/max of cluster and job_id let a one-job read skip it
_NAME = re.compile(r"^(?P<key>\d{8}T\d{6}Z)_(?P<run>[0-9a-f]{12})\.parquet$")


class HistoryUnavailable(OSError):
    """The history could not be read for a reason that may pass (I/O error, permission, an expired
    token): nothing was moved aside; this run's history is UNKNOWN."""


def _read_bytes(path: Any) -> bytes | None:
    """The file's bytes; None when it is gone; HistoryUnavailable on any other read failure."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None  # pruned or moved aside by a concurrent reader
    except Exception as exc:  # noqa: BLE001 - object stores raise their own kinds (an expired token)
        raise HistoryUnavailable(f"{path}: {type(exc).__name__}: {str(exc)[:160]}") from exc


class StoragePath(Protocol):
    """The part of ObjectStoragePath / pathlib.Path the store uses."""

    name: str

    def __truediv__(self, other: str) -> Any: ...
    def iterdir(self) -> Iterable[Any]: ...
    def mkdir(self, parents: bool = ..., exist_ok: bool = ...) -> None: ...
    def read_bytes(self) -> bytes: ...
    def write_bytes(self, data: bytes) -> Any: ...
    def rename(self, target: Any) -> Any: ...
    def unlink(self, missing_ok: bool = ...) -> None: ...
    def exists(self) -> bool: ...


def _object_store(path: Any) -> Any:
    """The fsspec filesystem of ``path`` when it is an object store's (an ObjectStoragePath of
    ``s3://``, ``gs://``…); None on this disk (a pathlib.Path, or ``file://``)."""
    from fsspec.implementations.local import LocalFileSystem

    fs = getattr(path, "fs", None)
    return None if fs is None or isinstance(fs, LocalFileSystem) else fs


def window_key(window_end: dt.datetime) -> str:
    return window_end.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def run_hash(run_id: str) -> str:
    return hashlib.sha256(run_id.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class SweepFile:
    key: str  # the window end, UTC, as in the name (sorts in time)
    run: str  # the run id's hash
    path: Any


class HistoryStore:
    """The Parquet history of every sweep under ``root``; ``retention_days`` by window end."""

    def __init__(self, root: StoragePath, retention_days: int = 90) -> None:
        self.root = root
        self.retention_days = retention_days

    def path_for(self, run_id: str, window_end: dt.datetime) -> Any:
        return self.root / f"{window_key(window_end)}_{run_hash(run_id)}.parquet"

    def append(self, frame: pd.DataFrame, *, run_id: str, window_end: dt.datetime) -> Any:
        """Write one sweep's rows atomically (a re-run of ``run_id`` replaces them); prune old sweeps."""
        import pyarrow as pa

        target = self.write_table(
            pa.Table.from_pandas(frame, preserve_index=False), run_id=run_id, window_end=window_end
        )
        self.prune(window_end)
        return target

    def write_table(self, table: Any, *, run_id: str, window_end: dt.datetime) -> Any:
        """Write one sweep's Arrow table as its file, atomically, in row groups of ROW_GROUP_ROWS (with
        the point rows sorted by job: sweep_frame, a reader of one job skips the groups it is not in)."""
        import pyarrow.parquet as pq

        table = table.replace_schema_metadata({**(table.schema.metadata or {}), META_KEY: SCHEMA_VERSION.encode()})
        buf = io.BytesIO()
        pq.write_table(table, buf, compression="zstd", row_group_size=ROW_GROUP_ROWS)
        target = self.path_for(run_id, window_end)
        fs = _object_store(target)
        if fs is not None:  # no folder to make: a key prefix exists with its first object
            fs.pipe_file(target.path, buf.getvalue())  # one put of the whole object
        else:
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = self.root / f".{target.name}.{os.getpid()}.tmp"
            tmp.write_bytes(buf.getvalue())
            tmp.rename(target)
        return target

    def prune(self, now: dt.datetime) -> list[str]:
        """Delete the sweeps whose window ended more than ``retention_days`` before ``now``."""
        cutoff = window_key(now - dt.timedelta(days=self.retention_days))
        gone = []
        for f in self.files():
            if f.key < cutoff:
                f.path.unlink(missing_ok=True)
                gone.append(f.path.name)
        if gone:
            log.info("history retention (%s days): deleted %s", self.retention_days, ", ".join(gone))
        return gone

    def files(self, notes: list[str] | None = None, *, read_only: bool = False) -> list[SweepFile]:
        """Every sweep's file, oldest first; a ``.parquet`` not named by the store is moved aside
        (only skipped when ``read_only``: a reader such as the Sweeps page never moves a file)."""
        try:
            entries = list(self.root.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            return []
        except Exception as exc:  # noqa: BLE001 - as _read_bytes: may pass, nothing moved
            raise HistoryUnavailable(f"{self.root}: {type(exc).__name__}: {str(exc)[:160]}") from exc
        out = []
        for p in entries:
            m = _NAME.match(p.name)
            if m:
                out.append(SweepFile(m["key"], m["run"], p))
            elif p.name.endswith(".parquet") and not read_only:
                move_aside(p, "not a file this history writes (foreign name)", notes)
        return sorted(out, key=lambda f: (f.key, f.run))

    def read(
        self,
        *,
        records: Sequence[str] | None = None,
        columns: Sequence[str] | None = None,
        before: dt.datetime | None = None,
        last: int | None = None,
        notes: list[str] | None = None,
    ) -> pd.DataFrame:
        """The rows of the sweeps (``records`` kinds only, ``columns`` only) whose window ended
        before ``before`` (all by default), the ``last`` N of them; unusable files moved aside."""
        files = self.files(notes)
        if before is not None:
            files = [f for f in files if f.key < window_key(before)]
        frames = []
        for f in reversed(files):
            if last is not None and len(frames) >= last:
                break
            frame = _read_file(f.path, records, columns, notes)
            if frame is not None:
                frames.append(frame)
        import pandas as pd

        if not frames:
            return pd.DataFrame(columns=list(columns or ["record", "run_id", "window_end", "cluster"]))
        return pd.concat(reversed(frames), ignore_index=True)


def read_sweep(
    store: HistoryStore,
    run_id: str,
    window_end: dt.datetime,
    *,
    records: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    notes: list[str] | None = None,
) -> pd.DataFrame | None:
    """The rows of one sweep (run ``run_id``, window ending ``window_end``); None when not written."""
    return _read_file(store.path_for(run_id, window_end), records, columns, notes)


def read_file(
    path: Any,
    *,
    records: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    notes: list[str] | None = None,
    read_only: bool = False,
    where: Mapping[str, str] | None = None,
    pick: Callable[[Any], Sequence[str]] | None = None,
) -> pd.DataFrame | None:
    """The rows of one sweep's file (None when gone or unusable: then moved aside unless
    ``read_only``, noted); ``where``: only the rows whose columns equal these values (filtered
    before pandas sees them: one job's rows of a large sweep cost little); ``pick``: the columns
    chosen from the file's own Arrow schema (instead of ``columns``: one read of the file, not two)."""
    return _read_file(path, records, columns, notes, read_only=read_only, where=where, pick=pick)


def _groups_for(meta: Any, where: Mapping[str, str]) -> list[int] | None:
    """The row groups that may hold a row whose ``where`` columns equal the values, by each group's
    min/max statistics of those (string) columns; None: every group (one group, or no statistics).
    A group is skipped only when its statistics rule the value out: the rows are still filtered."""
    if meta.num_row_groups <= 1:
        return None
    at = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    keep = []
    for g in range(meta.num_row_groups):
        rg, maybe = meta.row_group(g), True
        for col, value in where.items():
            i = at.get(col)
            st = None if i is None else rg.column(i).statistics
            if st is None or st.physical_type != "BYTE_ARRAY":
                continue
            if st.has_null_count and st.null_count == rg.num_rows:
                maybe = False  # every row null: none equals the value
            elif st.has_min_max:
                lo, hi = st.min, st.max
                want: str | bytes = value.encode() if isinstance(lo, bytes) else value
                maybe = lo <= want <= hi  # type: ignore[operator]
            if not maybe:
                break
        if maybe:
            keep.append(g)
    return keep


def _skip(path: Any, why: str, notes: list[str] | None) -> None:
    """A read-only reader's answer to an unusable file: skipped with a note, left where it is."""
    note = f"sweep history {path} is unusable ({why}): skipped (left in place)"
    log.warning("%s", note)
    if notes is not None:
        notes.append(note)


def read_table(
    path: Any,
    *,
    pick: Callable[[Any], Sequence[str]],
    notes: list[str] | None = None,
    where: Mapping[str, str] | None = None,
) -> Any:
    """:func:`read_file` read-only as an Arrow table (no pandas: what a one-job read of many files
    wants), ``pick`` choosing the columns from the file's schema; None when gone or unusable (noted)."""
    got = _read_table(path, None, notes, read_only=True, where=where, pick=pick)
    return None if got is None else got[0]


def _read_table(
    path: Any,
    columns: Sequence[str] | None,
    notes: list[str] | None,
    *,
    read_only: bool = False,
    where: Mapping[str, str] | None = None,
    pick: Callable[[Any], Sequence[str]] | None = None,
) -> tuple[Any, Sequence[str] | None] | None:
    """The file's table (``where`` rows, ``columns`` or ``pick``'s) and the columns asked; None as
    :func:`read_file`."""
    aside = _skip if read_only else move_aside
    try:
        data = _read_bytes(path)
    except HistoryUnavailable as exc:
        if not read_only:
            raise
        _skip(path, f"not readable now: {exc}", notes)  # a page view: skipped, never moved
        return None
    if data is None:
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:  # the bytes are here: whatever fails now is the file itself (moved aside)
        pf = pq.ParquetFile(io.BytesIO(data))
        meta = pf.schema_arrow.metadata or {}
        if meta.get(META_KEY) != SCHEMA_VERSION.encode():
            aside(path, "a Parquet file without this history's schema (foreign)", notes)
            return None
        names = pf.schema_arrow.names
        columns = columns if pick is None else list(pick(pf.schema_arrow))
        cols = None if columns is None else [c for c in dict.fromkeys(["record", *columns]) if c in names]
        groups = None if not where else _groups_for(pf.metadata, where)
        table = pf.read(columns=cols) if groups is None else pf.read_row_groups(groups, columns=cols)
    except (pa.ArrowException, OSError, ValueError) as exc:
        aside(path, f"{type(exc).__name__}: {str(exc)[:160]}", notes)
        return None
    if where:
        import pyarrow.compute as pc

        if any(col not in table.column_names for col in where):
            table = table.slice(0, 0)
        else:
            mask = None
            for col, value in where.items():
                hit = pc.fill_null(pc.equal(table[col].cast(pa.string()), value), False)
                mask = hit if mask is None else pc.and_(mask, hit)
            table = table.filter(mask)
    return table, columns


def _read_file(
    path: Any,
    records: Sequence[str] | None,
    columns: Sequence[str] | None,
    notes: list[str] | None,
    *,
    read_only: bool = False,
    where: Mapping[str, str] | None = None,
    pick: Callable[[Any], Sequence[str]] | None = None,
) -> pd.DataFrame | None:
    got = _read_table(path, columns, notes, read_only=read_only, where=where, pick=pick)
    if got is None:
        return None
    table, columns = got
    frame = table.to_pandas()
    if records is not None:
        frame = frame[frame["record"].isin(list(records))]
    if columns is not None:
        frame = frame.reindex(columns=list(dict.fromkeys(["record", *columns])))
    return frame


VERSION_KEYS = ("ETag", "etag", "generation", "LastModified", "last_modified", "updated", "mtime")  # s3fs, gcsfs, adlfs


def file_stamps(store: HistoryStore, files: Sequence[SweepFile]) -> dict[str, tuple[Any, ...]]:
    """What tells a file's version apart (a re-run writes the same name anew), by file name: size,
    modification time and inode (a write is a new file renamed into place; on an object store its ETag or modification time, from ONE listing of
    the root, never a request per file); a file gone since it was listed, or on a store whose
    listing gives no version of it, has no stamp (a cache then reads it every time). Raises
    HistoryUnavailable as :meth:`HistoryStore.files` does."""
    fs = _object_store(store.root)
    out: dict[str, tuple[Any, ...]] = {}
    try:
        if fs is not None:
            fs.invalidate_cache(store.root.path)  # a listing cached by the filesystem would hide a re-run
            for info in fs.ls(store.root.path, detail=True):
                name = str(info.get("name", "")).rstrip("/").rsplit("/", 1)[-1]
                when = next((info[k] for k in VERSION_KEYS if info.get(k)), None)
                if when is not None:  # a store that gives no version: never stamped, read every time
                    out[name] = (info.get("size"), str(when))
            return {f.path.name: out[f.path.name] for f in files if f.path.name in out}
        for f in files:
            try:
                st = f.path.stat()
            except FileNotFoundError:
                continue
            out[f.path.name] = (st.st_size, getattr(st, "st_mtime_ns", st.st_mtime), getattr(st, "st_ino", 0))
    except Exception as exc:  # noqa: BLE001 - as files(): may pass, nothing moved
        raise HistoryUnavailable(f"{store.root}: {type(exc).__name__}: {str(exc)[:160]}") from exc
    return out


def read_run(
    store: HistoryStore,
    run_id: str,
    *,
    records: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    notes: list[str] | None = None,
) -> pd.DataFrame | None:
    """The rows of the sweep run ``run_id`` whatever its window (found by its run hash); None when
    the store holds no file of it."""
    mine = [f for f in store.files(notes) if f.run == run_hash(run_id)]
    return _read_file(mine[-1].path, records, columns, notes) if mine else None
