"""A job's acts and claims as rows of their own: ``sweep_state_acts`` (one per act, ``seq`` its place
in the job's list) and ``sweep_state_claims`` (one per hand-off kind given, the run that claimed
it), taken out of every job row's JSON body of every generation (``now``, ``before``,
``corrupt-<stamp>``) once. A job row that is not an object with an ``acts`` list and a ``handoffs``
object of strings is left as it is: the store reads it as damaged and moves it aside (nothing lost).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from alembic import op

from sweep_core.state.rows import split_body

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_jobs = sa.table(
    "sweep_state_jobs",
    sa.column("space", sa.Text()),
    sa.column("gen", sa.Text()),
    sa.column("job_key", sa.Text()),
    sa.column("body", sa.Text()),
)
_BATCH = 1000  # job rows per statement


def upgrade() -> None:
    key = [sa.Column(n, sa.Text(), nullable=False) for n in ("space", "gen", "job_key")]
    op.create_table(
        "sweep_state_acts",
        *key,
        sa.Column("seq", sa.Integer(), nullable=False),  # its place in the job's acts, oldest first
        sa.Column("body", sa.Text(), nullable=False),  # the act's JSON object
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("space", "gen", "job_key", "seq", name="sweep_state_acts_pk"),
    )
    op.create_table(
        "sweep_state_claims",
        *[sa.Column(n, sa.Text(), nullable=False) for n in ("space", "gen", "job_key")],
        sa.Column("kind", sa.Text(), nullable=False),  # the hand-off kind ("cleanup", "upload#2", ...)
        sa.Column("run_id", sa.Text(), nullable=False),  # the run that claimed it
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("space", "gen", "job_key", "kind", name="sweep_state_claims_pk"),
    )
    conn = op.get_bind()
    now = dt.datetime.now(dt.UTC)
    q = sa.select(_jobs.c.space, _jobs.c.gen, _jobs.c.job_key, _jobs.c.body).where(_jobs.c.body.is_not(None))
    cores, act_rows, claim_rows = [], [], []
    for space, gen, job_key, body in conn.execute(q).all():
        part = split_body(body)
        if part is None:
            continue
        ids = {"space": space, "gen": gen, "job_key": job_key}
        cores.append({"s": space, "g": gen, "k": job_key, "b": part.core})
        act_rows += [{**ids, "seq": n, "body": text, "updated_at": now} for n, text in enumerate(part.acts)]
        claim_rows += [{**ids, "kind": k, "run_id": r, "updated_at": now} for k, r in part.claims.items()]
    update = (
        sa.update(_jobs)
        .where(
            _jobs.c.space == sa.bindparam("s"), _jobs.c.gen == sa.bindparam("g"), _jobs.c.job_key == sa.bindparam("k")
        )
        .values(body=sa.bindparam("b"))
    )
    acts = sa.table(
        "sweep_state_acts", *[sa.column(n) for n in ("space", "gen", "job_key", "seq", "body", "updated_at")]
    )
    claims = sa.table(
        "sweep_state_claims", *[sa.column(n) for n in ("space", "gen", "job_key", "kind", "run_id", "updated_at")]
    )
    for stmt, rows in ((update, cores), (sa.insert(acts), act_rows), (sa.insert(claims), claim_rows)):
        for i in range(0, len(rows), _BATCH):
            conn.execute(stmt, rows[i : i + _BATCH])


def downgrade() -> None:
    raise NotImplementedError("the act and claim rows are not put back into the job rows")
