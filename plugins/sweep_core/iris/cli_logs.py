"""An iris job's log read on from the ledger's cursor through the iris CLI (the fallback when the
iris client does not import; pure: the page fetch is passed in). The runbook's full log,
``iris job logs JOB --since-ms <cursor or submitted_at_ms> --no-tail``, paged with ``--max-lines``
and streamed: each page's lines are kept as iris_poll.py ``read_on`` keeps them (per metric literal
the last ``keep`` lines, then the last ``tail_bytes``), the sweep's byte budget checked between pages.

The CLI prints ``[HH:MM:SS] task=<id> | <data>``: whole seconds, no date, no entry id, no attempt.
Its cursor is therefore the second of the last entry read (``ms``, whole seconds), the number of
entries of that second already read (``at``; the next read asks from that second and skips them)
and ``attempt`` ``"cli"`` (a cursor of the client path, or a CLI cursor read by the client, reads
again from the submission, said so). The date of each line is the first day on which its time is
not before the line before it (the log is in time order): a job silent for more than a day reads
its next line on the wrong day.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from sweep_core.iris.state import TERMINAL, IrisJob

CLI_ATTEMPT = "cli"  # the cursor's attempt when the CLI read it (the CLI shows no attempts)
LINE = re.compile(r"\[(\d\d):(\d\d):(\d\d)\] task=\S* \| ?")
DAY = 86400
MAX_LINE = 16384  # a literal's line is kept up to this many characters (as iris_poll.py)

Fetch = Callable[[int, int, bool], Iterable[str]]  # (since_ms, max_lines, tail) -> the CLI's stdout lines


def entries(lines: Iterable[str], floor_s: int) -> list[tuple[int, str]]:
    """(epoch second, text) of each entry of one ``iris job logs`` page; ``floor_s``: no entry is
    before it. A line without the prefix continues the entry before it (data holding a newline)."""
    out: list[tuple[int, str]] = []
    for raw in lines:
        line = raw.rstrip("\n")
        m = LINE.match(line)
        if m is None:
            if out:
                out[-1] = (out[-1][0], out[-1][1] + "\n" + line)
            continue
        of_day = int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3])
        t = floor_s - floor_s % DAY + of_day
        floor_s = t if t >= floor_s else t + DAY
        out.append((floor_s, line[m.end() :]))
    return out


class Kept:
    """What the read keeps of the entries it streams: per literal the last ``keep`` lines holding
    it, and the last lines within ``tail_bytes``; never the whole log."""

    def __init__(self, literals: Iterable[str], keep: int, tail_bytes: int) -> None:
        self.found: dict[str, deque[tuple[int, str]]] = {lit: deque(maxlen=keep) for lit in literals}
        self.last: deque[tuple[int, str]] = deque()
        self.size = self.n = self.bytes = 0
        self.tail_bytes = tail_bytes

    def add(self, data: str) -> None:
        b = len(data.encode("utf-8", "replace")) + 1
        self.n, self.bytes, self.size = self.n + 1, self.bytes + b, self.size + b
        for lit, q in self.found.items():
            if lit in data:
                q.append((self.n, data[:MAX_LINE]))
        self.last.append((self.n, data))
        while self.size > self.tail_bytes and len(self.last) > 1:
            self.size -= len(self.last.popleft()[1].encode("utf-8", "replace")) + 1

    def text(self, whole: bool = True) -> list[str]:
        """The literal lines older than the last lines, then (``whole``) the last lines, in log order."""
        first = self.last[0][0] if whole and self.last else self.n + 1
        older = sorted({i: d for q in self.found.values() for i, d in q if i < first}.items())
        return [d for _, d in older] + ([d for _, d in self.last] if whole else [])


def _start(sub: int, cur: dict[str, Any] | None) -> tuple[str, int, int, int]:
    """(why, first second, entries of it already read, bytes read before) of a read from ``cur``."""
    if not cur:
        return "first", sub // 1000, 0, 0
    if cur.get("sub") != sub:
        return "resubmitted", sub // 1000, 0, 0
    if cur.get("attempt") != CLI_ATTEMPT or not isinstance(cur.get("at"), int):
        return "source", sub // 1000, 0, 0
    return "cont", int(cur["ms"]) // 1000, int(cur["at"]), int(cur.get("bytes") or 0)


def read_cli(
    fetch: Fetch, sub: int, cur: dict[str, Any] | None, req: dict[str, Any], left: int | None
) -> tuple[list[str], dict[str, Any], int | None]:
    """Read one job's log on from its cursor ``cur`` (None: from its submission ``sub``, epoch ms),
    a page of ``req['page']`` new entries at a time; ``left``: bytes of the sweep's budget left
    (None: unbounded) and ``req['stop_at']`` (monotonic) end it between pages (history: its literal
    lines, then the newest ``tail_lines`` entries). A second holding more entries than ``max_page``
    (or than the server returns a page) is skipped past (``skipped`` in the cursor). Returns
    (lines, log cursor, newest ms)."""
    why, sec, skip, total = _start(sub, cur)
    keep = Kept(req.get("literals") or [], int(req.get("keep") or 50), int(req.get("tail_bytes") or 16384))
    page, cap, stop = int(req.get("page") or 2000), int(req.get("max_page") or 100_000), req.get("stop_at")
    since: int | None = None if why == "cont" else sub - 1  # the first page from the submission (exclusive)
    skipped, cut = 0, False
    while True:
        if (left is not None and keep.bytes >= left) or (stop is not None and time.monotonic() > stop):
            cut = True
            break
        if skip + page > cap:  # one second holds more entries than the CLI pages through: past it
            sec, skip, skipped = sec + 1, 0, skipped + 1
        got = entries(fetch(sec * 1000 - 1 if since is None else since, skip + page, False), sec)
        if skip and len(got) < skip:  # fewer than already read: the server caps its pages below this
            sec, skip, skipped, since = sec + 1, 0, skipped + 1, None
            continue
        fresh, full, since = got[skip:], len(got) >= skip + page, None
        for _, data in fresh:
            keep.add(data)
        if got:  # the cursor: the last entry's second, and how many of that second are read
            sec = got[-1][0]
            skip = sum(1 for t, _ in got if t == sec)
        if not (full and fresh):
            break
    c: dict[str, Any] = {
        "ms": sec * 1000,
        "seq": 0,
        "sub": sub,
        "attempt": CLI_ATTEMPT,
        "at": skip,
        "bytes": total + keep.bytes,
        "why": why,
        "read": keep.bytes,
        "lines": keep.n,
    }
    if skipped:
        c["skipped"] = skipped
    newest = sec * 1000 if (keep.n or why == "cont") else None
    if not cut:
        return keep.text(), c, newest
    hist = keep.text(whole=False)
    tail = Kept([], 0, int(req.get("tail_bytes") or 16384))
    got = entries(fetch(sec * 1000 - 1, int(req.get("tail_lines") or 200), True), sec)
    for _, data in got:
        tail.add(data)
    last = got[-1][0] * 1000 if got else sec * 1000
    c.update(hist=len(hist), tail=tail.n, tail_bytes=tail.bytes, newest_ms=last)
    return hist + tail.text(), c, last


def wants_log(job: IrisJob, since_ms: int) -> bool:
    """RUNNING, or ended at or after ``since_ms`` (the window's start: its final read)."""
    ended = job.state in TERMINAL and job.finished_at_ms is not None and job.finished_at_ms >= since_ms
    return job.state == "RUNNING" or ended


def read_jobs(jobs: Iterable[IrisJob], fetch_for: Callable[[str], Fetch], req: dict[str, Any], since_ms: int) -> None:
    """Read the log of every RUNNING job and every job ended since ``since_ms`` on from its cursor
    (``req``: iris_poll.py's request: ``cursors``, ``literals``, ``keep``, ``budget``,
    ``tail_bytes``; ``deadline_s``), the logs read up to a cursor first; each job's log fields set."""
    cursors, left = req.get("cursors") or {}, int(req.get("budget") or 0) or None
    req = {**req, "stop_at": time.monotonic() + float(req["deadline_s"])} if req.get("deadline_s") else req
    todo = [j for j in jobs if wants_log(j, since_ms) and j.submitted_at_ms]
    for job in sorted(todo, key=lambda j: j.job_id not in cursors):
        sub = int(job.submitted_at_ms or 0)
        lines, c, last = read_cli(fetch_for(job.job_id), sub, cursors.get(job.job_id), req, left)
        if left is not None:
            left = max(0, left - c["read"])
        job.log_tail = "\n".join(lines) + ("\n" if lines else "")
        job.log_mtime, job.log_cursor = (last / 1000 if last else None), c
