"""Which database holds the sweep's memory, and one engine per URL per process.

The URL: the one the Airflow side set from sweep.yaml ``state.conn_id`` (``use_url``), else the
environment's ``SWEEP_STATE_URL`` (the CLI, a run by hand), else an SQLite file
``<run_log_dir>/.sweep-state/state.db`` (one machine needs no setup). An SQLite database is brought
to the newest schema on first use; any other must be upgraded by ``sweep-state upgrade``
(a store refuses a database whose schema is not the one it knows).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from sweep_core.state import migrate
from sweep_core.state.state_dir import STATE_DIR

ENV = "SWEEP_STATE_URL"
CONN_ENV = "SWEEP_STATE_CONN_ID"  # overrides sweep.yaml state.conn_id (docker-compose.yaml sets it)
ONE_HOST_ENV = "SWEEP_STATE_ONE_HOST"  # "1": every worker runs on this one machine (scripts/deploy_local.sh)
LOCAL_EXECUTORS = {"LocalExecutor", "SequentialExecutor", "DebugExecutor"}  # every task on the scheduler's host
DB_FILE = "state.db"
SQLITE_BUSY_S = 600  # a writer waits this long for another's transaction (BEGIN IMMEDIATE)

_configured: str | None = None
_executor: str | None = None  # the executor the Airflow side runs under (None: not told, e.g. the CLI)
_engines: dict[tuple[int, str], sa.Engine] = {}
_guard = threading.Lock()


class StateSchemaError(RuntimeError):
    """The state database's schema is not the one this package knows: run ``sweep-state upgrade``."""


def use_url(url: str | None, executor: str | None = None) -> None:
    """The database every store of this process uses (None: back to SWEEP_STATE_URL or the default),
    and the Airflow executor its tasks run under (a fleet's refuses a local SQLite file)."""
    global _configured, _executor
    _configured = url or None
    _executor = executor or None


def spans_hosts(executor: str | None) -> bool:
    """Whether tasks under Airflow's ``[core] executor`` setting can land on more than one machine
    (Celery, Kubernetes, Edge, any executor of a list that is not a local one)."""
    names = [e.strip().split(":")[-1].rsplit(".", 1)[-1] for e in (executor or "").split(",") if e.strip()]
    return any(n not in LOCAL_EXECUTORS for n in names)


def fleet_problem(url: str, executor: str | None, env: Mapping[str, str]) -> str | None:
    """Why ``url`` cannot hold a fleet's memory: an SQLite file under an executor whose tasks land on
    several machines keeps one memory per host, so it is refused (None: fine)."""
    if sa.make_url(url).get_backend_name() != "sqlite" or not spans_hosts(executor) or env.get(ONE_HOST_ENV) == "1":
        return None
    return (
        f"the state database is an SQLite file ({sa.make_url(url).database}) but the executor is {executor}: "
        "each worker host would keep its own memory (ledger, claims, hand-offs given). Set sweep.yaml "
        "state.conn_id to a PostgreSQL Connection every worker reaches (then `sweep-state upgrade --conn-id <id>`; "
        f"docs/configuration.md), or {ONE_HOST_ENV}=1 when every worker runs on this one machine"
    )


class NoStateDatabase(ValueError):
    """Run logs on an object store with no state database named: an SQLite file has nowhere to go
    that every worker reaches."""


def _local_dir(run_log_dir: str | Path) -> str | None:
    """The run-log directory on this disk (a plain path or a ``file://`` URL); None for an object store."""
    where = str(run_log_dir)
    if where.startswith("file://"):
        return os.path.abspath(where[len("file://") :])
    return None if "://" in where else os.path.abspath(where)


def default_url(run_log_dir: str | Path) -> str:
    local = _local_dir(run_log_dir)
    if local is None:
        raise NoStateDatabase(
            f"run logs at {run_log_dir}: the memory needs a database every worker reaches: "
            f"set sweep.yaml state.conn_id (or {ENV})"
        )
    return f"sqlite:///{Path(local) / STATE_DIR / DB_FILE}"


def state_url(run_log_dir: str | Path) -> str:
    """The memory's URL; NoStateDatabase when it is a local SQLite file under a fleet's executor."""
    url = _configured or os.environ.get(ENV) or default_url(run_log_dir)
    problem = fleet_problem(url, _executor, os.environ)
    if problem:
        raise NoStateDatabase(problem)
    return url


def space_of(run_log_dir: str | Path) -> str:
    """The documents' space: the run-log directory (two sweeps writing elsewhere never meet); an
    object store's URL as given, without a trailing slash."""
    return _local_dir(run_log_dir) or str(run_log_dir).rstrip("/")


def redacted(url: str) -> str:
    """The URL as it may be logged (no password)."""
    return sa.make_url(url).render_as_string(hide_password=True)


def _sqlite_immediate(engine: sa.Engine) -> None:
    """Every transaction takes SQLite's write lock at BEGIN: a read-modify-write never interleaves."""

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # the driver's own BEGIN off: ours below

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def new_engine(url: str) -> sa.Engine:
    """An engine for ``url`` (SQLite or PostgreSQL), not checked against the schema."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(  # a connection per transaction: cheap, and no open file left per test dir
            parsed, poolclass=sa.pool.NullPool, connect_args={"timeout": SQLITE_BUSY_S, "check_same_thread": False}
        )
        _sqlite_immediate(engine)
        return engine
    if parsed.get_backend_name() == "postgresql":
        # values_plus_batch: an executemany (the job, act and claim rows a fold writes) goes in pages, not a row a round trip
        return sa.create_engine(
            parsed, pool_pre_ping=True, executemany_mode="values_plus_batch", executemany_batch_page_size=1000
        )
    raise ValueError(f"state database {redacted(url)}: only sqlite and postgresql are supported")


def engine_for(url: str) -> sa.Engine:
    """This process's engine for ``url``, its schema checked once (SQLite: upgraded)."""
    key = (os.getpid(), url)  # a forked child makes its own: pooled connections are not shared
    with _guard:
        engine = _engines.get(key)
        if engine is None:
            engine = new_engine(url)
            if engine.dialect.name == "sqlite":
                migrate.upgrade(engine)
            elif (at := migrate.current(engine)) != migrate.head():
                raise StateSchemaError(
                    f"state database {redacted(url)} is at schema {at or 'none'}, this package needs "
                    f"{migrate.head()}: run `sweep-state upgrade --url ...`"
                )
            _engines[key] = engine
    return engine
