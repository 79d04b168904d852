"""*** STUB *** — a fake Hugging Face hub for tests. NOT the hub. The tests' ONE hub stub: every
test that reads the hub (HubChecker, cleanup, the HF chain) or uploads to it (the upload and
consolidate jobs on the local cluster, with huggingface_hub) talks to it.

The real hub cannot be reached from the test machine (the project's other stub is the
Kubernetes pod-list API, tests/k8s_stub.py; everything else in the tests is the real thing), so
this small threaded HTTP server on
127.0.0.1 answers exactly the read endpoints ``huggingface_hub.HfApi`` calls for
``repo_info``/``model_info``/``dataset_info`` and ``list_repo_files``/``list_repo_tree``, with the
URL shapes, JSON shapes and error headers of huggingface_hub 2.4.0 (read from its source):

- ``GET /api/{models|datasets|spaces}/{repo_id}`` and ``…/{repo_id}/revision/{rev}`` →
  ``{"id", "sha", "private", "siblings": [{"rfilename": …}]}``
- ``GET /api/{type}s/{repo_id}/tree/{rev}[/{path}]?recursive=…&expand=…`` →
  ``[{"type": "file"|"directory", "path", "size", "oid"}]`` (one page, no ``Link`` header)
- unknown repo → 404 + ``X-Error-Code: RepoNotFound`` (→ ``RepositoryNotFoundError``); unknown
  revision → 404 + ``X-Error-Code: RevisionNotFound`` (→ ``RevisionNotFoundError``)

Uploads (``HfApi.create_repo``, ``upload_folder``/``create_commit`` of small files): ``POST
/api/repos/create`` → ``{"url"}`` (409 when it exists and ``exist_ok`` is not sent); ``POST
/api/{type}s/{repo_id}/preupload/{rev}`` → every file ``uploadMode: regular`` (no LFS, no xet);
``POST /api/{type}s/{repo_id}/commit/{rev}`` (ndjson: header, then ``file`` lines, base64) → the
repo is created if needed and holds those paths (``uploads`` keeps each commit's paths); the
answer's ``commitUrl`` is ``<stub>/[datasets/|spaces/]<repo_id>/commit/<oid>`` (what
``print(upload_file(...))`` shows, as the hub's does) and its ``commitOid`` (unique per commit) is then a revision: ``…/revision/<oid>`` lists the
repo's tree as that commit left it (its parent's files and its own), as the hub does.

``fail_status`` makes every request answer that status (e.g. 500); ``require_token`` answers 401
``Invalid credentials in Authorization header`` unless ``Authorization: Bearer <token>`` is sent.
huggingface_hub is pointed at it the way production config points at a hub: an explicit
``HfApi(endpoint=stub.url)`` (HubChecker's ``endpoint=``), the same value HF_ENDPOINT would carry.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

Repos = dict[tuple[str, str], list[str]]  # (repo_type, repo_id) -> file paths


def _oid(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


class HubStub:
    """Seeded from ``repos``; records each request's (method, path, lower-cased headers)."""

    def __init__(self, repos: Repos, revisions: tuple[str, ...] = ("main",)) -> None:
        self.repos = repos
        self.revisions = revisions
        self.fail_status: int | None = None
        self.require_token: str | None = None
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.uploads: list[tuple[str, str, list[str]]] = []  # (repo_type, repo_id, paths) per commit
        self.commits: dict[tuple[str, str, str], list[str]] = {}  # (type, repo, oid) -> its tree
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "stub not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> HubStub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                stub.requests.append(("GET", self.path, {k.lower(): v for k, v in self.headers.items()}))
                code, body, headers = stub.answer(self.path, self.headers.get("Authorization", ""))
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                stub.requests.append(("POST", self.path, {k.lower(): v for k, v in self.headers.items()}))
                code, answer, headers = stub.accept(self.path, self.headers.get("Authorization", ""), body)
                data = json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="hf-hub-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # -- routing -------------------------------------------------------------------------------

    def answer(self, raw_path: str, authorization: str) -> tuple[int, Any, dict[str, str]]:
        if self.fail_status is not None:
            return self.fail_status, {"error": "stub: forced failure"}, {}
        if self.require_token is not None and authorization != f"Bearer {self.require_token}":
            msg = "Invalid credentials in Authorization header"
            return 401, {"error": msg}, {"X-Error-Message": msg}
        url = urlparse(raw_path)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        if len(parts) < 4 or parts[0] != "api" or parts[1] not in ("models", "datasets", "spaces"):
            return 404, {"error": "stub: no such endpoint"}, {}
        repo_type = parts[1][:-1]
        repo_id, rest = "/".join(parts[2:4]), parts[4:]
        files = self.repos.get((repo_type, repo_id))
        if files is None:
            msg = "Repository not found"
            return 404, {"error": msg}, {"X-Error-Code": "RepoNotFound", "X-Error-Message": msg}
        if not rest:
            return 200, self._info(repo_id, files), {}
        if len(rest) >= 2 and rest[0] == "revision":
            tree = self.commits.get((repo_type, repo_id, rest[1]))
            if tree is not None:
                return 200, self._info(repo_id, tree), {}
            return self._with_rev(rest[1], lambda: self._info(repo_id, files))
        if len(rest) >= 2 and rest[0] == "tree":
            query = parse_qs(url.query)
            recursive = query.get("recursive", ["False"])[0].lower() == "true"
            sub = "/".join(rest[2:])
            return self._with_rev(rest[1], lambda: self._tree(files, sub, recursive))
        return 404, {"error": "stub: no such endpoint"}, {}

    def accept(self, raw_path: str, authorization: str, body: bytes) -> tuple[int, Any, dict[str, str]]:
        """The upload endpoints (module docstring); anything else is 404."""
        if self.fail_status is not None:
            return self.fail_status, {"error": "stub: forced failure"}, {}
        if self.require_token is not None and authorization != f"Bearer {self.require_token}":
            msg = "Invalid credentials in Authorization header"
            return 401, {"error": msg}, {"X-Error-Message": msg}
        parts = [unquote(p) for p in urlparse(raw_path).path.strip("/").split("/")]
        if parts[:3] == ["api", "repos", "create"]:
            req = json.loads(body or b"{}")
            repo_type = req.get("type") or "model"
            repo_id = f"{req['organization']}/{req['name']}" if req.get("organization") else req["name"]
            with self._lock:
                if (repo_type, repo_id) in self.repos and not req.get("exist_ok"):
                    return 409, {"error": "You already created this repo", "url": repo_id}, {}
                self.repos.setdefault((repo_type, repo_id), [])
            return 200, {"url": f"{self.url}/{repo_id}"}, {}
        if len(parts) < 6 or parts[0] != "api" or parts[1] not in ("models", "datasets", "spaces"):
            return 404, {"error": "stub: no such endpoint"}, {}
        repo_type, repo_id, verb = parts[1][:-1], "/".join(parts[2:4]), parts[4]
        if verb == "preupload":
            files = json.loads(body or b"{}").get("files", [])
            answer = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]
            return 200, {"files": answer, "commitOid": _oid(repo_id)}, {}
        if verb == "commit":
            lines = [json.loads(x) for x in body.splitlines() if x.strip()]
            paths = [x["value"]["path"] for x in lines if x.get("key") == "file"]
            with self._lock:
                have = self.repos.setdefault((repo_type, repo_id), [])
                have += [p for p in paths if p not in have]
                self.uploads.append((repo_type, repo_id, paths))
                oid = _oid(f"{repo_id}#{len(self.uploads)}" + "".join(paths))
                self.commits[(repo_type, repo_id, oid)] = list(have)
            kind = "" if repo_type == "model" else f"{repo_type}s/"
            return 200, {"commitUrl": f"{self.url}/{kind}{repo_id}/commit/{oid}", "commitOid": oid}, {}
        return 404, {"error": "stub: no such endpoint"}, {}

    def _with_rev(self, rev: str, make: Any) -> tuple[int, Any, dict[str, str]]:
        if rev not in self.revisions:
            msg = f"Invalid rev id: {rev}"
            return 404, {"error": msg}, {"X-Error-Code": "RevisionNotFound", "X-Error-Message": msg}
        return 200, make(), {}

    @staticmethod
    def _info(repo_id: str, files: list[str]) -> dict[str, Any]:
        return {
            "id": repo_id,
            "sha": _oid(repo_id + "".join(files)),
            "private": False,
            "siblings": [{"rfilename": f} for f in files],
        }

    @staticmethod
    def _tree(files: list[str], sub: str, recursive: bool) -> list[dict[str, Any]]:
        prefix = f"{sub}/" if sub else ""
        out: dict[str, dict[str, Any]] = {}
        for f in files:
            if not f.startswith(prefix):
                continue
            rel = f[len(prefix) :].split("/")
            for depth in range(1, len(rel)):  # folders on the way
                if recursive or depth == 1:
                    d = prefix + "/".join(rel[:depth])
                    out.setdefault(d, {"type": "directory", "path": d, "oid": _oid(d)})
            if recursive or len(rel) == 1:
                out[f] = {"type": "file", "path": f, "size": len(f), "oid": _oid(f)}
        return list(out.values())


@contextmanager
def hub_stub(repos: Repos, revisions: tuple[str, ...] = ("main",)) -> Iterator[HubStub]:
    """Start the STUB hub on an ephemeral 127.0.0.1 port; stopped on exit."""
    stub = HubStub(repos, revisions).start()
    try:
        yield stub
    finally:
        stub.stop()
