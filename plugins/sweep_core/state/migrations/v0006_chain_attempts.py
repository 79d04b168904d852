"""The HF chain's failed leg jobs as kernel attempt rows, written once: every stored cell's
``failed`` text (``"<leg>:<id>,…"``, as CellState wrote it until 0006) becomes a list of rows, one
per entry in its order, each as kernel.attempt ``to_row`` writes a failed leg today: kind
``chain_<leg>``, its attempt number per leg, ``job``, outcome ``failed`` and its act (an ``sbatch``
on the series' cluster for the cell's SFT job; the cluster is known here only for a found series,
``found@<cluster>``, else left out). An entry that is not ``<leg>:<id>`` is kept in its row with
``unreadable`` and its text (``entry``): it reads as UNKNOWN with the reason, is never dropped and
never counted as a failure. ``""`` (an escalation stored with no failure) becomes ``[]``.

``cells_as_rows`` is also how ``state.cells.move_in`` reads an earlier version's Variable. A row
that is not a JSON object is left as it is (the store's reader says why); one already holding a
list is not touched.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import json
from typing import Any, Final

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

UNREADABLE: Final = "unreadable"  # kernel.attempt.UNREADABLE
FOUND: Final = "found@"  # chain.plan.FOUND: a found series is named found@<cluster>
_BATCH = 5000  # rows a page


def failed_rows(text: str, sft_job: str, cluster: str) -> list[dict[str, str]]:
    """A cell's ``failed`` text -> its rows (frozen: the parsing of CellState before 0006)."""
    out: list[dict[str, str]] = []
    seen: dict[str, int] = {}
    for entry in filter(None, text.split(",")):
        leg, sep, jid = entry.partition(":")
        if not (sep and leg and jid):
            out.append({"entry": entry, UNREADABLE: f"failed leg entry {entry[:60]!r} is not <leg>:<id>"})
            continue
        kind = f"chain_{leg}"
        seen[kind] = seen.get(kind, 0) + 1
        row = {"kind": kind, "attempt": str(seen[kind]), "job": jid, "outcome": "failed"}
        row |= {"act": "sbatch", "target": sft_job} | ({"act_cluster": cluster} if cluster else {})
        out.append(row)
    return out


def cell_as_rows(key: str, cell: Any) -> dict[str, Any] | None:
    """Cell ``key`` (``<series>/<cell>``) with its ``failed`` text as rows; None when there is
    nothing to rewrite (not an object, no ``failed`` text)."""
    if not isinstance(cell, dict) or not isinstance(cell.get("failed"), str):
        return None
    series = key.partition("/")[0]
    cluster = series.removeprefix(FOUND) if series.startswith(FOUND) else ""
    return {**cell, "failed": failed_rows(cell["failed"], str(cell.get("sft_job", "")), cluster)}


def cells_as_rows(cells: dict[str, Any]) -> dict[str, Any]:
    """Every cell of an earlier version's state with its ``failed`` as rows."""
    return {k: cell_as_rows(k, v) or v for k, v in cells.items()}


_cells = sa.table("sweep_state_chain_cells", sa.column("space"), sa.column("cell"), sa.column("body"))


def upgrade() -> None:
    """Every cell row, one page at a time in key order (memory stays that of one page)."""
    conn = op.get_bind()
    t = _cells
    update = sa.update(t).where(t.c.space == sa.bindparam("s"), t.c.cell == sa.bindparam("c"))
    update = update.values(body=sa.bindparam("b"))
    last: tuple[str, str] | None = None
    while True:
        q = sa.select(t.c.space, t.c.cell, t.c.body).order_by(t.c.space, t.c.cell).limit(_BATCH)
        if last is not None:
            q = q.where(sa.tuple_(t.c.space, t.c.cell) > sa.tuple_(*last))
        page = conn.execute(q).all()
        if not page:
            return
        changed = []
        for space, cell, body in page:
            try:
                got = cell_as_rows(cell, json.loads(body))
            except (ValueError, RecursionError):
                continue  # not JSON: the store's reader names the cell, as before
            if got is not None:
                changed.append({"s": space, "c": cell, "b": json.dumps(got, sort_keys=True)})
        if changed:
            conn.execute(update, changed)
        last = (page[-1][0], page[-1][1])


def downgrade() -> None:
    raise NotImplementedError("the cells keep their attempt rows")
