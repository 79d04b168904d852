"""READ-ONLY state poll of an iris controller, run by the iris client's own Python.

Not imported by Airflow: IrisHook runs ``<iris_python> iris_poll.py URL PREFIX`` (the iris
client lives in its own environment, e.g. the otagent env; its pins clash with Airflow's).
Prints one JSON document on stdout; on a controller/transport error prints
``{"error": ...}`` and exits 2. Only ListJobs / ListTasks / FetchLogs are called (and GetJobStatus of a retried job: its
``--max-retries``). Logs: every line
since ``--since-ms`` (the sweep window's start), the newest ``--max-bytes`` of them; a job silent
since then gets its last ``--log-lines`` lines (its last output time and last metric).

``--request -`` (a JSON document on stdin: ``cursors`` {job id: cursor}, ``literals``, ``keep``,
``budget``, ``tail_bytes``, ``page``, ``deadline_s``): each RUNNING job's log, and the log of each
job that ended since ``--since-ms`` (its final read: last metrics, the traceback), is read on from
its cursor instead (``read_on``), streaming page by page: from its submission on first sight (the
runbook's ``--since-ms <submitted_at_ms> --no-tail``), only the entries stored since on later sweeps.

iris retries every RPC for up to 30 minutes by default (iris.rpc.errors.call_with_retry):
the retry budget is bounded here so a dead controller answers in seconds.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import sys
import time


def _ms(value):  # proto Timestamp (.epoch_ms field) or rigging Timestamp (.epoch_ms())
    if value is None:
        return None
    v = getattr(value, "epoch_ms", None)
    v = v() if callable(v) else v
    return int(v) if v else None


def iris_api(max_elapsed, max_attempts):
    """(IrisClient, JobName, job_pb2) of the iris client, every RPC's retries bounded (iris retries
    for 30 minutes by default); raises ImportError where the client does not import."""
    import iris.cluster.client.remote_client as remote_client
    from iris.client.client import IrisClient
    from iris.cluster.types import JobName
    from iris.rpc import job_pb2
    from iris.rpc.errors import call_with_retry

    remote_client.call_with_retry = functools.partial(
        call_with_retry, max_elapsed=max_elapsed, max_attempts=max_attempts
    )
    return IrisClient, JobName, job_pb2


def _newest(entries, max_bytes):
    """The newest lines of ``entries`` (oldest first) whose UTF-8 size fits ``max_bytes``."""
    out, size = [], 0
    for e in reversed(entries):
        n = len(e.data.encode("utf-8", "replace")) + 1
        if size + n > max_bytes:
            break
        out.append(e.data)
        size += n
    return out[::-1], size


ENDED = ("SUCCEEDED", "FAILED", "KILLED", "WORKER_FAILED", "UNSCHEDULABLE")  # terminal iris job states
LATE_MS = 600_000  # an entry stored up to this much later than its own time is still read
MAX_LINE = 16384  # a matched line is kept up to this many characters


def max_retries_of(client, job_id):
    """``{"max_retries": N}``: the launch's ``--max-retries`` (max_retries_failure of the request the
    controller keeps; one GetJobStatus, asked only of a retried job), or ``{"max_retries_error": why}``."""
    try:
        from iris.rpc import controller_pb2

        req = controller_pb2.Controller.GetJobStatusRequest(job_id=job_id)
        got = client._cluster_client._client.get_job_status(req)
        if not got.HasField("request"):
            return {"max_retries_error": "the controller returned no launch request"}
        return {"max_retries": int(got.request.max_retries_failure)}
    except Exception as exc:  # noqa: BLE001 - said on the row, the poll goes on
        return {"max_retries_error": f"{type(exc).__name__}: {exc}"[:200]}


def attempts_of(tasks):
    """``"0:1,1:0"``: each task's index and current attempt (a new attempt or task restarts the read)."""
    return ",".join(f"{str(t.task_id).rsplit('/', 1)[-1]}:{t.current_attempt_id}" for t in tasks)


def attempt_start_ms(tasks):
    """The earliest start of the tasks' current attempts (None when none started)."""
    starts = [_ms(a.started_at) for t in tasks for a in t.attempts if a.attempt_id == t.current_attempt_id]
    return min((s for s in starts if s), default=None)


