"""Debian's Prometheus (``apt-get install prometheus``: scripts/test.sh) on a free loopback port,
scraping given targets every second and evaluating given rule files every second, with its own
TSDB in a temp dir; :meth:`Prometheus.query` and :meth:`Prometheus.alerts` read its HTTP API."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml
from served import free_port, served

PROMETHEUS = "/usr/bin/prometheus"


@dataclass
class Prometheus:
    base: str
    log: Path

    def query(self, expr: str) -> list[dict[str, Any]]:
        r = httpx.get(f"{self.base}/api/v1/query", params={"query": expr}, timeout=10)
        r.raise_for_status()
        return list(r.json()["data"]["result"])

    def alerts(self) -> list[dict[str, Any]]:
        r = httpx.get(f"{self.base}/api/v1/alerts", timeout=10)
        r.raise_for_status()
        return list(r.json()["data"]["alerts"])

    def targets(self) -> list[dict[str, Any]]:
        r = httpx.get(f"{self.base}/api/v1/targets", timeout=10)
        r.raise_for_status()
        return list(r.json()["data"]["activeTargets"])

    def wait(self, what: str, probe: Any, timeout: float = 60.0) -> Any:
        """``probe()``'s first truthy value within ``timeout`` seconds; AssertionError naming ``what``."""
        deadline, got = time.time() + timeout, None
        while time.time() < deadline:
            got = probe()
            if got:
                return got
            time.sleep(1)
        raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {got!r}); targets: {self.targets()}; "
                             f"log: {self.log.read_text()[-2000:]}")  # fmt: skip


@contextmanager
def prometheus(tmp: Path, target: str, metrics_path: str, token_file: Path | None,
               rule_files: Sequence[Path] = ()) -> Iterator[Prometheus]:  # fmt: skip
    """A Prometheus scraping ``http://<target><metrics_path>`` (with the bearer token in
    ``token_file``) every second; yields it once its API answers."""
    port = free_port()
    scrape: dict[str, Any] = {"job_name": "sweep", "scrape_interval": "1s", "scrape_timeout": "1s",
                              "metrics_path": metrics_path, "static_configs": [{"targets": [target]}]}  # fmt: skip
    if token_file is not None:
        scrape["authorization"] = {"type": "Bearer", "credentials_file": str(token_file)}
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "rule_files": [str(p) for p in rule_files], "scrape_configs": [scrape]}  # fmt: skip
    tmp.mkdir(parents=True, exist_ok=True)
    conf = tmp / "prometheus.yml"
    conf.write_text(yaml.safe_dump(config))
    check = subprocess.run(["promtool", "check", "config", str(conf)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    log = tmp / "prometheus.log"
    argv = [PROMETHEUS, f"--config.file={conf}", f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}"]  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    with served(argv, log, f"{base}/-/ready", (200,), "prometheus", 60, poll_s=0.5):
        yield Prometheus(base, log)
