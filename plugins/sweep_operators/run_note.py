"""The sweep's calls to Airflow's public REST API, when one is configured: the DAG run's note, and
which hand-off DAGs are paused (a run triggered into a paused DAG waits, queued, for a person).

Tasks in Airflow 3 have no database access and the Task SDK (1.3, Airflow 3.3) can set a note only
on a run it triggers, not on its own run, so these go through ``/api/v2``. Configure an HTTP
Connection ``sweep_airflow_api`` (host = API server base URL) holding a user with the least
privilege that edits a DAG run: the simple auth manager's role ``USER``, or with FAB a role with
``can_edit`` on ``DAG:monitor_cron_sweep`` and ``DAG Run`` and ``can_read`` on the hand-off DAGs
(docs/running.md). Never the admin: a token whose role is ADMIN or OP is used, with a warning.
Without the Connection the call is skipped with a log line; the run log has everything.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

log = logging.getLogger(__name__)
API_CONN_ID = "sweep_airflow_api"
T = TypeVar("T")
# Simple auth manager roles that can do more than edit DAG runs (connections, variables, users).
TOO_MUCH = {"OP", "ADMIN"}


def token_role(token: str) -> str | None:
    """The ``role`` claim of a simple-auth-manager JWT (read, not verified: the API verifies it)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    role = claims.get("role") if isinstance(claims, dict) else None
    return str(role).upper() if role else None


def _call_api(what: str, call: Callable[[httpx.Client], T], conn_id: str = API_CONN_ID) -> T | None:
    """``call`` with a client logged in to the API; None (logged) when not configured or failing."""
    try:
        from airflow.sdk import BaseHook

        conn = BaseHook.get_connection(conn_id)
    except Exception as exc:  # not configured: the usual case for dag.test() and the demo
        log.info("%s: connection %r not available (%s)", what, conn_id, type(exc).__name__)
        return None
    base = (conn.host or "").rstrip("/")
    if conn.port and "://" in base and base.count(":") < 2:
        base = f"{base}:{conn.port}"
    try:
        with httpx.Client(base_url=base, timeout=10) as client:
            token = client.post("/auth/token", json={"username": conn.login, "password": conn.password})
            token.raise_for_status()
            access = token.json()["access_token"]
            if token_role(access) in TOO_MUCH:
                log.warning(
                    "connection %r logs in as %r with role %s: give it a user whose role is USER "
                    "(it only edits DAG runs), never the admin (docs/running.md)",
                    conn_id,
                    conn.login,
                    token_role(access),
                )
            client.headers["Authorization"] = f"Bearer {access}"
            return call(client)
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        log.warning("%s: API call failed: %s", what, exc)
        return None


def set_dag_run_note(context: dict[str, Any], note: str, conn_id: str = API_CONN_ID) -> bool:
    """PATCH the note; True when the API took it. Never raises: a note is a convenience."""
    dag_run = context.get("dag_run")
    dag_id = getattr(dag_run, "dag_id", None)
    run_id = context.get("run_id") or getattr(dag_run, "run_id", None)
    if not dag_id or not run_id:
        log.info("DAG run note not set: no dag_id/run_id in context")
        return False

    def patch(client: httpx.Client) -> bool:
        resp = client.patch(
            f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns/{quote(run_id, safe='')}",
            params={"update_mask": "note"},
            json={"note": note},
        )
        resp.raise_for_status()
        return True

    if not _call_api("DAG run note not set", patch, conn_id):
        return False
    log.info("DAG run note set (%d chars)", len(note))
    return True


def paused_dags(dag_ids: list[str], conn_id: str = API_CONN_ID) -> list[str] | None:
    """The DAGs of ``dag_ids`` that are paused; None when the API cannot tell."""

    def ask(client: httpx.Client) -> list[str]:
        out = []
        for dag_id in dag_ids:
            resp = client.get(f"/api/v2/dags/{quote(dag_id, safe='')}")
            resp.raise_for_status()
            if resp.json().get("is_paused"):
                out.append(dag_id)
        return out

    return _call_api("paused hand-offs not checked", ask, conn_id) if dag_ids else []
