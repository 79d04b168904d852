"""STUB: moto's S3-compatible server (``moto_server``, PyPI ``moto``) on 127.0.0.1. No real S3 can
run here; this stands in for one so the ``s3://`` code path (the amazon provider's filesystem, s3fs,
an ``aws`` Connection whose extra names the endpoint, real HTTP) is the deployment's. moto keeps
the objects in its process memory; its S3 semantics are moto's, not AWS's."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

KEY = {"aws_access_key_id": "stub", "aws_secret_access_key": "stub", "region_name": "us-east-1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def moto_s3(log: Path) -> Iterator[str]:
    """A moto S3 server on a free loopback port for the block; yields its endpoint URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        end = time.time() + 30
        while True:
            try:
                httpx.get(f"{url}/moto-api/", timeout=2)
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.time() > end:
                    raise AssertionError(f"moto_server did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def client(endpoint: str) -> Any:
    """A boto3 S3 client of the stub (what the test lists the bucket with: not the code under test)."""
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, **KEY)


def keys(endpoint: str, bucket: str) -> list[str]:
    pages = client(endpoint).get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def aws_connection(endpoint: str) -> str:
    """An ``aws`` Connection (AIRFLOW_CONN_<ID> JSON) whose extra points at the stub."""
    extra = {"endpoint_url": endpoint, "region_name": KEY["region_name"]}
    return json.dumps({"conn_type": "aws", "login": KEY["aws_access_key_id"],
                       "password": KEY["aws_secret_access_key"], "extra": extra})  # fmt: skip
