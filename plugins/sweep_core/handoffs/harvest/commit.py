"""Commit what a hand-off wrote into the LOCAL tracker clone (the harvest's results and rows, the
HF chain's eval job ids). Never pushed: publishing the tracker stays a person's step.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def commit_tracker_files(repo: Path, files: list[Path], message: str) -> str:
    """Commit ``files`` in ``repo``; the short commit id, '' when not a git repo, or "commit failed: …"."""
    if not (repo / ".git").exists():
        return ""
    ident = subprocess.run(["git", "-C", str(repo), "config", "user.email"], capture_output=True, text=True)
    who = [] if ident.stdout.strip() else ["-c", "user.name=monitor-cron-sweep", "-c", "user.email=sweep@localhost"]
    rel = [str(f.relative_to(repo)) for f in files]
    subprocess.run(["git", "-C", str(repo), "add", "--", *rel], check=True, capture_output=True)
    done = subprocess.run(
        ["git", "-C", str(repo), *who, "commit", "-q", "-m", message, "--", *rel], capture_output=True, text=True
    )
    if done.returncode != 0:
        return f"commit failed: {done.stderr.strip()[:200] or done.stdout.strip()[:200]}"
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return head.stdout.strip()
