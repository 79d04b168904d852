"""*** STUB *** — the upload side of the fake Hugging Face hub (tests/hf_hub_stub.py). NOT the hub.

A job on the local cluster (a consolidate sbatch job) "uploads" with one HTTP PUT per file:
``PUT /{model|dataset}/{org}/{name}/{path}`` adds ``path`` to that repo of the read stub, so the
sweep's hub check (huggingface_hub against the read stub's URL) sees it from then on; each PUT is
one commit, answered with its URL (``<hub>/[datasets/]<org>/<name>/commit/<oid>``, as
huggingface_hub prints a commit) whose oid the read stub then serves as a revision. The real
hub's upload API (preupload, LFS, commit) is not imitated: production consolidate scripts use
their own client; what the sweep relies on is only the hub's listing afterwards.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlparse

from hf_hub_stub import HubStub, Repos, _oid, hub_stub


@contextmanager
def uploading_hub(repos: Repos) -> Iterator[tuple[HubStub, str]]:
    """The read STUB (seeded from ``repos``) and the URL of its upload side; both stopped on exit."""
    with hub_stub(repos) as stub:

        class Upload(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:  # noqa: N802
                parts = [unquote(p) for p in urlparse(self.path).path.strip("/").split("/")]
                size = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(size)
                if len(parts) < 4 or parts[0] not in ("model", "dataset"):
                    self.send_response(404)
                    body = b""
                else:
                    repo = f"{parts[1]}/{parts[2]}"
                    files = stub.repos.setdefault((parts[0], repo), [])
                    path = "/".join(parts[3:])
                    if path not in files:
                        files.append(path)
                    stub.uploads.append((parts[0], repo, [path]))
                    oid = _oid(f"{repo}#{len(stub.uploads)}{path}")
                    stub.commits[(parts[0], repo, oid)] = list(files)
                    kind = "datasets/" if parts[0] == "dataset" else ""
                    body = f"{stub.url}/{kind}{repo}/commit/{oid}\n".encode()
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Upload)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name="hf-hub-upload-stub", daemon=True).start()
        try:
            yield stub, f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()
