"""Paths inside the LOCAL tracker clone, for reads and writes that must stay there.

The clone is a git repo people commit to, so it can hold a symlink (``TRACKER.md ->
/home/me/.bashrc``, ``runs -> /etc``): a hand-off that followed it would read or write a file
outside the clone. Every path a hand-off reads or writes in the clone goes through these checks
(the harvest's tracker globs, its results files, the datagen tracker, the HF chain's trackers).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath


class OutsideClone(ValueError):
    """A path in the tracker clone that leaves it or passes through a symlink; the message says which."""


def in_clone(root: Path, path: Path | str) -> Path | None:
    """``path`` resolved when it lies strictly inside ``root`` (resolved), else None."""
    real_root = Path(root).resolve()
    real = Path(path).resolve()
    return real if real_root in real.parents else None


def clone_file(repo: Path | str, rel: str | Path) -> Path:
    """The path of ``rel`` inside the clone ``repo`` with no symlink followed: ``rel`` is relative
    without ``..``, and no component of it that exists is a symlink (a missing tail is created by
    the write). Raises :class:`OutsideClone` naming the offending component."""
    root = Path(repo).resolve()
    parts = PurePosixPath(str(rel)).parts
    if not parts or PurePosixPath(str(rel)).is_absolute() or ".." in parts:
        raise OutsideClone(f"{rel!s}: not a path relative to the tracker clone {root}")
    cur = root
    for part in parts:
        cur = cur / part
        if cur.is_symlink():
            raise OutsideClone(
                f"{cur} is a symlink (to {cur.readlink()}) in the tracker clone {root}: not followed, nothing written"
            )
    if in_clone(root, cur) is None:
        raise OutsideClone(f"{cur} is not inside the tracker clone {root}")
    return cur
