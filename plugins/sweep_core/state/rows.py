"""The ledger as rows: one row per job (``sweep_state_jobs``, keyed by space and job key, its entry's
JSON but its acts and claims as body), its acts and claims (below) and one for the rest of the ledger (``sweep_state_ledger``: windows, clusters, series,
relaunch counts, digests told, ...), in generations: ``now``; ``before`` (what the latest fold
folded against, kept for a re-run of it: the ``before`` ledger row and, copy-on-write, the body each
job row had before it was first written since that fold, NULL when it had none); ``corrupt-<stamp>``
(an unusable row moved aside, never deleted).

Locks (PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` takes the whole file): a whole-ledger transaction
(a fold, a load) holds the ledger row FOR UPDATE; a claim holds it FOR SHARE (claims never wait on
each other for it, a fold waits for them and they for it) and its own job rows FOR UPDATE, so two
claims of different jobs never wait on each other and two of one job run one after the other.
A row to lock is inserted first (body NULL: no job, no ledger) when there is none yet.

A job's acts and claims are rows of their own (schema 0004): ``sweep_state_acts`` (one per act, in
order of ``seq``) and ``sweep_state_claims`` (one per hand-off kind given: the run that claimed it),
beside its row in ``sweep_state_jobs`` (the rest of its entry). The store sees a job as one JSON
text (``join_body``); a write splits it again (``split_body``) and writes only the act and claim
rows that changed. A job row that still holds ``acts`` or ``handoffs`` inline (a format before 0004,
written past the migration) reads as damaged: the store moves it aside, never reads it as a job.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
acts = sa.Table(  # created by migrations/v0004_act_rows.py
    "sweep_state_acts",
    metadata,
    sa.Column("space", sa.Text(), primary_key=True),
    sa.Column("gen", sa.Text(), primary_key=True),
    sa.Column("job_key", sa.Text(), primary_key=True),
    sa.Column("seq", sa.Integer(), primary_key=True),
    sa.Column("body", sa.Text(), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)
claims = sa.Table(
    "sweep_state_claims",
    metadata,
    sa.Column("space", sa.Text(), primary_key=True),
    sa.Column("gen", sa.Text(), primary_key=True),
    sa.Column("job_key", sa.Text(), primary_key=True),
    sa.Column("kind", sa.Text(), primary_key=True),
    sa.Column("run_id", sa.Text(), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)
INLINE = ("acts", "handoffs")  # the entry fields that live in rows of their own


@dataclass
class Split:
    """One job's text as rows: its job row's body, its acts' texts in order, its claims."""

    core: str
    acts: list[str] = field(default_factory=list)
    claims: dict[str, str] = field(default_factory=dict)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True)


def split_body(body: str) -> Split | None:
    """A job's JSON text as its rows; None when it is not an object with a list ``acts`` and an
    object of strings ``handoffs`` (kept whole in the job row: the store reads it as damaged)."""
    try:
        raw = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(raw, dict):
        return None
    got_acts, got_claims = raw.pop("acts", []), raw.pop("handoffs", {})
    if not isinstance(got_acts, list) or not isinstance(got_claims, dict):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in got_claims.items()):
        return None
    return Split(_dumps(raw), [_dumps(a) for a in got_acts], dict(got_claims))


def join_body(core: str | None, act_texts: list[str], claimed: Mapping[str, str]) -> str | None:
    """The job's JSON text from its rows (None: a placeholder). A job row not JSON is returned as
    it is; one holding ``acts``/``handoffs`` inline, or an act row not JSON, gets ``acts`` set to
    why (not a list: the store's check of the entry fails, names the job and moves it aside) and
    what it held kept under ``unread``, so the copy moved aside loses nothing."""
    return _join(core, act_texts, claimed)[0]


