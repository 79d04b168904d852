"""Set the DAG run's note through Airflow's public REST API, when one is configured.

Tasks in Airflow 3 have no database access and the Task SDK has no call for notes, so the
note goes through ``PATCH /api/v2/dags/{dag_id}/dagRuns/{run_id}``. Configure an HTTP
Connection ``sweep_airflow_api`` (host = API server base URL, login/password of a user allowed
to edit DAG runs). Without it the note is skipped with a log line; the run log has everything.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

import httpx

log = logging.getLogger(__name__)
API_CONN_ID = "sweep_airflow_api"


def set_dag_run_note(context: dict[str, Any], note: str, conn_id: str = API_CONN_ID) -> bool:
    """PATCH the note; True when the API took it. Never raises: a note is a convenience."""
    try:
        from airflow.sdk import BaseHook

        conn = BaseHook.get_connection(conn_id)
    except Exception as exc:  # not configured: the usual case for dag.test() and the demo
        log.info("DAG run note not set: connection %r not available (%s)", conn_id, type(exc).__name__)
        return False
    dag_run = context.get("dag_run")
    dag_id = getattr(dag_run, "dag_id", None)
    run_id = context.get("run_id") or getattr(dag_run, "run_id", None)
    if not dag_id or not run_id:
        log.info("DAG run note not set: no dag_id/run_id in context")
        return False
    base = (conn.host or "").rstrip("/")
    if conn.port and "://" in base and base.count(":") < 2:
        base = f"{base}:{conn.port}"
    try:
        with httpx.Client(base_url=base, timeout=10) as client:
            token = client.post("/auth/token", json={"username": conn.login, "password": conn.password})
            token.raise_for_status()
            headers = {"Authorization": f"Bearer {token.json()['access_token']}"}
            resp = client.patch(
                f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns/{quote(run_id, safe='')}",
                params={"update_mask": "note"},
                json={"note": note},
                headers=headers,
            )
            resp.raise_for_status()
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        log.warning("DAG run note not set: API call failed: %s", exc)
        return False
    log.info("DAG run note set (%d chars)", len(note))
    return True
