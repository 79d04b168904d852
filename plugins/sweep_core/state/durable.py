"""Files more than one writer updates (a run log that hand-offs append sections to; the memory
across sweeps is in the state database, sweep_core.state): an exclusive lock around each read-modify-write, and atomic, durable writes
(a temp file unique to the writer, fsynced, renamed over the file, the folder fsynced after), so a
reader never sees half a file and a crash leaves the old file or the new one.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive flock on ``lock_path`` (created if absent) for the block: across processes
    and across threads (each takes its own open file)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def write_atomic(path: Path, data: bytes) -> Path:
    """Replace ``path`` with ``data``: written aside, fsynced, renamed over it, the folder fsynced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path
