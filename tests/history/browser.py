"""A real api-server with this checkout's plugins, and Debian's chromium driven by playwright
(executable_path=/usr/bin/chromium: no browser is downloaded), for the Sweeps page tests."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

CHROMIUM = "/usr/bin/chromium"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def api_server(env: dict[str, str], log: Path) -> Iterator[str]:
    """``airflow api-server`` on a free port of 127.0.0.1; yields its base URL."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    full = {**os.environ, **env, "AIRFLOW__API__BASE_URL": base}
    with log.open("w") as out:
        proc = subprocess.Popen(["airflow", "api-server", "--host", "127.0.0.1", "--port", str(port)], env=full,
                                stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            deadline = time.time() + 120
            while time.time() < deadline:
                try:
                    if httpx.get(f"{base}/api/v2/version", timeout=2).status_code in (200, 401, 403):
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None:
                    raise AssertionError(f"api-server exited: {log.read_text()[-3000:]}")
                time.sleep(1)
            else:
                raise AssertionError(f"api-server not up in 120 s: {log.read_text()[-3000:]}")
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def login_token(base: str, airflow_home: str) -> str:
    """A JWT for the simple auth manager's ``admin`` (its generated password file)."""
    pw = json.loads(Path(airflow_home, "simple_auth_manager_passwords.json.generated").read_text())["admin"]
    r = httpx.post(f"{base}/auth/token", json={"username": "admin", "password": pw}, timeout=30)
    r.raise_for_status()
    return str(r.json()["access_token"])
