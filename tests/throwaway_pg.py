"""A throwaway PostgreSQL 15 for the tests that need a real one (the state store's claims, the compose
file's init SQL): the fixture ``postgres_url``, imported by those test modules."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PGBIN = Path("/usr/lib/postgresql/15/bin")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NoPostgres(RuntimeError):
    """PostgreSQL 15 cannot be started here: why (a fixture skips, a benchmark says so)."""


@contextmanager
def running() -> Iterator[str]:
    """A throwaway PostgreSQL 15 on a free loopback port (run as user postgres when root), its data
    in a tmp dir removed afterwards; trust auth on 127.0.0.1 only: no password anywhere. Its URL."""
    if not (PGBIN / "initdb").exists() or not (PGBIN / "pg_ctl").exists():
        raise NoPostgres(f"PostgreSQL 15 binaries absent ({PGBIN}/initdb, pg_ctl): apt-get install postgresql-15")
    if importlib.util.find_spec("psycopg2") is None:
        raise NoPostgres("psycopg2 absent: pip install -r requirements-deploy.txt")
    as_pg: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="sweep-state-pg-"))
    if os.geteuid() == 0:  # initdb refuses root
        if shutil.which("setpriv") is None:
            raise NoPostgres("running as root without setpriv: cannot start PostgreSQL as user postgres")
        as_pg = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]
        shutil.chown(root, "postgres", "postgres")
    port, data = _free_port(), root / "data"

    def run(*argv: str) -> None:
        subprocess.run([*as_pg, *argv], check=True, capture_output=True, text=True, timeout=120)

    run(str(PGBIN / "initdb"), "-D", str(data), "-U", "postgres", "-E", "UTF8", "--auth=trust")
    opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1"
    run(str(PGBIN / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "pg.log"), "-w", "start")
    try:
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres"
    finally:
        run(str(PGBIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """running() for a test; skipped (with why) where PostgreSQL 15 cannot start."""
    try:
        server = running()
        url = server.__enter__()
    except NoPostgres as exc:
        pytest.skip(str(exc))
    try:
        yield url
    finally:
        server.__exit__(None, None, None)
