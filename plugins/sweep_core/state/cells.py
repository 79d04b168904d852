"""The HF chain's state as rows of ``sweep_state_chain_cells``: one per cell (``<series>/<cell>``)
of a run-log directory's space, its CellState as a JSON object. A save writes only the cells whose
JSON changed, in one transaction. A row that is not a JSON object raises naming the cell: the chain
advances nothing on a state it cannot read (never a fresh cell that would submit a leg again).

``move_in``: the state an earlier version kept in the Airflow Variable ``sweep_hf_chain`` (its
JSON text) moved into an empty space once, by ``sweep-state upgrade`` (sweep_operators.state_cli),
its cells' failed leg jobs written as rows as migration 0006 writes the stored ones.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from sweep_core.state.db import engine_for, space_of, state_url

metadata = sa.MetaData()
cells = sa.Table(  # created by migrations/v0003_chain_cells.py
    "sweep_state_chain_cells",
    metadata,
    sa.Column("space", sa.Text(), primary_key=True),
    sa.Column("cell", sa.Text(), primary_key=True),
    sa.Column("body", sa.Text(), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)


class CellStateError(RuntimeError):
    """A stored cell that is not a JSON object: which, and why."""


def _read(conn: sa.Connection, space: str) -> dict[str, str]:
    q = sa.select(cells.c.cell, cells.c.body).where(cells.c.space == space)
    return {c: b for c, b in conn.execute(q)}


def load_cells(run_log_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Every cell's state of ``run_log_dir``'s space ({} when none is stored)."""
    with engine_for(state_url(run_log_dir)).begin() as conn:
        stored = _read(conn, space_of(run_log_dir))
    out = {}
    for cell, body in stored.items():
        try:
            value = json.loads(body)
        except ValueError as exc:
            raise CellStateError(
                f"chain cell {cell!r} is not JSON ({exc}): fix or delete its row; nothing advanced"
            ) from exc
        if not isinstance(value, dict):
            raise CellStateError(f"chain cell {cell!r} is not a JSON object: fix or delete its row; nothing advanced")
        out[cell] = value
    return out


def save_cells(run_log_dir: str | Path, state: Mapping[str, Mapping[str, Any]], *, only_if_empty: bool = False) -> int:
    """Write the cells of ``state`` whose JSON differs from the stored one (cells not in ``state`` are
    kept); how many were written. ``only_if_empty``: write nothing (-1) when the space holds cells."""
    space = space_of(run_log_dir)
    with engine_for(state_url(run_log_dir)).begin() as conn:  # SQLite: BEGIN IMMEDIATE
        stored = _read(conn, space)
        if only_if_empty and stored:
            return -1
        now = dt.datetime.now(dt.UTC)
        rows = [
            {"space": space, "cell": cell, "body": text, "updated_at": now}
            for cell, value in state.items()
            if stored.get(cell) != (text := json.dumps(dict(value), sort_keys=True))
        ]
        if rows:
            insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
            stmt = insert(cells)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=[cells.c.space, cells.c.cell],
                    set_={"body": stmt.excluded.body, "updated_at": stmt.excluded.updated_at},
                ),
                rows,
            )
    return len(rows)


def move_in(run_log_dir: str | Path, raw: object) -> int:
    """The chain's state as an earlier version kept it (the Variable's value: JSON text of an object
    of cells) written into ``run_log_dir``'s space, which must hold no cell; how many cells. Raises
    CellStateError (nothing written) when it is not that, or the space holds cells already."""
    from sweep_core.state.migrations.v0006_chain_attempts import cells_as_rows  # the one-time path only

    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as exc:
        raise CellStateError(f"it is not JSON ({exc}): fix or delete it") from exc
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise CellStateError("it is not an object of cells: fix or delete it")
    if save_cells(run_log_dir, cells_as_rows(data), only_if_empty=True) < 0:
        raise CellStateError("it and the state database both hold the chain's state: compare them, then delete it")
    return len(data)
