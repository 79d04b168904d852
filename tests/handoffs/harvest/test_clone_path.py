"""Paths in the tracker clone (sweep_core.handoffs.harvest.clone_path): a write never goes through a
symlink committed in the clone, nor out of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep_core.handoffs.harvest.clone_path import OutsideClone, clone_file, in_clone


def test_a_plain_path_in_the_clone_is_given_even_when_its_tail_does_not_exist_yet(tmp_path: Path) -> None:
    (tmp_path / "repo" / "a").mkdir(parents=True)
    assert clone_file(tmp_path / "repo", "a/b/new.md") == (tmp_path / "repo" / "a" / "b" / "new.md").resolve()


@pytest.mark.parametrize("rel", ["/etc/passwd", "../x.md", "a/../../x.md", ""])
def test_a_path_that_is_not_relative_to_the_clone_is_refused(tmp_path: Path, rel: str) -> None:
    (tmp_path / "repo").mkdir()
    with pytest.raises(OutsideClone):
        clone_file(tmp_path / "repo", rel)


def test_a_symlink_anywhere_on_the_way_is_refused_even_one_that_stays_inside(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "real").mkdir(parents=True)
    (repo / "inside").symlink_to(repo / "real")
    (repo / "out").symlink_to(tmp_path)
    for rel in ("inside/x.md", "out/x.md"):
        with pytest.raises(OutsideClone, match="is a symlink"):
            clone_file(repo, rel)
    assert in_clone(repo, repo / "inside" / "x.md") is not None and in_clone(repo, repo / "out" / "x") is None
