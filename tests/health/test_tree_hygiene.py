"""Working-tree hygiene classification on real `git status --porcelain=v1 -b -z` output."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sweep_core.health.tree_hygiene import parse_tree_status


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


def make_clone(tmp_path: Path) -> tuple[Path, Path]:
    origin = tmp_path / "origin.git"
    work = tmp_path / "seed"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    subprocess.run(["git", "clone", "-q", str(origin), str(work)], check=True)
    for rel in ("eval/lists/base.txt", "scripts/launch.sh", "train.py"):
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text("v1\n")
    git(work, "add", "-A")
    git(work, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "seed")
    git(work, "push", "-q", "origin", "main")
    clone = tmp_path / "cluster-clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    return work, clone


def test_classifies_what_piled_up(tmp_path: Path) -> None:
    seed, clone = make_clone(tmp_path)
    # upstream moves on: train.py changes there, the cluster clone is behind
    (seed / "train.py").write_text("v2\n")
    git(seed, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "v2")
    git(seed, "push", "-q", "origin", "main")
    git(clone, "fetch", "-q")
    (clone / "train.py").write_text("v2\n")  # same as upstream: stale HEAD
    (clone / "scripts" / "launch.sh").write_text("hand edit\n")  # diverged
    (clone / "run.yaml.bak").write_text("x")
    (clone / "&1").write_text("x")
    (clone / "ds_manifest.txt").write_text("x")
    (clone / "math_eval_list.txt").write_text("x")
    (clone / "launch_rl_a2.py").write_text("x")
    (clone / "notes with space.md").write_text("x")
    status = git(clone, "status", "--porcelain=v1", "-b", "-z")
    same = {}
    for f in ("train.py", "scripts/launch.sh"):
        same[f] = subprocess.run(["git", "-C", str(clone), "diff", "--quiet", "@{u}", "--", f]).returncode == 0
    rep = parse_tree_status(status, same)
    kinds = {it.path: it.kind for it in rep.items}
    assert rep.branch == "main" and rep.upstream == "origin/main" and rep.behind == 1
    assert kinds["train.py"] == "modified-stale" and kinds["scripts/launch.sh"] == "modified-diverged"
    assert {kinds["run.yaml.bak"], kinds["&1"], kinds["ds_manifest.txt"]} == {"transient"}
    sugg = {it.path: it.suggestion for it in rep.items}
    assert "eval/lists/math_eval_list.txt" in sugg["math_eval_list.txt"]
    assert "scripts/launch_rl_a2.py" in sugg["launch_rl_a2.py"]
    assert kinds["notes with space.md"] == "other"
    assert "git pull --ff-only" in rep.summary() and "never reset --hard" in rep.summary()


def test_clean_tree_and_renames(tmp_path: Path) -> None:
    _, clone = make_clone(tmp_path)
    assert parse_tree_status(git(clone, "status", "--porcelain=v1", "-b", "-z"), {}).clean
    git(clone, "mv", "train.py", "train2.py")
    rep = parse_tree_status(git(clone, "status", "--porcelain=v1", "-b", "-z"), {})
    assert [it.path for it in rep.items] == ["train2.py"] and rep.problems == []


def test_garbage_is_reported_not_raised() -> None:
    rep = parse_tree_status("## main\0XYZ\0", {})
    assert rep.problems and not rep.items


def test_unreadable_branch_tracking_is_a_problem_not_a_crash() -> None:
    report = parse_tree_status("## main...origin/main [ahead ]\0 M a.py\0", {})
    assert report.ahead == 0 and report.problems == ["unreadable branch tracking 'ahead '"]
    assert [i.path for i in report.items] == ["a.py"]
    assert parse_tree_status("## main...origin/main [gone]\0", {}).problems == []
