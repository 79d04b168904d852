"""The cleanup backlog: completed jobs handed to sweep_cleanup whose trees are not yet confirmed
removed (``<run_log_dir>/.sweep-state/cleanup_backlog.json``). An inode reclaim of a cluster plans
its backlog again; a job whose trees are gone (or were already) leaves it. Each change is made under
a lock (two cleanup runs may end at once); a backlog that cannot be read is BacklogUnreadable: never
read as empty, never overwritten.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sweep_core.durable import locked, write_atomic

log = logging.getLogger(__name__)


def backlog_path(run_log_dir: str | Path) -> Path:
    """Where the backlog of the sweep writing run logs to ``run_log_dir`` lives."""
    return Path(run_log_dir) / ".sweep-state" / "cleanup_backlog.json"


def job_key(d: dict[str, Any]) -> tuple[str, str]:
    """(cluster, job id) of a job entry: one backlog entry per job."""
    return (str(d.get("cluster")), str(d.get("job_id")))


class BacklogUnreadable(Exception):
    """The backlog exists but cannot be read or parsed: which jobs it holds is UNKNOWN."""


def load_backlog(path: Path) -> list[dict[str, str]]:
    """The backlog's entries ([] when none yet); BacklogUnreadable when it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise BacklogUnreadable(
            f"cleanup backlog {path} unreadable ({type(exc).__name__}: {str(exc)[:160]}): left as it is, not replanned"
        ) from exc
    if not isinstance(data, list):
        raise BacklogUnreadable(f"cleanup backlog {path} is a {type(data).__name__}, not a list: left as it is")
    return [d for d in data if isinstance(d, dict)]


def save_backlog(path: Path, items: list[dict[str, str]]) -> None:
    """Replace the backlog (written aside, fsynced, then renamed over it)."""
    write_atomic(path, json.dumps(items, indent=1, sort_keys=True).encode("utf-8"))


def update_backlog(path: Path, change: Callable[[list[dict[str, str]]], list[dict[str, str]]]) -> None:
    """Load, ``change``, save, under the backlog's lock; BacklogUnreadable leaves the file untouched."""
    with locked(path.with_name(f".{path.name}.lock")):
        save_backlog(path, change(load_backlog(path)))


def jobs_to_plan(requested: list[Any], backlog: list[dict[str, str]], reclaim: Iterable[str]) -> list[Any]:
    """The requested jobs, then the backlog of the ``reclaim`` clusters not requested already."""
    clusters = set(reclaim)
    asked = {job_key(j) for j in requested if isinstance(j, dict)}
    return list(requested) + [b for b in backlog if b.get("cluster") in clusters and job_key(b) not in asked]


def remember(backlog: list[dict[str, str]], requested: list[dict[str, str]]) -> list[dict[str, str]]:
    """The backlog with every requested job it does not hold yet."""
    known = {job_key(b) for b in backlog}
    return backlog + [j for j in requested if job_key(j) not in known]


def forget(backlog: list[dict[str, str]], finished: set[tuple[str, str]]) -> list[dict[str, str]]:
    """The backlog without the jobs whose trees are confirmed gone."""
    return [b for b in backlog if job_key(b) not in finished]
