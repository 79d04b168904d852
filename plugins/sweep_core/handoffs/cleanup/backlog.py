"""The cleanup backlog: completed jobs handed to sweep_cleanup whose trees are not yet confirmed
removed (the document ``cleanup_backlog.json`` of the run-log directory's space in the state
database, sweep_core.state). An inode reclaim of a cluster plans its backlog again; a job whose trees
are gone (or were already) leaves it. Each entry keeps ``since`` (UTC, when it joined) and, once a
cleanup run judged it, ``reason`` (why its trees are still there) and ``judged`` (when): the
digest's "N cleanups blocked for > 24 h" line (sweep_core.alerts.backlog_line) reads them. Every
sweep judges the entries again and hands off those unblocked (sweep_core.handoffs.cleanup.rejudge). Each change is one transaction under the document's lock (two
cleanup runs may end at once, on two hosts); a backlog that cannot be read is BacklogUnreadable:
never read as empty, never overwritten.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sweep_core.state.documents import Documents, locked

log = logging.getLogger(__name__)
BACKLOG = "cleanup_backlog.json"
UNDECIDED = "undecided"  # an SFT completion whose cleanup is not decided yet (handoffs.cleanup.undecided)
HANDED = "handed"  # the sweep run that handed a blocked entry off again (cleanup.rejudge) until a cleanup run judges it


def job_key(d: dict[str, Any]) -> tuple[str, str]:
    """(cluster, job id) of a job entry: one backlog entry per job."""
    return (str(d.get("cluster")), str(d.get("job_id")))


class BacklogUnreadable(Exception):
    """The backlog exists but cannot be parsed: which jobs it holds is UNKNOWN."""


def _parse(docs: Documents) -> list[dict[str, str]]:
    text = docs.read(BACKLOG)
    if text is None:
        return []
    where = f"cleanup backlog {BACKLOG} (state of {docs.space})"
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BacklogUnreadable(
            f"{where} unreadable ({type(exc).__name__}: {str(exc)[:160]}): left as it is, not replanned"
        ) from exc
    if not isinstance(data, list):
        raise BacklogUnreadable(f"{where} is a {type(data).__name__}, not a list: left as it is")
    return [d for d in data if isinstance(d, dict)]


def load_backlog(run_log_dir: str | Path) -> list[dict[str, str]]:
    """The backlog's entries ([] when none yet); BacklogUnreadable when it cannot be parsed."""
    with locked(run_log_dir, BACKLOG) as docs:
        return _parse(docs)


def update_backlog(run_log_dir: str | Path, change: Callable[[list[dict[str, str]]], list[dict[str, str]]]) -> None:
    """Load, ``change``, save, in one transaction under the backlog's lock; BacklogUnreadable leaves it untouched."""
    with locked(run_log_dir, BACKLOG) as docs:
        docs.write(BACKLOG, json.dumps(change(_parse(docs)), indent=1, sort_keys=True))


def jobs_to_plan(requested: list[Any], backlog: list[dict[str, str]], reclaim: Iterable[str]) -> list[Any]:
    """The requested jobs, then the backlog of the ``reclaim`` clusters not requested already (never
    an ``undecided`` entry: which cleanup it gets is not known yet, handoffs.cleanup.undecided)."""
    clusters = set(reclaim)
    asked = {job_key(j) for j in requested if isinstance(j, dict)}
    return list(requested) + [
        b for b in backlog if b.get("cluster") in clusters and job_key(b) not in asked and not b.get(UNDECIDED)
    ]


def remember(backlog: list[dict[str, str]], requested: list[dict[str, str]], now: str = "") -> list[dict[str, str]]:
    """The backlog with every requested job it does not hold yet (``since`` = ``now``, UTC ISO)."""
    known = {job_key(b) for b in backlog}
    added = [{**j, "since": now} if now else j for j in requested if isinstance(j, dict) and job_key(j) not in known]
    return backlog + added


def judge(backlog: list[dict[str, str]], reasons: dict[tuple[str, str], str], now: str) -> list[dict[str, str]]:
    """The backlog with this run's reason for each job it planned and did not finish (``reasons``:
    (cluster, job id) -> why its trees are still there; a ``handed`` mark goes); an entry without ``since`` (kept before
    ages were) gets ``now``: its age counts from here."""
    out = []
    for b in backlog:
        b = {**b, "since": b.get("since") or now}
        if job_key(b) in reasons:
            b["reason"], b["judged"] = reasons[job_key(b)], now
            b.pop(HANDED, None)  # judged by a cleanup run: the sweeps judge it again
        out.append(b)
    return out


def forget(backlog: list[dict[str, str]], finished: set[tuple[str, str]]) -> list[dict[str, str]]:
    """The backlog without the jobs whose trees are confirmed gone."""
    return [b for b in backlog if job_key(b) not in finished]
