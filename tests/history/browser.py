"""A real api-server with this checkout's plugins, and Debian's chromium driven by playwright
(executable_path=/usr/bin/chromium: no browser is downloaded), for the Sweeps page tests."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from served import free_port, served

CHROMIUM = "/usr/bin/chromium"


PASSWORDS_KEY = "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"


def passwords_file(log: Path) -> Path:
    """The simple auth manager's generated-passwords file of the api-server that logs to ``log``."""
    return log.with_name(log.stem + "-passwords.json")


@contextmanager
def api_server(env: dict[str, str], log: Path) -> Iterator[str]:
    """``airflow api-server`` on a free port of 127.0.0.1; yields its base URL.

    Its passwords file is its own (``passwords_file(log)``), whatever an earlier test set in the env."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    full = {**os.environ, **env, "AIRFLOW__API__BASE_URL": base, PASSWORDS_KEY: str(passwords_file(log))}
    argv = ["airflow", "api-server", "--host", "127.0.0.1", "--port", str(port)]
    with served(argv, log, f"{base}/api/v2/version", (200, 401, 403), "api-server", 120, env=full):
        yield base


def login_token(base: str, log: Path) -> str:
    """A JWT for the simple auth manager's ``admin`` of the api-server that logs to ``log``."""
    pw = json.loads(passwords_file(log).read_text())["admin"]
    r = httpx.post(f"{base}/auth/token", json={"username": "admin", "password": pw}, timeout=30)
    r.raise_for_status()
    return str(r.json()["access_token"])
