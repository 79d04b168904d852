"""Answer an Airflow human-in-the-loop request while ``dag.test()`` waits for it, the way production does.

``dag.test()`` parks an ApprovalOperator task in AWAITING_INPUT and polls the metadata DB once a
second until something outside flips it back to SCHEDULED; it never answers, and never times
out (the timeout sweep is the scheduler's). So a thread here, sharing the metadata DB:

- Approve / Reject: the REAL Core API route, ``PATCH /api/v2/dags/{dag}/dagRuns/{run}/
  taskInstances/{task}/-1/hitlDetails``, through the FastAPI app in-process (TestClient) with a
  JWT of a named admin user of the SimpleAuthManager: auth, write-side validation, the HITLDetail
  response and the resume of the TI (handle_event_submit) all run as on an api-server;
- timeout: waits until the TI's response deadline (``trigger_timeout``) has passed, then runs the
  scheduler's own ``SchedulerJobRunner.check_awaiting_input_timeouts`` (defaults or a failure).

If nothing is answered by ``wait_s`` the thread rejects, so a broken test cannot hang dag.test().
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

APPROVE, REJECT, TIMEOUT = "Approve", "Reject", "timeout"
CANCEL, RELAUNCH = "Cancel", "Cancel and relaunch"  # sweep_cancel's options besides Reject
RELAUNCH_WITH = "Cancel and relaunch with …"  # its form field: params_input {"overrides": "k=v ..."}


def wait_exit_seen(
    scheduler_log: Path, run_id: str, task_id: str, map_indexes: Iterable[int] = (-1,), timeout: float = 120
) -> None:
    """Until the scheduler (its log: "Received executor event ... for task instance TaskInstanceKey(...)")
    has read the exit of each parked ``task_id`` process of ``run_id``. On a real scheduler a HITL task
    parks in AWAITING_INPUT before its process has exited; an answer that resumes it before the
    scheduler has seen that exit has the late event fail the resumed try (Airflow 3.3: the "state
    mismatch" of a QUEUED task; seen on a loaded machine 3 s after the park), so a test answers after this."""
    indexes = list(map_indexes)
    keys = [(f"task_id='{task_id}', run_id='{run_id}',", f"map_index={m})") for m in indexes]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        lines = [x for x in scheduler_log.read_text(errors="replace").splitlines() if "Received executor event" in x]
        if all(any(k in x and m in x for x in lines) for k, m in keys):
            return
        time.sleep(0.5)
    raise AssertionError(f"the scheduler saw no exit of {task_id} {indexes} of {run_id} in {timeout:.0f} s")


def _client_and_headers(user: str) -> tuple[Any, dict[str, str]]:
    """The Core API app in-process and a JWT for ``user`` (an admin of the SimpleAuthManager).

    The auth manager's generated-passwords file goes to a temp dir, not into AIRFLOW_HOME."""
    import os
    import tempfile

    from airflow.api_fastapi.app import create_app, get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from fastapi.testclient import TestClient

    key = "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"
    os.environ.setdefault(key, os.path.join(tempfile.mkdtemp(prefix="hitl-"), "passwords.json"))
    app = create_app(apps="core")
    token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username=user, role="admin"))
    return TestClient(app), {"Authorization": f"Bearer {token}"}


