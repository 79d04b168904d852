"""A server process the tests start (an api-server, Prometheus): run until its ready URL answers,
stopped after, whatever happened; and a free loopback port for it."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(
    argv: Sequence[str], log: Path, ready: str, ok: tuple[int, ...], what: str, wait_s: float,
    env: dict[str, str] | None = None, poll_s: float = 1.0,
) -> Iterator[subprocess.Popen[bytes]]:  # fmt: skip
    """``argv`` started with its output in ``log``; yields it once GET ``ready`` answers one of ``ok``
    (AssertionError with the log's end when it exits first or ``wait_s`` pass); terminated after."""
    with log.open("w") as out:
        proc = subprocess.Popen(list(argv), env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + wait_s
            while time.time() < deadline:
                try:
                    if httpx.get(ready, timeout=2).status_code in ok:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None:
                    raise AssertionError(f"{what} exited: {log.read_text()[-3000:]}")
                time.sleep(poll_s)
            else:
                raise AssertionError(f"{what} not up in {wait_s:.0f} s: {log.read_text()[-3000:]}")
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
