"""The HF chain's state as rows: ``sweep_state_chain_cells``, one per cell (``<series>/<cell>``) and
run-log directory, its CellState as JSON (it was the Airflow Variable ``sweep_hf_chain``, moved in
once by the chain's own task: sweep_operators.chain_tasks).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweep_state_chain_cells",
        sa.Column("space", sa.Text(), nullable=False),  # the run-log directory (sweep_core.state.db.space_of)
        sa.Column("cell", sa.Text(), nullable=False),  # "<series>/<cell>"
        sa.Column("body", sa.Text(), nullable=False),  # CellState.to_dict() as JSON
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("space", "cell", name="sweep_state_chain_cells_pk"),
    )


def downgrade() -> None:
    op.drop_table("sweep_state_chain_cells")
