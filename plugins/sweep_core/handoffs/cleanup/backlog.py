"""The cleanup backlog: completed jobs handed to sweep_cleanup whose trees are not yet confirmed
removed (``<run_log_dir>/.sweep-state/cleanup_backlog.json``). An inode reclaim of a cluster plans
its backlog again; a job whose trees are gone (or were already) leaves it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def backlog_path(run_log_dir: str | Path) -> Path:
    """Where the backlog of the sweep writing run logs to ``run_log_dir`` lives."""
    return Path(run_log_dir) / ".sweep-state" / "cleanup_backlog.json"


def job_key(d: dict[str, Any]) -> tuple[str, str]:
    """(cluster, job id) of a job entry: one backlog entry per job."""
    return (str(d.get("cluster")), str(d.get("job_id")))


def load_backlog(path: Path) -> list[dict[str, str]]:
    """The backlog's entries; an unreadable file is warned about and read as empty."""
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("cleanup backlog %s unreadable (%s): starting a new one", path, exc)
        return []
    return [d for d in data if isinstance(d, dict)]


def save_backlog(path: Path, items: list[dict[str, str]]) -> None:
    """Replace the backlog (written aside, then renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(items, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(path)


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