class Lines:
    """What a cursor read keeps of the entries it streams: per literal the last ``keep`` lines
    holding it, and the last lines within ``tail_bytes``; never the whole log."""

    def __init__(self, literals, keep, tail_bytes):
        self.found = {lit: collections.deque(maxlen=keep) for lit in literals}
        self.last, self.size, self.tail_bytes = collections.deque(), 0, tail_bytes
        self.n = self.bytes = 0

    def add(self, data):
        b = len(data.encode("utf-8", "replace")) + 1
        self.n, self.bytes = self.n + 1, self.bytes + b
        for lit, q in self.found.items():
            if lit in data:
                q.append((self.n, data[:MAX_LINE]))
        self.last.append((self.n, data))
        self.size += b
        while self.size > self.tail_bytes and len(self.last) > 1:
            self.size -= len(self.last.popleft()[1].encode("utf-8", "replace")) + 1

    def text(self, whole=True):
        """The literal lines, then (``whole``) the last lines, in log order."""
        first = self.last[0][0] if whole and self.last else self.n + 1
        lines = sorted({i: d for q in self.found.values() for i, d in q if i < first}.items())
        return [d for _, d in lines] + ([d for _, d in self.last] if whole else [])


def read_on(fetch, job, tasks, cur, req, left):
    """Read one RUNNING job's log on from its cursor ``cur`` (None: first sight), page by page
    (FetchLogs ``since_ms`` is exclusive and its ``cursor`` is the store's entry id, exclusive:
    asking since the cursor's time minus LATE_MS after the cursor's id returns every entry stored
    since, an entry at the cursor's own millisecond included, none read twice). ``left``: bytes of
    the sweep's budget left (None: unbounded), checked between pages: past it, or past the
    request's ``stop_at`` (monotonic: the poll's own time bound), the read stops (history) and the
    newest entries are fetched too. Returns (lines, log cursor, newest ms)."""
    sub, attempt = _ms(job.submitted_at) or 0, attempts_of(tasks)
    why, since, seq, total, only, newest = "first", max(0, sub - 1), 0, 0, None, 0
    if cur:
        if cur.get("sub") != sub:
            why = "resubmitted"
        elif cur.get("attempt") == "cli":  # read by the iris CLI (whole seconds, no entry ids): from the start
            why = "source"
        elif cur.get("attempt") != attempt:
            why, only = "attempt", {t.current_attempt_id for t in tasks}
            since = max(since, (attempt_start_ms(tasks) or sub) - 1)
        else:
            why, seq, total, newest = "cont", int(cur["seq"]), int(cur.get("bytes") or 0), int(cur["ms"])
            since = max(since, newest - LATE_MS)
    keep = Lines(req.get("literals") or [], int(req.get("keep") or 50), int(req.get("tail_bytes") or 16384))
    page, cut, stop = int(req.get("page") or 2000), False, req.get("stop_at")
    while True:
        if (left is not None and keep.bytes >= left) or (stop is not None and time.monotonic() > stop):
            cut = True
            break
        resp = fetch(since_ms=since, cursor=seq, max_lines=page, tail=False)
        for e in resp.entries:
            if only is None or e.attempt_id in only:
                keep.add(e.data)
                newest = max(newest, _ms(e.timestamp) or 0)
        seq = max(seq, int(resp.cursor))
        if len(resp.entries) < page:
            break
    if why == "cont" and not keep.n:  # silent: unless the store's ids restarted below the cursor
        resp = fetch(since_ms=newest, cursor=0, max_lines=1, tail=True)
        if resp.entries and int(resp.cursor) <= seq:
            lines, c, last = read_on(fetch, job, tasks, None, req, left)
            return lines, {**c, "why": "reset"}, last
    c = {
        "ms": newest,
        "seq": seq,
        "sub": sub,
        "attempt": attempt,
        "bytes": total + keep.bytes,
        "why": why,
        "read": keep.bytes,
        "lines": keep.n,
    }
    if why == "attempt":
        c["was"] = cur.get("attempt", "")
    if not cut:
        return keep.text(), c, newest or None
    hist = keep.text(whole=False)  # history: its literal lines, then the newest entries
    tail = Lines([], 0, int(req.get("tail_bytes") or 16384))
    resp = fetch(since_ms=since, cursor=0, max_lines=int(req.get("tail_lines") or 200), tail=True)
    last = newest
    for e in resp.entries:
        if only is None or e.attempt_id in only:
            tail.add(e.data)
            last = max(last, _ms(e.timestamp) or 0)
    c.update(hist=len(hist), tail=tail.n, tail_bytes=tail.bytes, newest_ms=last)
    return hist + tail.text(), c, last or None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("prefix")
    ap.add_argument("--timeout-ms", type=int, default=5000)
    ap.add_argument("--max-elapsed", type=float, default=10.0)
    ap.add_argument("--max-attempts", type=int, default=3)
    ap.add_argument("--log-lines", type=int, default=200)
    ap.add_argument("--max-jobs", type=int, default=500)
    ap.add_argument("--since-ms", type=int, default=0)
    ap.add_argument("--max-bytes", type=int, default=262144)
    ap.add_argument("--max-since-lines", type=int, default=100000)
    ap.add_argument("--no-logs", action="store_true", help="states and times only (a past window)")
    ap.add_argument("--request", help="'-': read RUNNING logs on from the cursors of the JSON on stdin")
    args = ap.parse_args()
    req = json.load(sys.stdin) if args.request == "-" else None
    left = int(req.get("budget") or 0) or None if req else None
    if req and req.get("deadline_s"):  # reads stop in time for the answer to make it back
        req["stop_at"] = time.monotonic() + float(req["deadline_s"])
    try:
        IrisClient, JobName, job_pb2 = iris_api(args.max_elapsed, args.max_attempts)  # noqa: N806
        from iris.cluster.log_keys import build_log_source
        from rigging.timing import Timestamp
    except ImportError as exc:
        print(json.dumps({"error": f"iris client not importable: {exc}", "kind": "import"}))
        return 3
    js, ts = job_pb2.JobState.Name, job_pb2.TaskState.Name
    t0 = time.monotonic()
    try:
        client = IrisClient.remote(args.url, timeout_ms=args.timeout_ms)
        jobs = list(client.list_jobs(prefix=args.prefix))[: args.max_jobs]
        if req is not None:  # the budget goes to the logs already read up to their cursor first
            jobs.sort(key=lambda j: j.job_id not in req["cursors"])
        out = []
        for j in jobs:
            jid = JobName.from_wire(j.job_id)
            raw = sorted(client.list_tasks(jid), key=lambda t: str(t.task_id))
            tasks = [
                {
                    "task_id": str(t.task_id),
                    "state": ts(t.state),
                    "exit_code": t.exit_code,
                    "error": t.error,
                    "attempt": max(0, int(t.current_attempt_id)),
                }
                for t in raw
            ]
            row = {
                "job_id": j.job_id,
                "state": js(j.state),
                "error": j.error,
                "submitted_at_ms": _ms(j.submitted_at),
                "started_at_ms": _ms(j.started_at),
                "finished_at_ms": _ms(j.finished_at),
                "tasks": tasks,
                "failure_count": int(j.failure_count),
                "preemption_count": int(j.preemption_count),
            }
            if j.failure_count or any(t["attempt"] for t in tasks):  # a retried job: its --max-retries
                row.update(max_retries_of(client, j.job_id))
            state = js(j.state).removeprefix("JOB_STATE_")
            ended = state in ENDED and (_ms(j.finished_at) or 0) >= args.since_ms  # its final read
            if req is not None and (state == "RUNNING" or ended) and not args.no_logs:
                source, scope = build_log_source(jid, -1)
                fetch = functools.partial(client._cluster_client.fetch_logs, source, match_scope=scope)
                lines, cur, last = read_on(fetch, j, raw, req["cursors"].get(j.job_id), req, left)
                if left is not None:
                    left = max(0, left - cur["read"])
                row.update(
                    log_lines=lines,
                    log_since=True,
                    log_truncated=False,
                    log_bytes=cur["read"],
                    log_last_ms=last,
                    log_cursor=cur,
                )
                out.append(row)
                continue
            logs = []
            if args.since_ms and not args.no_logs:
                start = Timestamp.from_ms(args.since_ms)
                logs = client.fetch_task_logs(jid, start=start, max_lines=args.max_since_lines, tail=True)
            since = bool(logs)
            if (
                not logs and not args.no_logs
            ):  # silent since the window start: its last lines (last output, last metric)
                logs = client.fetch_task_logs(jid, max_lines=args.log_lines, tail=True)
            lines, size = _newest(logs, args.max_bytes)
            out.append(
                {
                    **row,
                    "log_lines": lines,
                    "log_since": since,
                    "log_truncated": len(lines) < len(logs),
                    "log_bytes": size,
                    "log_last_ms": max((_ms(e.timestamp) or 0 for e in logs), default=0) or None,
                }
            )
    except Exception as exc:  # ConnectError (UNAVAILABLE, DEADLINE_EXCEEDED, ...): retryable
        code = getattr(exc, "code", None)
        print(
            json.dumps(
                {
                    "error": f"{type(exc).__name__}{f' {code}' if code else ''}: {exc}"[:500],
                    "kind": "transport",
                    "seconds": round(time.monotonic() - t0, 2),
                }
            )
        )
        return 2
    print(json.dumps({"jobs": out, "now_ms": int(time.time() * 1000), "seconds": round(time.monotonic() - t0, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