def _join(core: str | None, act_texts: list[str], claimed: Mapping[str, str]) -> tuple[str | None, bool]:
    """join_body, and whether the text is sound (split_body of it gives these rows back)."""
    if core is None:
        return None, False
    try:
        raw = json.loads(core)
    except (ValueError, RecursionError):
        return core, False
    if not isinstance(raw, dict):
        return core, False
    if any(k in raw for k in INLINE):
        why = "acts/handoffs inline in the job row (a format before schema 0004)"
        unread = {k: raw.pop(k) for k in INLINE if k in raw}
        return _dumps({**raw, "acts": why, "handoffs": dict(claimed), "unread": unread}), False
    try:
        got = [json.loads(t) for t in act_texts]
    except (ValueError, RecursionError):
        why = "an act row not JSON"
        return _dumps({**raw, "acts": why, "handoffs": dict(claimed), "unread": {"acts": act_texts}}), False
    return _dumps({**raw, "acts": got, "handoffs": dict(claimed)}), True


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _chunks(keys: Iterable[str], size: int = _CHUNK) -> Iterable[list[str]]:
    todo = list(keys)
    for i in range(0, len(todo), size):
        yield todo[i : i + size]


class LedgerRows:
    """The ledger rows of one space inside one transaction."""

    def __init__(self, conn: sa.Connection, space: str) -> None:
        self.conn, self.space = conn, space
        self._read: dict[str, Split] = {}  # a job text this transaction joined -> its rows as read
        self._before_empty = False  # start_before emptied ``before`` and no job row went there since
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
    def _core(self, gen: str, keys: Iterable[str] | None, nulls: bool) -> dict[str, str | None]:
        q = sa.select(jobs.c.job_key, jobs.c.body).where(jobs.c.space == self.space, jobs.c.gen == gen)
        if not nulls:
            q = q.where(jobs.c.body.is_not(None))
        if keys is None:
            return {k: b for k, b in self.conn.execute(q)}
        out: dict[str, str | None] = {}
        for part in _chunks(keys):
            out.update({k: b for k, b in self.conn.execute(q.where(jobs.c.job_key.in_(part)))})
        return out

    def _acts(self, gen: str, keys: Iterable[str] | None) -> dict[str, list[tuple[int, str]]]:
        """Job key -> its act rows (seq, text) in order."""
        q = sa.select(acts.c.job_key, acts.c.seq, acts.c.body).where(acts.c.space == self.space, acts.c.gen == gen)
        parts: Iterable[Any] = [None] if keys is None else _chunks(keys)
        out: dict[str, list[tuple[int, str]]] = {}
        for part in parts:
            sel = q if part is None else q.where(acts.c.job_key.in_(part))
            for k, seq, body in self.conn.execute(sel.order_by(acts.c.job_key, acts.c.seq)):
                out.setdefault(k, []).append((seq, body))
        return out

    def _claims(self, gen: str, keys: Iterable[str] | None) -> dict[str, dict[str, str]]:
        """Job key -> hand-off kind -> the run that claimed it."""
        q = sa.select(claims.c.job_key, claims.c.kind, claims.c.run_id).where(
            claims.c.space == self.space, claims.c.gen == gen
        )
        parts: Iterable[Any] = [None] if keys is None else _chunks(keys)
        out: dict[str, dict[str, str]] = {}
        for part in parts:
            sel = q if part is None else q.where(claims.c.job_key.in_(part))
            for k, kind, run in self.conn.execute(sel):
                out.setdefault(k, {})[kind] = run
        return out

    def jobs(self, gen: str = NOW, keys: Iterable[str] | None = None, *, nulls: bool = False) -> dict[str, str | None]:
        """Job key -> its JSON text of ``gen`` (join_body of its rows; all, or those of ``keys``);
        NULL bodies only with ``nulls``."""
        wanted = None if keys is None else sorted(set(keys))
        core = self._core(gen, wanted, nulls)
        live = [k for k, b in core.items() if b is not None]
        if not live:
            return core
        got_acts, got_claims = self._acts(gen, wanted), self._claims(gen, wanted)
        out: dict[str, str | None] = {}
        for k, b in core.items():
            texts, claimed = [t for _, t in got_acts.get(k, [])], got_claims.get(k, {})
            out[k], sound = _join(b, texts, claimed)
            if sound and b is not None and out[k] is not None:
                self._read[out[k]] = Split(b, texts, claimed)
        return out

    def split(self, text: str) -> Split | None:
        """split_body of a job text, from the rows it was joined from when this transaction read it."""
        got = self._read.get(text)
        return got if got is not None else split_body(text)

    def acted(self, kinds: Iterable[str], gen: str = NOW) -> set[str]:
        """Keys of the jobs holding an act of one of ``kinds`` (their act rows read, no job row; an
        act row not JSON counts: the job's read finds it damaged)."""
        want = set(kinds)
        if not want:
            return set()
        q = sa.select(acts.c.job_key, acts.c.body).where(
            acts.c.space == self.space,
            acts.c.gen == gen,
            sa.or_(*[acts.c.body.like(f'%"kind"%"{k}"%') for k in sorted(want)]),  # a superset, checked below
        )
        out = set()
        for key, body in self.conn.execute(q):
            try:
                act = json.loads(body)
            except (ValueError, RecursionError):
                out.add(key)
                continue
            if not isinstance(act, dict) or act.get("kind") in want:
                out.add(key)
        return out

    def act_texts(self, gen: str = NOW) -> dict[str, list[str]]:
        """Job key -> the texts of its act rows in order, every job of ``gen`` (no job row read)."""
        return {k: [t for _, t in got] for k, got in self._acts(gen, None).items()}

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

    def write_jobs(self, changed: Mapping[str, str | Split | None], old: Mapping[str, str | None]) -> None:
        """Write the ``changed`` jobs (None: the job is gone, its rows deleted), given their texts as
        read (``old``: as stored now). While a ``before`` is kept, each job's rows before its first
        write since that fold are copied first (in the database: no row is sent back and forth)."""
        if not changed:
            return
        if self.top(BEFORE) is not None:
            touched = [k for k, b in changed.items() if b is not None or old.get(k) is not None]
            kept = set() if self._before_empty else set(self._core(BEFORE, touched, True))
            self._copy_before([k for k in touched if k not in kept and old.get(k) is not None])
            self.put_jobs({k: None for k in touched if k not in kept and old.get(k) is None}, BEFORE, fresh=True)
        self.put_jobs({k: b for k, b in changed.items() if b is not None}, NOW, old)
        self.delete_jobs([k for k, b in changed.items() if b is None], NOW)

    def _copy_before(self, keys: list[str]) -> None:
        """The ``now`` rows of these jobs (job, act and claim rows) copied as they are to ``before``."""
        self._before_empty = self._before_empty and not keys
        size = _CHUNK * 10 if self.pg else _CHUNK  # no cap on PostgreSQL's IN list but its 65,535 parameters
        for part in _chunks(keys, size):
            for table in (jobs, acts, claims):
                names = [c.name for c in table.columns if c.name != "gen"]
                sel = sa.select(*[table.c[n] for n in names], sa.literal(BEFORE)).where(
                    table.c.space == self.space, table.c.gen == NOW, table.c.job_key.in_(part)
                )
                self.conn.execute(sa.insert(table).from_select([*names, "gen"], sel))

    def put_jobs(
        self,
        bodies: Mapping[str, str | Split | None],
        gen: str,
        old: Mapping[str, str | None] | None = None,
        *,
        fresh: bool = False,
    ) -> None:
        """Upsert these jobs of ``gen`` as given (a text, or already as rows; no copy kept): the job row,
        and the act and claim rows that differ from those stored (``old``: the texts as read, so that a
        job whose acts and claims did not change costs no read of them; ``fresh``: none are stored,
        nothing to read)."""
        if not bodies:
            return
        if gen == BEFORE:
            self._before_empty = False
        now = _now()
        parts = {
            k: (b if isinstance(b, Split) else self.split(b) if b is not None else None) for k, b in bodies.items()
        }
        stmt = self._insert(jobs)
        self.conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[jobs.c.space, jobs.c.gen, jobs.c.job_key],
                set_={"body": stmt.excluded.body, "updated_at": stmt.excluded.updated_at},
            ),
            [
                {"space": self.space, "gen": gen, "job_key": k, "body": p.core if p else bodies[k], "updated_at": now}
                for k, p in parts.items()
            ],
        )
        was = {k: self.split(t) for k, t in (old or {}).items() if k in parts and t is not None}
        new_acts = {k: p.acts if p else [] for k, p in parts.items()}
        new_claims = {k: p.claims if p else {} for k, p in parts.items()}
        if old is not None:  # only the jobs whose acts (claims) differ from those read
            new_acts = {k: v for k, v in new_acts.items() if (w := was.get(k)) is None or w.acts != v}
            new_claims = {k: v for k, v in new_claims.items() if (w := was.get(k)) is None or w.claims != v}
        self._put_acts(gen, new_acts, now, fresh)
        self._put_claims(gen, new_claims, now, fresh)

    def _put_acts(self, gen: str, new: Mapping[str, list[str]], now: dt.datetime, fresh: bool) -> None:
        """Each job's act rows made ``new`` (its acts' texts in order): rows kept as they are where the
        texts match, an act changed in place keeps its ``seq``, new ones appended; anything else
        (an act inserted between two) renumbers that job's acts."""
        if not new:
            return
        stored = {} if fresh else self._acts(gen, list(new))
        drop: list[dict[str, Any]] = []
        put: list[dict[str, Any]] = []
        for key, texts in new.items():
            have = stored.get(key, [])
            seqs, olds = [s for s, _ in have], [t for _, t in have]
            if olds == texts:
                continue
            mine_drop: list[int] = []
            mine_put: list[tuple[int, str]] = []
            ok = True
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=olds, b=texts, autojunk=False).get_opcodes():
                if tag == "delete":
                    mine_drop += seqs[i1:i2]
                elif tag == "replace" and i2 - i1 == j2 - j1:  # changed in place (a claim act filled)
                    mine_put += list(zip(seqs[i1:i2], texts[j1:j2], strict=True))
                elif tag == "insert" and i1 == len(olds):  # appended
                    mine_put += [(max(seqs, default=-1) + 1 + n, t) for n, t in enumerate(texts[j1:j2])]
                elif tag != "equal":
                    ok = False
                    break
            if not ok:  # renumbered: every old row goes, the list is written anew
                mine_drop, mine_put = seqs, list(enumerate(texts))
            drop += [{"k": key, "v": s} for s in mine_drop]
            put += [
                {"space": self.space, "gen": gen, "job_key": key, "seq": s, "body": t, "updated_at": now}
                for s, t in mine_put
            ]
        self._sync(acts, acts.c.seq, gen, drop, put)

    def _put_claims(self, gen: str, new: Mapping[str, Mapping[str, str]], now: dt.datetime, fresh: bool) -> None:
        """Each job's claim rows made ``new`` (kind -> run): only the rows that differ written."""
        if not new:
            return
        stored = {} if fresh else self._claims(gen, list(new))
        drop = [{"k": k, "v": kind} for k, mine in new.items() for kind in stored.get(k, {}).keys() - mine.keys()]
        put = [
            {"space": self.space, "gen": gen, "job_key": k, "kind": kind, "run_id": run, "updated_at": now}
            for k, mine in new.items()
            for kind, run in mine.items()
            if stored.get(k, {}).get(kind) != run
        ]
        self._sync(claims, claims.c.kind, gen, drop, put)

    def _sync(
        self, table: sa.Table, last: sa.Column, gen: str, drop: list[dict[str, Any]], put: list[dict[str, Any]]
    ) -> None:
        """A job's rows of ``table`` (keyed space, gen, job_key, ``last``) made so: the ``drop`` rows
        ({"k": job key, "v": the ``last`` value}) deleted, the ``put`` rows upserted."""
        if drop:
            self.conn.execute(
                sa.delete(table).where(
                    table.c.space == self.space,
                    table.c.gen == gen,
                    table.c.job_key == sa.bindparam("k"),
                    last == sa.bindparam("v"),
                ),
                drop,
            )
        if put:
            stmt = self._insert(table)
            self.conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=[table.c.space, table.c.gen, table.c.job_key, last],
                    set_={c.name: stmt.excluded[c.name] for c in table.columns if not c.primary_key},
                ),
                put,
            )

    def delete_jobs(self, keys: Iterable[str], gen: str) -> None:
        """These jobs of ``gen`` gone: their job, act and claim rows."""
        for part in _chunks(keys):
            for table in (jobs, acts, claims):
                self.conn.execute(
                    sa.delete(table).where(table.c.space == self.space, table.c.gen == gen, table.c.job_key.in_(part))
                )

    def start_before(self, body: str | None) -> None:
        """A new fold: the ledger row of ``before`` replaced (None: none kept), its job rows dropped
        (copy-on-write anew)."""
        for table in (jobs, acts, claims):
            self.conn.execute(sa.delete(table).where(table.c.space == self.space, table.c.gen == BEFORE))
        self.write_top(body, BEFORE)
        self._before_empty = True  # no job row of it to read before a copy

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
