"""A history file that cannot be READ now (EIO, a permission, an expired object-store token) is
never moved aside: the store raises HistoryUnavailable and the sweep's rules history is UNKNOWN for
this run, with a note; only a file that does not parse (or is not ours) is moved aside."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
from test_history_store import T0, H, _append

from sweep_core.history.rules_history import load_rules_history
from sweep_core.history.store import HistoryStore, HistoryUnavailable


class TokenExpired(Exception):
    """What an object-store client raises once its credentials expired (not an OSError)."""


class Flaky:
    """A storage path (pathlib underneath) whose ``read_bytes`` of a file or ``iterdir`` raises ``exc``."""

    def __init__(self, path: Path, exc: BaseException, where: str = "file") -> None:
        self.path, self.exc, self.where = path, exc, where
        self.name = path.name

    def __truediv__(self, other: str) -> Flaky:
        return Flaky(self.path / other, self.exc, self.where)

    def iterdir(self) -> list[Any]:
        if self.where == "dir":
            raise self.exc
        return [Flaky(p, self.exc, self.where) for p in self.path.iterdir()]

    def read_bytes(self) -> bytes:
        if self.where == "file" and self.path.suffix == ".parquet":
            raise self.exc
        return self.path.read_bytes()

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.path, attr)


@pytest.mark.parametrize(
    "exc, where",
    [
        (OSError(errno.EIO, "Input/output error"), "file"),
        (PermissionError(errno.EACCES, "Permission denied"), "file"),
        (TokenExpired("ExpiredToken: the provided token has expired"), "file"),
        (OSError(errno.EIO, "Input/output error"), "dir"),
    ],
)
def test_a_transient_read_error_moves_nothing_and_the_history_is_unknown(tmp_path, exc, where) -> None:
    store = HistoryStore(tmp_path)
    _append(store, T0, "r1")
    _append(store, T0 + H, "r2")
    files = sorted(p.name for p in tmp_path.iterdir())
    flaky = HistoryStore(Flaky(tmp_path, exc, where))  # type: ignore[arg-type]
    with pytest.raises(HistoryUnavailable):
        flaky.read()
    notes: list[str] = []
    history = load_rules_history(flaky, T0 + 2 * H, notes=notes)
    assert not history.known and len(notes) == 1 and "UNKNOWN for this run" in notes[0]
    assert "nothing moved aside" in notes[0] and type(exc).__name__ in notes[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == files  # nothing moved aside
    assert load_rules_history(store, T0 + 2 * H).known  # readable again: all of it is still there


def test_a_file_that_does_not_parse_is_still_moved_aside(tmp_path) -> None:
    store = HistoryStore(tmp_path)
    _append(store, T0, "r1")
    _append(store, T0 + H, "r2")
    bad = sorted(tmp_path.glob("*.parquet"))[-1]
    bad.write_bytes(b"PAR1 truncated")
    notes: list[str] = []
    assert load_rules_history(store, T0 + 2 * H, notes=notes).known
    assert len(notes) == 1 and "moved aside" in notes[0] and not bad.exists()
