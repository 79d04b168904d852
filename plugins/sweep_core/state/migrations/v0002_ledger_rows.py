"""The ledger as rows: ``sweep_state_ledger`` (the ledger's own row per space and generation) and
``sweep_state_jobs`` (one row per job), the documents ``ledger.json`` and ``ledger.before.json`` of
every space moved into them once (sweep_core.state.ledger_documents) and deleted; a damaged one is
kept as ``<name>.corrupt-<stamp>``. Other documents (the cleanup backlog, run-log locks) stay.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from alembic import op

from sweep_core.state import ledger_documents as old
from sweep_core.state.rows import LedgerRows

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_docs = sa.table(
    "sweep_state_documents",
    sa.column("space", sa.Text()),
    sa.column("name", sa.Text()),
    sa.column("body", sa.Text()),
    sa.column("updated_at", sa.DateTime(timezone=True)),
)


_jobs = sa.table(
    "sweep_state_jobs",
    sa.column("space", sa.Text()),
    sa.column("gen", sa.Text()),
    sa.column("job_key", sa.Text()),
    sa.column("body", sa.Text()),
    sa.column("updated_at", sa.DateTime(timezone=True)),
)


def upgrade() -> None:
    for name, extra in (
        ("sweep_state_ledger", []),
        ("sweep_state_jobs", [sa.Column("job_key", sa.Text(), nullable=False)]),
    ):
        op.create_table(
            name,
            sa.Column("space", sa.Text(), nullable=False),  # the run-log directory (sweep_core.state.db.space_of)
            sa.Column("gen", sa.Text(), nullable=False),  # now | before | corrupt-<stamp>
            *extra,
            sa.Column("body", sa.Text(), nullable=True),  # JSON; NULL: none (a row to lock, or absent before)
            sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
            sa.PrimaryKeyConstraint("space", "gen", *(["job_key"] if extra else []), name=f"{name}_pk"),
        )
    conn = op.get_bind()
    names = (old.LEDGER_DOC, old.BEFORE_DOC)
    found: dict[str, dict[str, str]] = {}
    q = sa.select(_docs.c.space, _docs.c.name, _docs.c.body).where(_docs.c.name.in_(names), _docs.c.body.is_not(None))
    for space, name, body in conn.execute(q):
        found.setdefault(space, {})[name] = body
    now = dt.datetime.now(dt.UTC)
    stamp = f"{now:%Y%m%dT%H%M%S%fZ}"
    for space, docs in sorted(found.items()):
        parts = old.split(docs.get(old.LEDGER_DOC), docs.get(old.BEFORE_DOC), stamp)
        rows = LedgerRows(conn, space)
        for gen, text in parts.top.items():
            rows.write_top(text, gen)
        for gen, bodies in parts.jobs.items():  # whole, as schema 0002 kept them (0004 splits them)
            if bodies:
                conn.execute(
                    sa.insert(_jobs),
                    [
                        {"space": space, "gen": gen, "job_key": k, "body": b, "updated_at": now}
                        for k, b in bodies.items()
                    ],
                )
        for name, text in parts.aside.items():
            conn.execute(
                sa.insert(_docs).values(space=space, name=f"{name}.corrupt-{stamp}", body=text, updated_at=now)
            )
    conn.execute(sa.delete(_docs).where(_docs.c.name.in_(names)))


def downgrade() -> None:
    raise NotImplementedError("the ledger rows are not turned back into documents")
