"""The table of named JSON documents (the ledger, the ledger before the latest run, the cleanup backlog).

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweep_state_documents",
        sa.Column("space", sa.Text(), nullable=False),  # str(run_log_dir)
        sa.Column("name", sa.Text(), nullable=False),  # ledger.json, ledger.json.corrupt-<stamp>, ...
        sa.Column("body", sa.Text(), nullable=True),  # the JSON text; NULL: no document (a row to lock)
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("space", "name", name="sweep_state_documents_pk"),
    )


def downgrade() -> None:
    op.drop_table("sweep_state_documents")
