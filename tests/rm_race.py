"""A real race against the cleanup rm script: a background bash loop swaps a parent component of
the planned trees between the real directory and a symlink to a directory OUTSIDE the artifact
root that holds a canary tree of the same shape. Shared by the local and the over-SSH tests."""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RaceTree:
    root: Path  # the artifact root (a real directory)
    swapped: Path  # root/A: the component the swapper replaces by a symlink
    outside: Path  # the symlink's target, outside the root: the canaries
    n: int

    def target(self, k: int) -> Path:
        """The k-th planned tree (as the plan resolved it while A was a real directory)."""
        return self.swapped / f"job{k}" / "trace_jobs"

    def canary(self, k: int) -> Path:
        return self.outside / f"job{k}" / "trace_jobs" / "keep.txt"

    def canaries_lost(self) -> list[int]:
        return [k for k in range(self.n) if not self.canary(k).is_file()]

    def targets_left(self) -> list[int]:
        return [k for k in range(self.n) if (self.swapped / f"job{k}" / "trace_jobs").exists()]


def make_race_tree(base: Path, n: int) -> RaceTree:
    """``n`` small trees under base/art/A and their ``n`` canaries under base/outside."""
    tree = RaceTree(base / "art", base / "art" / "A", base / "outside", n)
    for k in range(n):
        d = tree.target(k) / "d"
        d.mkdir(parents=True)
        (d / "f.json").write_text("{}")
        tree.canary(k).parent.mkdir(parents=True)
        tree.canary(k).write_text("do not delete")
    return tree


@contextmanager
def swapper(tree: RaceTree, as_user: str | None = None) -> Iterator[None]:
    """Swap ``tree.swapped`` between the real dir and a symlink to ``tree.outside`` until exit;
    the real directory is back in place afterwards."""
    a, real, stop = tree.swapped, tree.swapped.with_name("A.real"), tree.root.parent / "stop-swapper"
    q = shlex.quote
    loop = (
        f"A={q(str(a))}; R={q(str(real))}; O={q(str(tree.outside))}; S={q(str(stop))}\n"
        'while ! [ -e "$S" ]; do mv -T -- "$A" "$R" && ln -s -- "$O" "$A" && rm -f -- "$A" && mv -T -- "$R" "$A"; done\n'
    )
    cmd = ["bash", "-c", loop] if as_user is None else ["runuser", "-u", as_user, "--", "bash", "-c", loop]
    proc = subprocess.Popen(cmd)
    time.sleep(0.1)
    try:
        yield
    finally:
        stop.touch()
        proc.wait(timeout=10)
        stop.unlink()
        if a.is_symlink():
            a.unlink()
        if real.exists() and not a.exists():
            real.rename(a)


def wait_rms_done(tree: RaceTree, started: set[int], timeout: float = 15) -> None:
    """Wait until the detached rm of every started try has finished (its target is gone)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and set(tree.targets_left()) & started:
        time.sleep(0.05)
