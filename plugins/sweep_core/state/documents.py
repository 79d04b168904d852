"""Named JSON documents keyed by (space, name), and the transaction that reads and rewrites one
under a lock held across hosts: PostgreSQL ``SELECT ... FOR UPDATE`` on its row (inserted first,
empty, so there is a row to lock), SQLite ``BEGIN IMMEDIATE`` (the whole file). A row whose body
is NULL is no document. A damaged document is moved aside to ``<name>.corrupt-<stamp>``, never
deleted. A database error raises: a read that fails is never an empty document.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from sweep_core.state.db import engine_for, space_of, state_url

log = logging.getLogger(__name__)
metadata = sa.MetaData()
documents = sa.Table(
    "sweep_state_documents",  # created by migrations/v0001_documents.py
    metadata,
    sa.Column("space", sa.Text(), primary_key=True),
    sa.Column("name", sa.Text(), primary_key=True),
    sa.Column("body", sa.Text(), nullable=True),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Documents:
    """The documents of one space, inside one transaction that holds the lock."""

    def __init__(self, conn: sa.Connection, space: str) -> None:
        self.conn, self.space = conn, space

    def _key(self, name: str) -> sa.ColumnElement[bool]:
        return sa.and_(documents.c.space == self.space, documents.c.name == name)

    def lock(self, name: str) -> None:
        """Hold document ``name``'s lock until the transaction ends (SQLite: held already, the whole file)."""
        if self.conn.dialect.name != "postgresql":
            return
        self.conn.execute(  # a row to lock even before the first write
            postgresql.insert(documents)
            .values(space=self.space, name=name, body=None, updated_at=_now())
            .on_conflict_do_nothing(index_elements=[documents.c.space, documents.c.name])
        )
        self.conn.execute(sa.select(documents.c.name).where(self._key(name)).with_for_update())

    def read(self, name: str) -> str | None:
        """The document's JSON text; None when there is none."""
        return self.conn.execute(sa.select(documents.c.body).where(self._key(name))).scalar_one_or_none()

    def write(self, name: str, body: str | None) -> None:
        """Replace the document (None: no document, the row kept)."""
        insert = postgresql.insert if self.conn.dialect.name == "postgresql" else sqlite.insert
        stmt = insert(documents).values(space=self.space, name=name, body=body, updated_at=_now())
        self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[documents.c.space, documents.c.name],
                set_={"body": stmt.excluded.body, "updated_at": stmt.excluded.updated_at},
            )
        )

    def names(self, prefix: str = "") -> list[str]:
        """The names of the documents held (a body), those starting with ``prefix``."""
        rows = self.conn.execute(
            sa.select(documents.c.name).where(documents.c.space == self.space, documents.c.body.is_not(None))
        )
        return sorted(n for (n,) in rows if n.startswith(prefix))

    def move_aside(self, name: str, why: str, notes: list[str] | None) -> str:
        """Keep an unusable document as ``<name>.corrupt-<stamp>`` (never deleted); a warning and a note."""
        aside = f"{name}.corrupt-{_now():%Y%m%dT%H%M%S%fZ}"
        self.write(aside, self.read(name))
        self.write(name, None)
        note = f"sweep history {name} (state of {self.space}) is unusable ({why}): moved aside to {aside}, not used"
        log.warning("%s", note)
        if notes is not None:
            notes.append(note)
        return aside


@contextmanager
def locked(run_log_dir: str | Path, name: str, url: str | None = None) -> Iterator[Documents]:
    """One transaction over the space of ``run_log_dir`` holding document ``name``'s lock: committed
    when the block ends, rolled back (nothing written) when it raises."""
    engine = engine_for(url or state_url(run_log_dir))
    space = space_of(run_log_dir)
    with engine.begin() as conn:  # SQLite: BEGIN IMMEDIATE
        docs = Documents(conn, space)
        docs.lock(name)
        yield docs


def read_document(run_log_dir: str | Path, name: str) -> str | None:
    """One document's text as stored (None: none), under its lock."""
    with locked(run_log_dir, name) as docs:
        return docs.read(name)


def write_document(run_log_dir: str | Path, name: str, body: str | None) -> None:
    """Replace one document as is (None: remove it), under its lock (the importer, tests)."""
    with locked(run_log_dir, name) as docs:
        docs.write(name, body)


def document_names(run_log_dir: str | Path, prefix: str = "") -> list[str]:
    with locked(run_log_dir, "") as docs:
        return docs.names(prefix)
