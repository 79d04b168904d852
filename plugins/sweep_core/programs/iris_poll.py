"""READ-ONLY state poll of an iris controller, run by the iris client's own Python.

Not imported by Airflow: IrisHook runs ``<iris_python> iris_poll.py URL PREFIX`` (the iris
client lives in its own environment, e.g. the otagent env; its pins clash with Airflow's).
Prints one JSON document on stdout; on a controller/transport error prints
``{"error": ...}`` and exits 2. Only ListJobs / ListTasks / FetchLogs are called. Logs: every line
since ``--since-ms`` (the sweep window's start), the newest ``--max-bytes`` of them; a job silent
since then gets its last ``--log-lines`` lines (its last output time and last metric).

iris retries every RPC for up to 30 minutes by default (iris.rpc.errors.call_with_retry):
the retry budget is bounded here so a dead controller answers in seconds.
"""

from __future__ import annotations

import argparse
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
    args = ap.parse_args()
    try:
        IrisClient, JobName, job_pb2 = iris_api(args.max_elapsed, args.max_attempts)  # noqa: N806
        from rigging.timing import Timestamp
    except ImportError as exc:
        print(json.dumps({"error": f"iris client not importable: {exc}", "kind": "import"}))
        return 3
    js, ts = job_pb2.JobState.Name, job_pb2.TaskState.Name
    t0 = time.monotonic()
    try:
        client = IrisClient.remote(args.url, timeout_ms=args.timeout_ms)
        jobs = list(client.list_jobs(prefix=args.prefix))[: args.max_jobs]
        out = []
        for j in jobs:
            jid = JobName.from_wire(j.job_id)
            tasks = [
                {"task_id": str(t.task_id), "state": ts(t.state), "exit_code": t.exit_code, "error": t.error}
                for t in client.list_tasks(jid)
            ]
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
                    "job_id": j.job_id,
                    "state": js(j.state),
                    "error": j.error,
                    "submitted_at_ms": _ms(j.submitted_at),
                    "started_at_ms": _ms(j.started_at),
                    "finished_at_ms": _ms(j.finished_at),
                    "tasks": tasks,
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
