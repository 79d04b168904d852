"""Real receivers on 127.0.0.1 for the notify tests: an SMTP server (aiosmtpd) that keeps every
mail, and a STUB of Slack's Incoming Webhook endpoint (a local HTTP server that answers ``ok`` to
each POST and keeps its JSON payload; it is not Slack, it only stands where Slack's URL would be)."""

from __future__ import annotations

import email
import email.policy
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Mailbox:
    def __init__(self) -> None:
        self.mails: list[email.message.EmailMessage] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd hook)
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        msg["X-Envelope-To"] = ", ".join(envelope.rcpt_tos)
        self.mails.append(msg)
        return "250 Message accepted for delivery"


def smtp_connection(port: int, from_email: str = "sweep@x.org") -> str:
    """An AIRFLOW_CONN_… value for the SMTP provider to the local server on ``port`` (plain SMTP)."""
    extra = {"from_email": from_email, "disable_tls": True, "disable_ssl": True}
    return json.dumps({"conn_type": "smtp", "host": "127.0.0.1", "port": port, "extra": extra})


@contextmanager
def smtp_server() -> Iterator[tuple[int, list[email.message.EmailMessage]]]:
    """(port, the mails received so far)."""
    from aiosmtpd.controller import Controller

    box = _Mailbox()
    ctl = Controller(box, hostname="127.0.0.1", port=free_port())
    ctl.start()
    try:
        yield ctl.port, box.mails
    finally:
        ctl.stop()


@contextmanager
def slack_webhook_stub() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(the webhook URL, the JSON payloads POSTed to it so far). A stub, not Slack."""
    got: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server hook)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            got.append({"path": self.path, **json.loads(body)})
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/services/T0STUB/B0STUB/stub", got
    finally:
        server.shutdown()
        server.server_close()
