"""iris job records as the poll client and the CLI print them (pure): each read into an IrisJob (a
malformed record raises only IrisStateError, naming what is wrong), and the poll client's answer
read whole (IrisPollError says why it is not an answer)."""

from __future__ import annotations

import json
from typing import Any

from sweep_core.iris.state import IrisJob, IrisStateError, IrisTask, iris_state_name


class IrisPollError(Exception):
    """The poll client did not answer with jobs: why."""


def _int(v: Any) -> int | None:
    try:
        return int(v) if v not in (None, "", 0, "0") else None
    except (TypeError, ValueError):
        return None


def _count(v: Any) -> int | None:
    """A count the record carries (0 included); None when it does not carry it."""
    if v is None or v == "" or isinstance(v, bool):
        return None
    return int(v)


def _record(fn: Any) -> Any:
    """Wrap a record reader: a malformed record raises only IrisStateError, naming what is wrong."""

    def read(*args: Any) -> IrisJob:
        try:
            return fn(*args)
        except IrisStateError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise IrisStateError(f"malformed iris job record: {type(exc).__name__}: {str(exc)[:120]}") from exc

    read.__doc__, read.__name__ = fn.__doc__, fn.__name__
    return read


@_record
def job_from_poll(d: dict[str, Any]) -> IrisJob:
    """One job of iris_poll.py's JSON; a malformed record raises IrisStateError."""
    lines = d.get("log_lines") or []
    last = _int(d.get("log_last_ms"))
    return IrisJob(
        job_id=d["job_id"],
        state=iris_state_name(d["state"]),
        error=d.get("error") or "",
        submitted_at_ms=_int(d.get("submitted_at_ms")),
        started_at_ms=_int(d.get("started_at_ms")),
        finished_at_ms=_int(d.get("finished_at_ms")),
        tasks=[
            IrisTask(
                t.get("task_id", ""),
                t.get("state", ""),
                t.get("exit_code"),
                t.get("error") or "",
                int(t.get("attempt") or 0),
            )
            for t in d.get("tasks") or []
        ],
        failure_count=_count(d.get("failure_count")),
        preemption_count=_count(d.get("preemption_count")),
        max_retries=_count(d.get("max_retries")),
        max_retries_error=str(d.get("max_retries_error") or ""),
        log_tail="\n".join(lines) + ("\n" if lines else ""),
        log_mtime=last / 1000 if last else None,
        log_truncated=bool(d.get("log_truncated")),
        log_cursor=_log_cursor(d.get("log_cursor")),
    )


_CURSOR_INTS = ("ms", "seq", "sub", "bytes", "read", "lines", "hist", "tail", "tail_bytes", "newest_ms")
CURSOR_WHY = ("first", "cont", "attempt", "resubmitted", "reset", "source")


def _log_cursor(c: Any) -> dict[str, Any]:
    """iris_poll.py's ``log_cursor`` of a read on from the ledger's cursor: its integers, the
    attempts (``attempt``, ``was``) and why the read began where it did; {} when absent. A cursor
    not in that shape raises (a read with no cursor would be read again from the start)."""
    if c is None:
        return {}
    if not isinstance(c, dict) or c.get("why") not in CURSOR_WHY:
        raise ValueError(f"log_cursor {str(c)[:80]!r} is not a cursor record")
    out: dict[str, Any] = {"why": c["why"], "attempt": str(c.get("attempt") or "")}
    for k in _CURSOR_INTS:
        v = c.get(k)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"log_cursor {k} = {v!r} is not a non-negative integer")
            out[k] = v
    if "was" in c:
        out["was"] = str(c["was"])
    return out


@_record
def job_from_cli(listed: dict[str, Any], summary: dict[str, Any] | None) -> IrisJob:
    """``job list --json`` row (+ ``job summary --json``): states JOB_STATE_X / lowercase, epoch_ms strings.

    A malformed record raises IrisStateError."""

    def ms(key: str) -> int | None:
        v = listed.get(key)
        return _int(v.get("epoch_ms") if isinstance(v, dict) else v)

    tasks = [
        IrisTask(t.get("task_id", ""), str(t.get("state", "")), t.get("exit_code"), t.get("error") or "")
        for t in (summary or {}).get("tasks") or []
    ]
    return IrisJob(
        job_id=listed["job_id"],
        state=iris_state_name(listed["state"]),
        error=listed.get("error") or "",
        submitted_at_ms=ms("submitted_at"),
        started_at_ms=ms("started_at"),
        finished_at_ms=ms("finished_at"),
        tasks=tasks,
        failure_count=_count((summary or {}).get("failure_count")),
        preemption_count=_count((summary or {}).get("preemption_count")),
        max_retries_error="the CLI's job summary does not carry the launch's --max-retries",
    )


def read_poll(returncode: int, stdout: str, stderr: str) -> tuple[list[IrisJob], float | None]:
    """(jobs, controller-side now in epoch seconds) of iris_poll.py's answer (its last line, JSON)."""
    try:
        doc = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else {}
    except json.JSONDecodeError:
        doc = {}
    if returncode != 0 or "jobs" not in doc:
        why = doc.get("error") or (stderr.strip().splitlines() or [f"exit {returncode}"])[-1]
        raise IrisPollError(f"iris poll failed: {why}")
    try:
        return [job_from_poll(d) for d in doc["jobs"]], (doc.get("now_ms") or 0) / 1000 or None
    except (IrisStateError, TypeError) as exc:  # one unreadable record: the running set is UNKNOWN
        raise IrisPollError(f"iris poll: {exc}") from exc
