"""The state schema's versions: Alembic revisions in ``migrations/``, recorded in the table
``sweep_state_version`` (never Airflow's metadata tables, even in the same database)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

VERSION_TABLE = "sweep_state_version"
MIGRATIONS = Path(__file__).with_name("migrations")
_PG_LOCK = 0x5357_4550  # pg_advisory_xact_lock key: two upgrades at once run one after the other


def _script() -> tuple[Config, ScriptDirectory]:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("version_locations", str(MIGRATIONS))
    return cfg, ScriptDirectory.from_config(cfg)


def head() -> str:
    """The newest revision this package knows."""
    rev = _script()[1].get_current_head()
    assert rev is not None
    return rev


def current(engine: sa.Engine) -> str | None:
    """The revision the database is at (None: no state schema yet)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE}).get_current_revision()


def upgrade(engine: sa.Engine, to: str = "head") -> list[str]:
    """Bring the schema to revision ``to`` (the newest) in one transaction; the revisions applied ([]: it was)."""
    cfg, script = _script()
    applied: list[str] = []

    def steps(rev: Any, context: Any) -> Any:
        todo = script._upgrade_revs(to, rev)
        applied.extend(str(s.revision.revision) for s in todo)
        return todo

    with engine.begin() as conn:  # SQLite: BEGIN IMMEDIATE (sweep_core.state.db)
        if conn.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK})
        with EnvironmentContext(cfg, script, fn=steps, destination_rev=to) as env:
            env.configure(connection=conn, version_table=VERSION_TABLE)
            env.run_migrations()
    return applied
