"""sweep_cancel's stop of APPROVED iris jobs, run by the iris client's own Python (like iris_poll.py).

Usage: ``<iris python> iris_stop.py URL JOBS_JSON --confirm-timeout S``; JOBS_JSON is a list of
``{"job_id", "name", "state"}`` as the human approved them. Per job, right before its stop: the
controller must list it now in that state (iris RUNNING -> RUNNING, PENDING/BUILDING -> PENDING)
under that name, else it is refused (rc 2, nothing sent). Then ``terminate`` (the ``iris job stop``
equivalent), and its state is polled (bounded) until it is terminal. Prints one JSON document:
``{"results": {job_id: {"rc", "text", "state"}}}``; a controller error: ``{"error"}`` and exit 2.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time

SWEEP_STATE = {"RUNNING": "RUNNING", "PENDING": "PENDING", "BUILDING": "PENDING"}
TERMINAL = {"SUCCEEDED", "FAILED", "KILLED", "WORKER_FAILED", "UNSCHEDULABLE"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("jobs")
    ap.add_argument("--confirm-timeout", type=float, default=60.0)
    ap.add_argument("--timeout-ms", type=int, default=5000)
    args = ap.parse_args()
    try:
        import iris.cluster.client.remote_client as remote_client
        from iris.client.client import IrisClient
        from iris.cluster.types import JobName
        from iris.rpc import job_pb2
        from iris.rpc.errors import call_with_retry
    except ImportError as exc:
        print(json.dumps({"error": f"iris client not importable: {exc}"}))
        return 3
    remote_client.call_with_retry = functools.partial(call_with_retry, max_elapsed=10.0, max_attempts=3)
    name_of = job_pb2.JobState.Name
    results, sent = {}, []
    try:
        client = IrisClient.remote(args.url, timeout_ms=args.timeout_ms)
        for job in json.loads(args.jobs):
            jid = job["job_id"]
            listed = [j for j in client.list_jobs(prefix=jid) if j.job_id == jid]
            now = name_of(listed[0].state).removeprefix("JOB_STATE_") if listed else ""
            name = jid.rstrip("/").rsplit("/", 1)[-1]
            if not listed or SWEEP_STATE.get(now) != job["state"] or name != job["name"]:
                seen = f"{jid}|{now}|{name}" if listed else "not listed"
                results[jid] = {
                    "rc": 2,
                    "text": f"controller shows [{seen}], approved [{jid}|{job['state']}|{job['name']}]",
                }
                continue
            client.terminate(JobName.from_wire(jid))
            results[jid] = {"rc": 0, "text": "terminate sent", "state": now}
            sent.append(jid)
        end = time.monotonic() + args.confirm_timeout
        while sent:
            for jid in list(sent):
                state = name_of(client.job_state(JobName.from_wire(jid))).removeprefix("JOB_STATE_")
                results[jid]["state"] = state
                if state in TERMINAL:
                    sent.remove(jid)
            if not sent or time.monotonic() >= end:
                break
            time.sleep(1)
    except Exception as exc:  # ConnectError and kin: what was sent so far is in results
        code = getattr(exc, "code", None)
        print(
            json.dumps({"error": f"{type(exc).__name__}{f' {code}' if code else ''}: {exc}"[:500], "results": results})
        )
        return 2
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
