"""The ledger as rows: one row per job (``sweep_state_jobs``, keyed by space and job key, its entry's
JSON as body) and one for the rest of the ledger (``sweep_state_ledger``: windows, clusters, series,
relaunch counts, digests told, ...), in generations: ``now``; ``before`` (what the latest fold
folded against, kept for a re-run of it: the ``before`` ledger row and, copy-on-write, the body each
job row had before it was first written since that fold, NULL when it had none); ``corrupt-<stamp>``
(an unusable row moved aside, never deleted).

Locks (PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` takes the whole file): a whole-ledger transaction
(a fold, a load) holds the ledger row FOR UPDATE; a claim holds it FOR SHARE (claims never wait on
each other for it, a fold waits for them and they for it) and its own job rows FOR UPDATE, so two
claims of different jobs never wait on each other and two of one job run one after the other.
A row to lock is inserted first (body NULL: no job, no ledger) when there is none yet.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

NOW, BEFORE = "now", "before"
_CHUNK = 500  # keys per IN (...) list

metadata = sa.MetaData()
ledgers = sa.Table(  # created by migrations/v0002_ledger_rows.py
    "sweep_state_ledger",
    metadata,
    sa.Column("space", sa.Text(), primary_key=True),
    sa.Column("gen", sa.Text(), primary_key=True),
    sa.Column("body", sa.Text(), nullable=True),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)
jobs = sa.Table(
    "sweep_state_jobs",
    metadata,
    sa.Column("space", sa.Text(), primary_key=True),
    sa.Column("gen", sa.Text(), primary_key=True),
    sa.Column("job_key", sa.Text(), primary_key=True),
    sa.Column("body", sa.Text(), nullable=True),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _chunks(keys: Iterable[str]) -> Iterable[list[str]]:
    todo = list(keys)
    for i in range(0, len(todo), _CHUNK):
        yield todo[i : i + _CHUNK]


class LedgerRows:
    """The ledger rows of one space inside one transaction."""

    def __init__(self, conn: sa.Connection, space: str) -> None:
        self.conn, self.space = conn, space
        self.pg = conn.dialect.name == "postgresql"
        self._insert = postgresql.insert if self.pg else sqlite.insert

    # -- the ledger row ------------------------------------------------------------------------
    def _top_key(self, gen: str) -> sa.ColumnElement[bool]:
        return sa.and_(ledgers.c.space == self.space, ledgers.c.gen == gen)

    def lock_top(self, *, shared: bool) -> None:
        """Hold the ledger row: FOR UPDATE (a whole-ledger transaction) or FOR SHARE (a claim)."""
        if not self.pg:
            return
        q = sa.select(ledgers.c.gen).where(self._top_key(NOW)).with_for_update(read=shared)
        if self.conn.execute(q).first() is None:
            self.conn.execute(
                self._insert(ledgers)
                .values(space=self.space, gen=NOW, body=None, updated_at=_now())
                .on_conflict_do_nothing(index_elements=[ledgers.c.space, ledgers.c.gen])
            )
            self.conn.execute(q)

    def top(self, gen: str = NOW) -> str | None:
        """The ledger row's JSON text of ``gen``; None when there is none."""
        return self.conn.execute(sa.select(ledgers.c.body).where(self._top_key(gen))).scalar_one_or_none()

    def write_top(self, body: str | None, gen: str = NOW) -> None:
        stmt = self._insert(ledgers).values(space=self.space, gen=gen, body=body, updated_at=_now())
        self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[ledgers.c.space, ledgers.c.gen],
                set_={"body": stmt.excluded.body, "updated_at": stmt.excluded.updated_at},
            )
        )

    # -- the job rows --------------------------------------------------------------------------
    def jobs(self, gen: str = NOW, keys: Iterable[str] | None = None, *, nulls: bool = False) -> dict[str, str | None]:
        """Job key -> body of ``gen`` (all, or those of ``keys``); NULL bodies only with ``nulls``."""
        q = sa.select(jobs.c.job_key, jobs.c.body).where(jobs.c.space == self.space, jobs.c.gen == gen)
        if not nulls:
            q = q.where(jobs.c.body.is_not(None))
        if keys is None:
            return {k: b for k, b in self.conn.execute(q)}
        out: dict[str, str | None] = {}
        for part in _chunks(keys):
            out.update({k: b for k, b in self.conn.execute(q.where(jobs.c.job_key.in_(part)))})
        return out

    def lock_jobs(self, keys: Iterable[str]) -> tuple[dict[str, str], set[str]]:
        """Hold these job rows FOR UPDATE (a row inserted first where there is none): their bodies,
        and the keys whose row is only a placeholder (no job)."""
        wanted = sorted(set(keys))  # one order: two claims of overlapping sets never deadlock
        if self.pg and wanted:
            self.conn.execute(
                self._insert(jobs).on_conflict_do_nothing(index_elements=[jobs.c.space, jobs.c.gen, jobs.c.job_key]),
                [{"space": self.space, "gen": NOW, "job_key": k, "body": None, "updated_at": _now()} for k in wanted],
            )
            q = sa.select(jobs.c.job_key).where(jobs.c.space == self.space, jobs.c.gen == NOW)
            for part in _chunks(wanted):
                self.conn.execute(q.where(jobs.c.job_key.in_(part)).order_by(jobs.c.job_key).with_for_update())
        got = self.jobs(NOW, wanted, nulls=True)
        bodies = {k: b for k, b in got.items() if b is not None}
        return bodies, set(got) - set(bodies)

    def write_jobs(self, changed: Mapping[str, str | None], old: Mapping[str, str | None]) -> None:
        """Write the ``changed`` job rows (None: the job is gone, its row deleted). While a ``before``
        is kept, each row's body before its first write since that fold (``old``) is kept first."""
        if not changed:
            return
        keep = [
            {"space": self.space, "gen": BEFORE, "job_key": k, "body": old.get(k), "updated_at": _now()}
            for k, b in changed.items()
            if b is not None or old.get(k) is not None  # a placeholder let go: nothing to keep
        ]
        if keep and self.top(BEFORE) is not None:
            self.conn.execute(
                self._insert(jobs).on_conflict_do_nothing(index_elements=[jobs.c.space, jobs.c.gen, jobs.c.job_key]),
                keep,
            )
        self.put_jobs({k: b for k, b in changed.items() if b is not None}, NOW)
        self.delete_jobs([k for k, b in changed.items() if b is None], NOW)

    def put_jobs(self, bodies: Mapping[str, str | None], gen: str) -> None:
        """Upsert these rows of ``gen`` as given (no copy kept)."""
        if not bodies:
            return
        stmt = self._insert(jobs)
        self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[jobs.c.space, jobs.c.gen, jobs.c.job_key],
                set_={"body": stmt.excluded.body, "updated_at": stmt.excluded.updated_at},
            ),
            [
                {"space": self.space, "gen": gen, "job_key": k, "body": b, "updated_at": _now()}
                for k, b in bodies.items()
            ],
        )

    def delete_jobs(self, keys: Iterable[str], gen: str) -> None:
        for part in _chunks(keys):
            self.conn.execute(
                sa.delete(jobs).where(jobs.c.space == self.space, jobs.c.gen == gen, jobs.c.job_key.in_(part))
            )

    def start_before(self, body: str | None) -> None:
        """A new fold: the ledger row of ``before`` replaced (None: none kept), its job rows dropped
        (copy-on-write anew)."""
        self.conn.execute(sa.delete(jobs).where(jobs.c.space == self.space, jobs.c.gen == BEFORE))
        self.write_top(body, BEFORE)

    def move_aside(self, stamp: str, top: str | None, bad: Mapping[str, str]) -> str:
        """Keep unusable rows (the ledger row's text, job rows' bodies) as generation ``corrupt-<stamp>``."""
        gen = f"corrupt-{stamp}"
        if top is not None:
            self.write_top(top, gen)
        self.put_jobs(dict(bad), gen)
        return gen

    def generations(self) -> list[str]:
        """Every generation of this space's ledger row (``now``, ``before``, ``corrupt-...``)."""
        q = sa.select(ledgers.c.gen).where(ledgers.c.space == self.space)
        gens = set(self.conn.execute(q).scalars())
        q2 = sa.select(jobs.c.gen).where(jobs.c.space == self.space).distinct()
        return sorted(gens | set(self.conn.execute(q2).scalars()))
