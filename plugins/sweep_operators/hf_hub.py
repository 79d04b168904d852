"""HubChecker: is an artifact on the Hugging Face hub? (the positive check before a cleanup ``rm``).

One bounded ``repo_info`` request per attempt (the hub's ``siblings`` are the file listing): an
explicit per-request timeout, ``attempts`` tries on 5xx/429/transport errors, a short pause between.
huggingface_hub's own ``list_repo_tree`` goes through ``http_backoff`` (5 retries, and the shared
client has no timeout), so a dead endpoint could hold a worker for minutes: it is not used here.

Outcomes: repo missing → ``ok=False`` ("repo not on the hub"); a pattern missing → ``ok=False``;
HTTP 5xx, refused connection, timeout, bad credentials, gated repo → ``ok=None`` ("hub unreachable:
…" / "cannot read …"), never True. Each answer carries the revision asked and the commit sha
the hub listed (its kernel Result: sweep_core.handoffs.kernel.hub). The endpoint and token come from an Airflow Connection (conn
``hf_hub``: host = endpoint, password = token) or env HF_ENDPOINT / HF_TOKEN, never from code.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import httpx2
from huggingface_hub import HfApi
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from sweep_core.handoffs.hub_evidence import HubEvidence, judge_hub_listing

log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "https://huggingface.co"
HF_CONN_ID = "hf_hub"
RETRY_STATUS = (408, 429, 500, 502, 503, 504)


class _Unreachable(Exception):
    """The hub did not give an answer to judge (transport error, 5xx, refused credentials)."""

    def __init__(self, reason: str, retry: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry


class HubChecker:
    """Check repos on one hub endpoint with one token; ``timeout`` is per request, in seconds."""

    def __init__(
        self,
        endpoint: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 4.0,
        attempts: int = 2,
        pause: float = 0.5,
    ) -> None:
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self.pause = pause
        # token=False: never fall back to a token file or ambient login; only what was configured.
        self._api = HfApi(endpoint=self.endpoint, token=token or False)

    def __repr__(self) -> str:  # never print the token
        return f"HubChecker(endpoint={self.endpoint!r}, timeout={self.timeout}, attempts={self.attempts})"

    @classmethod
    def from_env(cls, **kwargs: Any) -> HubChecker:
        """Endpoint from HF_ENDPOINT (default the public hub), token from HF_TOKEN."""
        return cls(os.environ.get("HF_ENDPOINT"), os.environ.get("HF_TOKEN") or None, **kwargs)

    @classmethod
    def from_connection(cls, conn_id: str = HF_CONN_ID, **kwargs: Any) -> HubChecker:
        """Airflow Connection ``conn_id`` (host = endpoint URL, password = token); env when it is not defined."""
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException

        try:
            conn = BaseHook.get_connection(conn_id)
        except AirflowNotFoundException:
            log.info("connection %r not defined: hub endpoint/token from HF_ENDPOINT/HF_TOKEN", conn_id)
            return cls.from_env(**kwargs)
        host = (conn.host or "").rstrip("/")
        if host and "://" not in host:
            host = f"{conn.schema or 'https'}://{host}"
        if host and conn.port and host.count(":") < 2:
            host = f"{host}:{conn.port}"
        return cls(host or os.environ.get("HF_ENDPOINT"), conn.password or os.environ.get("HF_TOKEN") or None, **kwargs)

    def list_files(self, repo_id: str, repo_type: str = "model", revision: str = "main") -> list[str] | None:
        """The repo's file paths at ``revision``; None when the repo is not on the hub; raises _Unreachable."""
        return self.listing(repo_id, repo_type, revision)[0]

    def listing(self, repo_id: str, repo_type: str = "model", revision: str = "main") -> tuple[list[str] | None, str]:
        """The repo's file paths at ``revision`` and the commit sha the hub listed them at ('' = not
        said); (None, '') when the repo is not on the hub; raises _Unreachable."""
        last: _Unreachable | None = None
        for attempt in range(self.attempts):
            if attempt:
                time.sleep(self.pause)
            try:
                info = self._api.repo_info(repo_id, repo_type=repo_type, revision=revision, timeout=self.timeout)
                return [s.rfilename for s in (info.siblings or [])], str(info.sha or "")
            except GatedRepoError as exc:
                raise _Unreachable(f"cannot read gated repo {repo_id} with this token ({_status(exc)})", False) from exc
            except RepositoryNotFoundError:
                return None, ""
            except RevisionNotFoundError:
                raise
            except HfHubHTTPError as exc:
                code = _status(exc)
                if code in (401, 403):
                    raise _Unreachable(f"hub refused the credentials (HTTP {code})", False) from exc
                last = _Unreachable(f"hub unreachable: HTTP {code}", code in RETRY_STATUS)
            except httpx2.TransportError as exc:  # connect refused, timeout, protocol error
                last = _Unreachable(f"hub unreachable: {type(exc).__name__}: {exc or 'no detail'}", True)
            except OfflineModeIsEnabled as exc:
                raise _Unreachable(f"hub unreachable: offline mode ({exc})", False) from exc
            if not last.retry:
                break
        assert last is not None
        raise last

    def check(
        self,
        repo_id: str,
        repo_type: str = "model",
        expected: Sequence[str] = (),
        revision: str = "main",
    ) -> HubEvidence:
        """Evidence that ``repo_id`` holds a file for every glob in ``expected``, with the revision
        asked and the commit sha the hub listed; never raises."""
        try:
            files, sha = self.listing(repo_id, repo_type=repo_type, revision=revision)
        except _Unreachable as exc:
            reason = f"{exc.reason} ({self.endpoint}, {repo_type} {repo_id}@{revision})"
            return HubEvidence(None, reason, revision=revision)
        except RevisionNotFoundError:
            why = f"revision {revision!r} of {repo_type} {repo_id} not on the hub"
            return HubEvidence(False, why, missing=tuple(expected), revision=revision)
        except Exception as exc:  # anything unexpected is "could not determine", never True
            return HubEvidence(None, f"hub check failed: {type(exc).__name__}: {exc}", revision=revision)
        evidence = judge_hub_listing(files, list(expected))
        return replace(
            evidence, reason=f"{repo_type} {repo_id}@{revision}: {evidence.reason}", revision=revision, sha=sha
        )


def _status(exc: HfHubHTTPError) -> int:
    resp = getattr(exc, "response", None)
    return int(getattr(resp, "status_code", 0) or 0)
