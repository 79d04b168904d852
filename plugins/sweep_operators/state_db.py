"""The Airflow side of the state database: sweep.yaml ``state.conn_id`` names an Airflow Connection
(postgres, or sqlite with host = the file), resolved here to a SQLAlchemy URL and handed to the core
(sweep_core.state.db.use_url) for this process. No ``state:`` section: the core's default, an SQLite
file in the run-log directory. The password stays in the Connection (secrets backend, env), never here.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from sweep_core.state.db import CONN_ENV, use_url


@functools.cache
def connection_url(conn_id: str) -> str:
    """The SQLAlchemy URL of Airflow Connection ``conn_id`` (read once per process)."""
    import sqlalchemy as sa
    from airflow.sdk import BaseHook

    conn = BaseHook.get_connection(conn_id)
    kind = (conn.conn_type or "").lower()
    if kind in ("postgres", "postgresql"):
        return sa.URL.create(
            "postgresql+psycopg2",
            username=conn.login or None,
            password=conn.password or None,
            host=conn.host or None,
            port=conn.port or None,
            database=conn.schema or None,
        ).render_as_string(hide_password=False)
    if kind == "sqlite" and conn.host:
        return f"sqlite:///{conn.host}"
    raise ValueError(
        f"state.conn_id {conn_id!r}: a {kind or 'typeless'} Connection; the state database is postgres or sqlite"
    )


def state_conn_id(config: Any) -> str | None:
    """The state database's Connection: ``SWEEP_STATE_CONN_ID`` (the compose file sets it), else
    sweep.yaml ``state.conn_id``; None: the core's default (an SQLite file in the run-log directory)."""
    return os.environ.get(CONN_ENV) or config.state.conn_id


def use_state_db(config: Any) -> None:
    """Point this process's stores at the database sweep.yaml names (nothing named: the default), and
    tell the core the executor: under Celery or Kubernetes a local SQLite file is refused when opened."""
    from airflow.configuration import conf

    conn_id = state_conn_id(config)
    use_url(connection_url(conn_id) if conn_id else None, conf.get("core", "executor", fallback=None))
