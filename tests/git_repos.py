"""Real git repos for the hygiene tests: a bare origin, the LOCAL clone, a "cluster" clone."""

from __future__ import annotations

import subprocess
from pathlib import Path

WHO = ["-c", "user.name=t", "-c", "user.email=t@x"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *WHO, *args], check=True, capture_output=True, text=True).stdout


def origin_clones(tmp: Path) -> tuple[Path, Path, Path]:
    """A bare origin (main: scripts/run.sh, train.py), the LOCAL clone that pushed it and a "cluster"
    clone (its path holds a space and a quote)."""
    origin, local, cluster = tmp / "origin.git", tmp / "local", tmp / "clu ster's"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    subprocess.run(["git", "clone", "-q", str(origin), str(local)], check=True, capture_output=True)
    (local / "scripts").mkdir()
    (local / "scripts" / "run.sh").write_text("echo run\n")
    (local / "train.py").write_text("print('v1')\n")
    git(local, "add", ".")
    git(local, "commit", "-qm", "init")
    git(local, "push", "-q", "origin", "HEAD:main")
    subprocess.run(["git", "clone", "-q", str(origin), str(cluster)], check=True, capture_output=True)
    return origin, local, cluster
