"""The DAG-run note goes through the Connection ``sweep_airflow_api`` and only through it: its user
logs in at the API's /auth/token and PATCHes the run's note with that token; a refusal (a user
without the right) or no Connection is a log line, never a failed task; a token with an admin role
is used with a warning that says to give the Connection a USER-role user (issue 26)."""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

from sweep_operators.run_note import API_CONN_ID, paused_dags, set_dag_run_note, token_role


def _jwt(claims: dict[str, Any]) -> str:
    def part(d: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS512', 'typ': 'JWT'})}.{part(claims)}.c2ln"


class FakeApi:
    """A local HTTP server with the two routes the note uses, and the users it knows."""

    def __init__(
        self,
        users: dict[str, tuple[str, str]],
        may_edit: set[str],
        paused: frozenset[str] = frozenset({"sweep_cleanup"}),
    ) -> None:
        self.users, self.may_edit = users, may_edit  # login -> (password, role); roles that may PATCH
        self.paused = paused  # the DAGs the API says are paused
        self.seen: list[tuple[str, str, str | None, Any]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def _body(self) -> Any:
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n)) if n else None

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _role(self) -> str | None:
                auth = self.headers.get("Authorization", "")
                return token_role(auth.removeprefix("Bearer ")) if auth.startswith("Bearer ") else None

            def do_POST(self) -> None:  # noqa: N802
                body = self._body()
                api.seen.append(("POST", self.path, None, body))
                user = api.users.get(body.get("username"))
                if not user or user[0] != body.get("password"):
                    return self._send(401, {"detail": "Invalid credentials"})
                self._send(201, {"access_token": _jwt({"sub": body["username"], "role": user[1]})})

            def do_PATCH(self) -> None:  # noqa: N802
                role = self._role()
                api.seen.append(("PATCH", self.path, role, self._body()))
                if role not in api.may_edit:
                    return self._send(403, {"detail": "Forbidden"})
                self._send(200, {"note": "ok"})

            def do_GET(self) -> None:  # noqa: N802
                api.seen.append(("GET", self.path, self._role(), None))
                self._send(200, {"is_paused": self.path.rsplit("/", 1)[-1] in api.paused})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeApi:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


USERS = {"sweep_api": ("low-pw", "USER"), "admin": ("admin-pw", "ADMIN"), "viewer": ("v-pw", "VIEWER")}


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi(USERS, may_edit={"USER", "OP", "ADMIN"}) as fake:
        yield fake


def _connect(monkeypatch: pytest.MonkeyPatch, url: str, login: str) -> None:
    conn = {"conn_type": "http", "host": url, "login": login, "password": USERS[login][0]}
    monkeypatch.setenv(f"AIRFLOW_CONN_{API_CONN_ID.upper()}", json.dumps(conn))


CONTEXT = {"dag_run": SimpleNamespace(dag_id="monitor_cron_sweep"), "run_id": "manual__2026-01-01T00:00:00+00:00"}


def test_the_note_is_patched_with_the_connections_own_user(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _connect(monkeypatch, api.url, "sweep_api")
    with caplog.at_level(logging.INFO, logger="sweep_operators.run_note"):
        assert set_dag_run_note(CONTEXT, "Clusters: local OK") is True
    login, patch = api.seen
    assert login[:2] == ("POST", "/auth/token") and login[3] == {"username": "sweep_api", "password": "low-pw"}
    assert patch[0] == "PATCH" and patch[2] == "USER"  # the token of that user, not another
    assert (
        patch[1] == "/api/v2/dags/monitor_cron_sweep/dagRuns/manual__2026-01-01T00%3A00%3A00%2B00%3A00?update_mask=note"
    )
    assert patch[3] == {"note": "Clusters: local OK"}
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_user_without_the_right_is_a_log_line_not_a_failed_task(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _connect(monkeypatch, api.url, "viewer")
    with caplog.at_level(logging.INFO, logger="sweep_operators.run_note"):
        assert set_dag_run_note(CONTEXT, "x") is False
    assert api.seen[-1][:3] == ("PATCH", api.seen[-1][1], "VIEWER")
    assert any("403" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_an_admin_connection_is_used_with_a_warning_that_says_what_to_do(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _connect(monkeypatch, api.url, "admin")
    with caplog.at_level(logging.INFO, logger="sweep_operators.run_note"):
        assert set_dag_run_note(CONTEXT, "x") is True
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "role ADMIN" in warned[0] and "USER" in warned[0]


def test_no_connection_no_call(api: FakeApi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(f"AIRFLOW_CONN_{API_CONN_ID.upper()}", raising=False)
    assert set_dag_run_note(CONTEXT, "x") is False
    assert paused_dags(["sweep_cleanup"]) is None  # cannot tell, not "none paused"
    assert api.seen == []


def test_paused_hand_offs_are_read_with_the_same_connection(api: FakeApi, monkeypatch: pytest.MonkeyPatch) -> None:
    _connect(monkeypatch, api.url, "sweep_api")
    assert paused_dags(["sweep_cleanup", "sweep_cancel"]) == ["sweep_cleanup"]
    assert [(m, p, r) for m, p, r, _ in api.seen[1:]] == [
        ("GET", "/api/v2/dags/sweep_cleanup", "USER"),
        ("GET", "/api/v2/dags/sweep_cancel", "USER"),
    ]


def test_token_role_reads_the_claim_and_tolerates_other_tokens() -> None:
    assert token_role(_jwt({"role": "admin"})) == "ADMIN"
    assert token_role(_jwt({"sub": "1"})) is None  # FAB's tokens carry no role
    assert token_role("not-a-jwt") is None


@pytest.mark.parametrize("watch_paused", [True, False])
def test_the_report_sweep_says_when_its_watch_is_paused(
    watch_paused: bool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path
) -> None:
    """issue 38: someone unpauses monitor_cron_sweep only; its run says, in its log and its run log,
    that monitor_cron_watch (liveness every 5 minutes) is paused and how to unpause it."""
    from pathlib import Path

    from sweep_core.config.sweep import load_sweep_config
    from sweep_operators.sweep_tasks import _tell_watch_paused

    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", str(tmp_path))
    run_log = tmp_path / "2026-12-06_cron-sweep.md"
    run_log.write_text("# Sweep\n")
    config = load_sweep_config(Path(__file__).resolve().parents[2] / "include" / "sweep.yaml")
    with FakeApi(USERS, may_edit={"USER"}, paused=frozenset({"monitor_cron_watch"} if watch_paused else ())) as fake:
        _connect(monkeypatch, fake.url, "sweep_api")
        with caplog.at_level(logging.WARNING, logger="sweep_operators.sweep_tasks"):
            _tell_watch_paused(config, str(run_log), "scheduled__2026-12-06T03:00:00+00:00")
    said = [r.getMessage() for r in caplog.records if "monitor_cron_watch is PAUSED" in r.getMessage()]
    text = run_log.read_text()
    if watch_paused:
        assert len(said) == 1 and "airflow dags unpause monitor_cron_watch" in said[0]
        assert "## The watch is paused" in text and "every '*/5 * * * *'" in text
    else:
        assert said == [] and text == "# Sweep\n"
