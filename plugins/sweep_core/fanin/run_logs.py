"""Where the dated run logs live: a local folder, or an object store any worker and the UI reach.

``RunLogStore(root)`` with a plain path (or an fsspec local filesystem, ``file://``): today's files,
each write a temp file renamed over the log, a section added under the log's ``flock``.
``RunLogStore(root, fs)`` with any other fsspec filesystem (``s3://``, ``gs://``, ``memory://``; the
Airflow side hands ObjectStoragePath's ``fs`` and ``path``): each write is ONE whole-object put (an
object is replaced whole, no reader sees part of one), and a read-modify-write (a hand-off's section)
holds the state database's lock on the document ``runlog:<name>`` of the store's space
(sweep_core.state), which crosses hosts where a flock does not. A run log is named by its file name,
a direct child of the root; a reference to one (a path or URL, as XCom and the hand-offs' conf carry
it) is accepted only when it names such a child.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from sweep_core.state.durable import locked, write_atomic

NAME = re.compile(r"^[^/\\\x00-\x1f]+\.md$")  # one file name, no folder, no control character
Lock = Callable[[str], AbstractContextManager[Any]]


class RunLogUnavailable(OSError):
    """The run-log store could not be read or written (a missing bucket, an endpoint down, a denied
    key): the message names the run log's path or URL; nothing was written anywhere else."""


def is_url(where: str | Path) -> bool:
    """``s3://…``, ``gs://…``, ``file://…`` (not a plain path)."""
    return "://" in str(where)


def safe_name(name: str) -> bool:
    """A run log's file name: one ``*.md`` name, not hidden, no folder part."""
    return bool(NAME.match(name)) and not name.startswith(".") and name not in (".md", "..md")


def _is_local(fs: Any) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return fs is None or isinstance(fs, LocalFileSystem)


class RunLogStore:
    """The run logs under ``root`` (a folder, or a path in ``fs``); ``space``: the state database's
    space whose lock guards an object store's read-modify-write (default: the root as given)."""

    def __init__(self, root: str | Path, fs: Any = None, *, space: str | None = None, lock: Lock | None = None) -> None:
        self.fs = None if _is_local(fs) else fs
        if self.fs is None:
            self.root: str = str(Path(root).expanduser())
        else:
            self.root = str(self.fs._strip_protocol(str(root))).rstrip("/")
        self.space = space or str(root)
        self._lock = lock

    @classmethod
    def at(cls, where: str | Path, **storage_options: Any) -> RunLogStore:
        """The store at a plain path or an fsspec URL (credentials in ``storage_options``)."""
        if not is_url(where):
            return cls(where)
        import fsspec

        fs, path = fsspec.core.url_to_fs(str(where), **storage_options)
        return cls(path, fs, space=str(where))

    @property
    def local(self) -> bool:
        return self.fs is None

    def _path(self, name: str) -> str:
        if not safe_name(name):
            raise ValueError(f"run log name {name!r} is not one file name of the run-log store")
        return str(Path(self.root) / name) if self.local else posixpath.join(self.root, name)

    def ref(self, name: str) -> str:
        """The run log as a path (local) or URL (object store): what XCom, the conf and the note carry."""
        path = self._path(name)
        return path if self.local else str(self.fs.unstrip_protocol(path))

    def name_of(self, ref: str | Path) -> str | None:
        """The name of the run log ``ref`` points at, when it is a direct child of this store's root
        (a path or URL); None for anything else (another folder, another bucket, ``..``)."""
        ref = str(ref)
        if not ref:
            return None
        if self.local:
            if is_url(ref):
                if not ref.startswith("file://"):
                    return None
                ref = ref[len("file://") :]
            path = Path(ref).expanduser().resolve()
            inside = path.parent == Path(self.root).resolve()
            name = path.name
        else:
            if is_url(ref) and ref.split("://", 1)[0] not in _protocols(self.fs):
                return None
            stripped = str(self.fs._strip_protocol(ref))
            inside = posixpath.dirname(posixpath.normpath(stripped)) == posixpath.normpath(self.root)
            name = posixpath.basename(stripped)
        return name if inside and safe_name(name) else None

    def read(self, name: str) -> str | None:
        """The run log's text; None when there is none."""
        path = self._path(name)
        try:
            data = Path(path).read_bytes() if self.local else self.fs.cat_file(path)
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - object stores raise their own kinds
            raise self._unavailable(name, "read", exc) from exc
        return data.decode("utf-8", errors="replace")

    def exists(self, name: str) -> bool:
        return self.read(name) is not None

    def write(self, name: str, text: str) -> str:
        """Replace the run log whole: local, a temp file renamed over it; an object store, one put."""
        path, data = self._path(name), text.encode("utf-8")
        try:
            if self.local:
                write_atomic(Path(path), data)
            else:
                self.fs.pipe_file(path, data)  # one whole object: never a partial one visible
        except Exception as exc:  # noqa: BLE001 - object stores raise their own kinds
            raise self._unavailable(name, "written", exc) from exc
        return self.ref(name)

    def _unavailable(self, name: str, what: str, exc: BaseException) -> RunLogUnavailable:
        """The error naming the run log's path or URL (a missing bucket says only "does not exist")."""
        return RunLogUnavailable(
            f"run log {self.ref(name)} could not be {what}: {type(exc).__name__}: {str(exc)[:200]}"
        )

    @contextmanager
    def locked(self, name: str) -> Iterator[None]:
        """The run log's lock: a flock beside a local file; the state database's document lock
        ``runlog:<name>`` for an object store (held across hosts)."""
        path = self._path(name)
        if self._lock is not None:
            with self._lock(name):
                yield
        elif self.local:
            p = Path(path)
            with locked(p.with_name(f".{p.name}.lock")):
                yield
        else:
            from sweep_core.state.documents import locked as document_locked

            with document_locked(self.space, f"runlog:{name}"):
                yield

    def update(self, name: str, change: Callable[[str], str]) -> str:
        """Read the run log ('' when none yet), ``change`` it, write it, under its lock: the sweep
        and its hand-offs (several at once, on any host) each add their section, none lost."""
        with self.locked(name):
            return self.write(name, change(self.read(name) or ""))

    def own(self, name: str, is_mine: Callable[[str], bool]) -> str:
        """``name``, or ``<stem>-2.md``, ``-3``… when ``name`` holds another run's log (``is_mine``
        reads the head of a log's text)."""
        stem = name[: -len(".md")]
        for n in range(1, 100):
            candidate = name if n == 1 else f"{stem}-{n}.md"
            text = self.read(candidate)
            if text is None or is_mine(text[:4000]):
                return candidate
        return name


def _protocols(fs: Any) -> tuple[str, ...]:
    p = fs.protocol
    return (p,) if isinstance(p, str) else tuple(p)
