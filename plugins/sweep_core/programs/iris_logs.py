"""READ-ONLY: stream the WHOLE log of iris jobs since their submission, run by the iris client's
own Python (like iris_poll.py). The deep-dive reads it (runbook: ``iris job logs --since-ms
<submitted_at_ms> --no-tail``: finelog keeps the whole log; only a tail caps it).

Usage: ``<iris python> iris_logs.py URL JOB_IDS_JSON [--page N] [--max-lines N]``. Pages through
FetchLogs by its cursor, ``--page`` lines at a time, and prints each line as it arrives: memory is
one page, never the log. Output, one JSON object per line:
``{"job": id, "state", "submitted_at_ms"}`` first per job, then ``{"l": text, "t": epoch_ms}`` per log
line, then ``{"end": id, "lines": n, "cut": bool}`` (``cut``: ``--max-lines`` reached). A job the
controller does not list: ``{"end": id, "error": "not listed"}``. A controller error: ``{"error": ...}``
and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from iris_poll import _ms, iris_api  # its neighbour: run as a script, this directory is on sys.path


def _emit(doc: dict) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("jobs")
    ap.add_argument("--page", type=int, default=2000)
    ap.add_argument("--max-lines", type=int, default=5_000_000)
    args = ap.parse_args()
    try:
        IrisClient, JobName, job_pb2 = iris_api(10.0, 3)  # noqa: N806
        from iris.cluster.log_keys import build_log_source
    except ImportError as exc:
        _emit({"error": f"iris client not importable: {exc}", "kind": "import"})
        return 3
    try:
        client = IrisClient.remote(args.url, timeout_ms=10000)
        for jid in json.loads(args.jobs):
            listed = [j for j in client.list_jobs(prefix=jid) if j.job_id == jid]
            if not listed:
                _emit({"end": jid, "error": "not listed by the controller"})
                continue
            j = listed[0]
            since = _ms(j.submitted_at) or 0
            _emit({"job": jid, "state": job_pb2.JobState.Name(j.state), "submitted_at_ms": since})
            source, scope = build_log_source(JobName.from_wire(jid), -1)
            cursor, n, cut = 0, 0, False
            while True:
                resp = client._cluster_client.fetch_logs(
                    source, match_scope=scope, since_ms=since, cursor=cursor, max_lines=args.page, tail=False
                )
                for e in resp.entries:
                    _emit({"l": e.data, "t": _ms(e.timestamp)})
                n += len(resp.entries)
                sys.stdout.flush()
                if n >= args.max_lines:
                    cut = True
                    break
                if not resp.entries or resp.cursor == cursor:
                    break
                cursor = resp.cursor
            _emit({"end": jid, "lines": n, "cut": cut})
    except Exception as exc:  # ConnectError (UNAVAILABLE, DEADLINE_EXCEEDED, ...)
        code = getattr(exc, "code", None)
        _emit({"error": f"{type(exc).__name__}{f' {code}' if code else ''}: {exc}"[:500], "kind": "transport"})
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
