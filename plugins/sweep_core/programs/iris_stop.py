"""sweep_cancel's stop of APPROVED iris jobs, run by the iris client's own Python (like iris_poll.py).

Usage: ``<iris python> iris_stop.py URL JOBS_JSON CONFIRM_TIMEOUT_S``; JOBS_JSON is a list of
``{"job_id", "name", "state"}`` as the human approved them. Per job, right before its stop: the
controller must list it now in that state (iris RUNNING -> RUNNING, PENDING/BUILDING -> PENDING)
under that name, else it is refused (rc 2, nothing sent). A job flagged for its log's silence
carries ``quiet_since_ms``, the newest log line's time it was judged on: a line the controller's
log store holds after it means the job moved since, and it is left alone (rc 4, nothing sent). Then
``terminate`` (the ``iris job stop`` equivalent), and its state is polled (bounded) until it is
terminal. Prints one JSON document: ``{"results": {job_id: {"rc", "text", "state"}}}``; a controller
error: ``{"error"}`` and exit 2.
"""

from __future__ import annotations

import json
import sys
import time

from iris_poll import _ms, iris_api  # its neighbour: run as a script, this directory is on sys.path

SWEEP_STATE = {"RUNNING": "RUNNING", "PENDING": "PENDING", "BUILDING": "PENDING"}
TERMINAL = {"SUCCEEDED", "FAILED", "KILLED", "WORKER_FAILED", "UNSCHEDULABLE"}


def _written_since(client, JobName, jid: str, since_ms: object) -> str | None:  # noqa: ANN001, N803
    """Why the job moved (a log line after ``since_ms``), or None (silent since, or no time judged)."""
    if not isinstance(since_ms, int) or isinstance(since_ms, bool):
        return None
    from iris.cluster.log_keys import build_log_source

    source, scope = build_log_source(JobName.from_wire(jid), -1)
    resp = client._cluster_client.fetch_logs(
        source, match_scope=scope, since_ms=since_ms + 1, cursor=0, max_lines=50, tail=False
    )
    newer = [t for t in (_ms(e.timestamp) for e in resp.entries) if t and t > since_ms]
    if not newer:
        return None
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(min(newer) / 1000))
    was = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since_ms / 1000))
    return f"moved since the flag: its log was written at {at}, after the last line it was judged on ({was})"


def main() -> int:
    url, jobs_json, confirm_timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
    try:
        IrisClient, JobName, job_pb2 = iris_api(10.0, 3)  # noqa: N806
    except ImportError as exc:
        print(json.dumps({"error": f"iris client not importable: {exc}"}))
        return 3
    name_of = job_pb2.JobState.Name
    results, sent = {}, []
    try:
        client = IrisClient.remote(url, timeout_ms=5000)
        for job in json.loads(jobs_json):
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
            if (moved := _written_since(client, JobName, jid, job.get("quiet_since_ms"))) is not None:
                results[jid] = {"rc": 4, "text": moved, "state": now}
                continue
            client.terminate(JobName.from_wire(jid))
            results[jid] = {"rc": 0, "text": "terminate sent", "state": now}
            sent.append(jid)
        end = time.monotonic() + confirm_timeout
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
