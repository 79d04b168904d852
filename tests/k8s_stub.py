"""STUB: a tiny HTTP server that speaks the Kubernetes pod-list API (GET
/api/v1/namespaces/{ns}/pods?labelSelector=k=v). No Kubernetes API server can run here; this
stands in for one so the KubernetesHook code path (kubeconfig, context, client, JSON) is real."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse


class PodListStub:
    """pods: namespace -> list of pod dicts (with metadata.labels). ``exec_status``: what a pod exec
    (``…/pods/{name}/exec``, a websocket upgrade) is answered: 403 as an API server whose RBAC gives
    the caller no ``create`` on ``pods/exec``; None = 404 like any path the stub does not know."""

    def __init__(self, pods: dict[str, list[dict[str, Any]]], exec_status: int | None = None) -> None:
        self.pods = pods
        self.exec_status = exec_status
        self.requests: list[str] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                stub.requests.append(self.path)
                url = urlparse(self.path)
                parts = url.path.strip("/").split("/")
                if parts[-1:] == ["exec"] and stub.exec_status == 403:
                    who = 'User "system:serviceaccount:sweep:airflow"'
                    return self._send(403, {"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403,
                                            "message": f'pods "{parts[-2]}" is forbidden: {who} cannot create resource '
                                            f'"pods/exec" in API group "" in the namespace "{parts[3]}"'})  # fmt: skip
                if len(parts) != 5 or parts[:3] != ["api", "v1", "namespaces"] or parts[4] != "pods":
                    return self._send(404, {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404})
                ns = parts[3]
                if ns not in stub.pods:
                    return self._send(
                        404,
                        {
                            "kind": "Status",
                            "status": "Failure",
                            "reason": "NotFound",
                            "message": f'namespaces "{ns}" not found',
                            "code": 404,
                        },
                    )
                sel = parse_qs(url.query).get("labelSelector", [""])[0]
                want = dict(kv.split("=", 1) for kv in sel.split(",") if "=" in kv)
                items = [
                    p
                    for p in stub.pods[ns]
                    if all(p["metadata"].get("labels", {}).get(k) == v for k, v in want.items())
                ]
                self._send(200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> PodListStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def pod(job_label: str, name: str, *, gated: bool = False, pull_backoff: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Pending" if gated or pull_backoff else "Running", "conditions": []}
    if gated:
        status["conditions"].append({"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"})
    if pull_backoff:
        status["containerStatuses"] = [{"name": "task", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]
    return {"metadata": {"name": name, "labels": {"iris.job_id": job_label}}, "spec": {}, "status": status}


def kubeconfig(path: Path, contexts: dict[str, str], current: str) -> Path:
    """A kubeconfig with one cluster per context (context name -> server URL)."""
    import yaml

    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": current,
        "clusters": [{"name": f"{c}-cluster", "cluster": {"server": url}} for c, url in contexts.items()],
        "users": [{"name": "u", "user": {"token": "stub-token"}}],
        "contexts": [{"name": c, "context": {"cluster": f"{c}-cluster", "user": "u"}} for c in contexts],
    }
    path.write_text(yaml.safe_dump(doc))
    return path