class HITLResponder:
    """``with HITLResponder("sweep_cancel", "approve", CANCEL) as r: dag.test(...)``; then r.detail."""

    def __init__(
        self,
        dag_id: str,
        task_id: str,
        answer: str | Callable[[dict[str, Any]], str],
        *,
        user: str = "ops-tester",
        wait_s: float = 240,
        before_answer: Callable[[], None] | None = None,
    ):
        assert callable(answer) or answer in (
            APPROVE,
            REJECT,
            TIMEOUT,
            CANCEL,
            RELAUNCH,
        )  # a callable may give (option, params_input)
        self.before_answer = before_answer  # runs while the request waits: the world changes meanwhile
        self.dag_id, self.task_id, self.answer, self.user, self.wait_s = dag_id, task_id, answer, user, wait_s
        self.detail: dict[
            str, Any
        ] = {}  # what the human saw of the first job: subject, body, options, defaults, deadline
        self.details: dict[int, dict[str, Any]] = {}  # per map index (a mapped approval: one task per job)
        self.status: int | None = None  # HTTP status of the PATCH
        self.errors: list[str] = []
        self._old: set[str] = set()
        self._thread = threading.Thread(target=self._run, name="hitl-responder", daemon=True)
        # Set when the ``with`` block ends: a responder whose run never asked stops looking, so it
        # cannot answer the NEXT test's prompt (a leftover thread did: that answer came first, and
        # the right responder's was refused as a second write).
        self._stop = threading.Event()

    def __enter__(self) -> HITLResponder:
        self._old = {run_id for run_id, _, _ in self._parked()}
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _parked(self) -> list[tuple[str, int, Any]]:
        from airflow.models.taskinstance import TaskInstance as TI
        from airflow.utils.session import create_session
        from airflow.utils.state import TaskInstanceState
        from sqlalchemy import select
        from sqlalchemy.orm import joinedload

        with create_session() as s:
            tis = s.scalars(
                select(TI)
                .where(
                    TI.dag_id == self.dag_id,
                    TI.task_id == self.task_id,
                    TI.state == TaskInstanceState.AWAITING_INPUT,
                )
                .options(joinedload(TI.hitl_detail))
            ).all()
            out = []
            for ti in tis:
                h = ti.hitl_detail
                seen = {
                    "subject": h.subject if h else None,
                    "body": h.body if h else None,
                    "options": h.options if h else None,
                    "defaults": h.defaults if h else None,
                    "deadline": ti.trigger_timeout,
                    "answered": bool(h and h.response_received),
                }
                out.append((ti.run_id, ti.map_index, seen))
            return out

    def _run(self) -> None:
        end = time.monotonic() + self.wait_s
        run_id = None
        try:
            while run_id is None and time.monotonic() < end and not self._stop.is_set():
                new = [(r, m, d) for r, m, d in self._parked() if r not in self._old]
                if new:
                    run_id, _, self.detail = new[0]
                else:
                    time.sleep(0.5)
            if run_id is None:
                if not self._stop.is_set():
                    self.errors.append(f"no {self.task_id} task parked in AWAITING_INPUT within {self.wait_s}s")
                return
            time.sleep(2)  # a mapped approval: every job's task parks (and an answer within ~1 s fails it)
            parked = sorted(((m, d) for r, m, d in self._parked() if r == run_id), key=lambda p: p[0])
            self.details = dict(parked)
            if parked:  # the first job's prompt (map index 0), whichever task the DB listed first
                self.detail = parked[0][1]
            if self.before_answer:
                self.before_answer()
            if self.answer == TIMEOUT:
                self._time_out(run_id, end)
            else:
                for m, d in parked:  # ``answer`` may pick per job: a function of what that task shows
                    got = self.answer(d) if callable(self.answer) else self.answer
                    option, params = got if isinstance(got, tuple) else (got, {})  # the form's fields too
                    self._patch(run_id, option, m, params=params)
        except Exception as exc:  # reported by the test, never left hanging
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            try:
                # An answered task leaves AWAITING_INPUT when dag.test() next polls (once a second):
                # only a task still unanswered then is rejected (a second answer is refused).
                settle = time.monotonic() + 15
                left = []
                while run_id is not None:
                    mine = [(m, d) for r, m, d in self._parked() if r == run_id]
                    left = [m for m, d in mine if not d["answered"]]
                    if left or not mine or time.monotonic() > settle:
                        break
                    time.sleep(0.5)
                if left:
                    self.errors.append("still AWAITING_INPUT after answering: rejecting to end dag.test()")
                    for m in left:
                        self._patch(run_id, REJECT, m)
            except Exception as exc:
                self.errors.append(f"could not reject to end dag.test(): {type(exc).__name__}: {exc}")

    def _patch(
        self, run_id: str, option: str, map_index: int = -1, as_user: str = "", params: dict[str, Any] | None = None
    ) -> None:
        client, headers = _client_and_headers(as_user or self.user)
        url = f"/api/v2/dags/{self.dag_id}/dagRuns/{run_id}/taskInstances/{self.task_id}/{map_index}/hitlDetails"
        res = client.patch(url, json={"chosen_options": [option], "params_input": params or {}}, headers=headers)
        self.status = res.status_code
        if res.status_code != 200:
            self.errors.append(f"PATCH {url}: {res.status_code} {res.text[:300]}")

    def _time_out(self, run_id: str, end: float) -> None:
        from airflow.jobs.job import Job
        from airflow.jobs.scheduler_job_runner import SchedulerJobRunner

        deadline = self.detail["deadline"]
        if deadline is None:
            self.errors.append("no response deadline (trigger_timeout) was set: it would wait forever")
            return
        while dt.datetime.now(dt.UTC) <= deadline and time.monotonic() < end:
            time.sleep(0.5)
        runner = SchedulerJobRunner(job=Job())
        while time.monotonic() < end and any(r == run_id for r, _, _ in self._parked()):
            runner.check_awaiting_input_timeouts()
            time.sleep(0.5)
