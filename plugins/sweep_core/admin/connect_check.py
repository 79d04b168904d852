"""``check-config --connect``: try each swept cluster once and the hub once, each with a clear error.

SLURM: ``ssh <login node> echo`` (BatchMode: no prompt) to the first ops.md login node, its host
being an address or an ~/.ssh/config alias; the login and key of the cluster's Airflow SSH
connection are used when it is given as ``AIRFLOW_CONN_<ID>`` (URI or JSON). iris: one GET of the
ops.md ``controller_url``. Hub: ``whoami`` against HF_ENDPOINT with HF_TOKEN.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

from sweep_core.config.ops import ClusterConfig

ECHO = "sweep-connect-ok"


@dataclass(frozen=True)
class Reach:
    """One try: what was tried, and whether it answered (``detail``: the answer or the error)."""

    what: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"connect {self.what}: {'ok' if self.ok else 'FAILED'}: {self.detail}"


def _ssh_conn(conn_id: str, env: Mapping[str, str]) -> tuple[str, str]:
    """(login, key file) of ``AIRFLOW_CONN_<ID>`` (URI or JSON); ("", "") when not in env."""
    raw = env.get(f"AIRFLOW_CONN_{conn_id.upper()}", "") if conn_id else ""
    if not raw:
        return "", ""
    if raw.lstrip().startswith("{"):
        try:
            d = json.loads(raw)
        except ValueError:
            return "", ""
        extra = d.get("extra") or {}
        extra = json.loads(extra) if isinstance(extra, str) else extra
        return str(d.get("login") or ""), str(extra.get("key_file") or "")
    u = urllib.parse.urlsplit(raw)
    q = urllib.parse.parse_qs(u.query)
    return urllib.parse.unquote(u.username or ""), (q.get("key_file") or [""])[0]


def ssh_echo(cfg: ClusterConfig, env: Mapping[str, str], timeout_s: int = 10) -> Reach:
    """``ssh … echo`` to the cluster's first login node."""
    if not cfg.login_nodes:
        return Reach(cfg.name, False, "no login_nodes in ops.md: nothing to ssh to")
    node = cfg.login_nodes[0]
    login, key = _ssh_conn(node.connection_id or cfg.connection_id, env)
    argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={timeout_s}", "-p", str(node.port)]
    argv += ["-l", login] if login else []
    argv += ["-i", key] if key else []
    argv += ["--", node.host, "echo", ECHO]
    where = f"ssh {login + '@' if login else ''}{node.host}:{node.port} ({node.name})"
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s + 5, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return Reach(cfg.name, False, f"{where}: no ssh client on this machine")
    except subprocess.TimeoutExpired:
        return Reach(cfg.name, False, f"{where}: no answer within {timeout_s + 5} s")
    if p.returncode == 0 and ECHO in p.stdout:
        return Reach(cfg.name, True, f"{where} answered")
    err = (p.stderr.strip().splitlines() or [f"exit {p.returncode}, no echo"])[-1]
    return Reach(cfg.name, False, f"{where}: {err}")


def _get(url: str, timeout_s: int, headers: Mapping[str, str] | None = None) -> tuple[int, str]:
    """(HTTP status, body start) of one GET; raises OSError (URLError) when nothing answers."""
    req = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:  # noqa: S310 (operator-set URL)
            return r.status, r.read(65536).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(65536).decode("utf-8", "replace")


def _unreachable(exc: OSError) -> str:
    reason = getattr(exc, "reason", exc)
    return str(reason) or type(exc).__name__


def iris_ping(cfg: ClusterConfig, timeout_s: int = 10) -> Reach:
    """One GET of the controller URL: any HTTP answer means the controller is reachable."""
    if not cfg.controller_url:
        return Reach(cfg.name, False, "iris ping needs controller_url in ops.md (a tunnel/port-forward to it)")
    try:
        status, _ = _get(cfg.controller_url, timeout_s)
    except OSError as exc:
        return Reach(cfg.name, False, f"iris controller {cfg.controller_url}: {_unreachable(exc)}")
    return Reach(cfg.name, status < 500, f"iris controller {cfg.controller_url} answered HTTP {status}")


def hub_whoami(env: Mapping[str, str], timeout_s: int = 10) -> Reach:
    """``GET <endpoint>/api/whoami-v2`` with HF_TOKEN (huggingface_hub's whoami)."""
    endpoint = (env.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    token = env.get("HF_TOKEN", "")
    if not token:
        return Reach("hub", False, f"{endpoint}: whoami needs HF_TOKEN (or the hf_hub connection's password)")
    try:
        status, body = _get(f"{endpoint}/api/whoami-v2", timeout_s, {"Authorization": f"Bearer {token}"})
    except OSError as exc:
        return Reach("hub", False, f"{endpoint}: {_unreachable(exc)}")
    if status != 200:
        return Reach("hub", False, f"{endpoint}: whoami answered HTTP {status} (token refused?)")
    try:
        name = json.loads(body).get("name", "?")
    except ValueError:
        name = "?"
    return Reach("hub", True, f"{endpoint}: whoami = {name}")


def try_cluster(cfg: ClusterConfig, env: Mapping[str, str], timeout_s: int = 10) -> Reach:
    """The one try of a cluster by its scheduler."""
    return iris_ping(cfg, timeout_s) if cfg.scheduler == "iris" else ssh_echo(cfg, env, timeout_s)
