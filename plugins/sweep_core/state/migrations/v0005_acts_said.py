"""Every stored attempt says its act and every cancel act what it did, written once, so that no
reader of the older formats stays on the live path:

- an attempt stored before it said its act (before ``act``/``target``/``act_cluster``) gets them,
  from its kind and what it did (the derivation the reader did on every read until 0005):
  the target and cluster are those of the job row it is stored on;
- a cancel or relaunch act stored before ``did`` gets it from the opening words of its text
  (``result``, as the act task of that time printed it);
- a cancel act whose text opens with none of those words is kept whole and marked ``unreadable``
  with the reason: it reads as UNKNOWN (kernel.attempt ``from_row``), is never dropped and no act
  is guessed for it. A relaunch with no text keeps no ``did`` (it never had an outcome);
- a job's cancel hand-off record (``cancel_handoff`` in its job row) stored before it kept the
  flag's ``severity`` gets it, read from its flag line (``[rule] SEVERITY …``; '' when the line is
  not one, as the reader of that time read it).

Every generation (``now``, ``before``, ``corrupt-<stamp>``) is rewritten; a row that is not a JSON
object of strings is left as it is (the store's reader says why).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

UNREADABLE: Final = "unreadable"  # kernel.attempt.UNREADABLE: why the migration could not read the act
_BATCH = 5000  # rows a page

# The act kinds as schema 0005 stores them (kernel.act.ActKind), by the kind an attempt was stored
# under; a cancel / relaunch is refined by what it did. Frozen here: the derivation of its time.
_BY_KIND: Final[dict[str, str]] = {
    "cancel": "scancel",
    "relaunch": "requeue",
    "upload": "sbatch",
    "consolidate": "sbatch",
    "consolidate_failed": "sbatch",
    "db_register": "command",
    "rm": "rm",
    "hub_check": "hub_check",
}
# A cancel / relaunch act's text (``result``) before ``did`` was stored: its opening -> what it did
# (handoffs.cancel.outcome's plain-text form of that time, the first that matches).
_DID_BY_TEXT: Final = (
    ("requeued", "requeued"),
    ("cancelled and relaunched", "relaunched"),
    ("cancelled; the ops.md relaunch command failed", "command failed"),
    ("cancelled", "cancelled"),
    ("stopped", "stopped"),
    ("left alone", "left alone"),
    ("UNKNOWN", "unknown"),
    ("outcome unknown", "error"),
)


_LINE: Final = re.compile(r"^\[([a-z][a-z0-9_]{0,63})\] ([A-Z]+) ")  # a flag line: "[rule] SEVERITY ..."
_SEVERITIES: Final = ("critical", "warn", "info")  # records.vocab.Severity of that time


def with_severity(body: str) -> str | None:
    """A job row's JSON with its cancel hand-off record's ``severity`` read from its flag line, when
    the record was stored without one; None when there is nothing to write (or it is not JSON)."""
    try:
        row = json.loads(body)
    except (ValueError, RecursionError):
        return None
    rec = row.get("cancel_handoff") if isinstance(row, dict) else None
    if not isinstance(rec, dict) or not rec or "severity" in rec:
        return None
    m = _LINE.match(rec.get("evidence", "")) if isinstance(rec.get("evidence"), str) else None
    severity = m.group(2).lower() if m and m.group(2).lower() in _SEVERITIES else ""
    return json.dumps({**row, "cancel_handoff": {**rec, "severity": severity}}, sort_keys=True)


def _act_kind(kind: str, did: str, new_job_id: str, job_id: str) -> str | None:
    if did == "stopped":
        return "stop"
    if kind == "relaunch" and (did in ("relaunched", "command failed") or (new_job_id and new_job_id != job_id)):
        return "sbatch"
    if kind.partition("_")[0] == "chain":
        return "sbatch"
    return _BY_KIND.get(kind)


def said(job_key: str, act: Any) -> dict[str, str] | None:
    """The act as schema 0005 stores it (``job_key``: ``<cluster>|<job id>`` of its job row); None
    when it is unchanged (it says both already, is a mark, or is not an object of strings)."""
    if not isinstance(act, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in act.items()):
        return None
    if UNREADABLE in act:
        return None
    cluster, _, job_id = job_key.partition("|")
    out = dict(act)
    kind = out.get("kind", "")
    if kind in ("cancel", "relaunch") and "did" not in out:
        text = out.get("result", "")
        did = next((d for head, d in _DID_BY_TEXT if text.startswith(head)), None)
        if did is not None:
            out["did"] = did
        elif kind == "cancel":
            why = f"a cancel stored before it said what it did, its text {text[:60]!r} opens with no word"
            return {**out, UNREADABLE: why + " an earlier version printed: check the job by hand"}
    if "act" not in out:
        got = _act_kind(kind, out.get("did", ""), out.get("new_job_id", ""), job_id)
        if got is not None:
            out |= {"act": got, "target": job_id} | ({"act_cluster": cluster} if cluster else {})
    return out if out != act else None


_ID = ("space", "gen", "job_key")
_acts = sa.table("sweep_state_acts", *(sa.column(n) for n in (*_ID, "seq", "body")))
_jobs = sa.table("sweep_state_jobs", *(sa.column(n) for n in (*_ID, "body")))


def _rewrite(conn: sa.Connection, table: sa.TableClause, key: tuple[str, ...], new: Callable[..., str | None]) -> None:
    """Every row of ``table`` whose body ``new(key values, body)`` changes (None = unchanged) written
    back, one page of rows at a time in key order: memory stays that of one page."""
    cols = [table.c[n] for n in key]
    update = (
        sa.update(table)
        .where(*(col == sa.bindparam(f"k{i}") for i, col in enumerate(cols)))
        .values(body=sa.bindparam("b"))
    )
    last: tuple[Any, ...] | None = None
    while True:
        q = sa.select(*cols, table.c.body).where(table.c.body.is_not(None)).order_by(*cols).limit(_BATCH)
        page = conn.execute(q if last is None else q.where(sa.tuple_(*cols) > sa.tuple_(*last))).all()
        if not page:
            return
        changed = [
            {**{f"k{i}": v for i, v in enumerate(ids)}, "b": got}
            for *ids, body in page
            if (got := new(ids, body)) is not None
        ]
        if changed:
            conn.execute(update, changed)
        last = tuple(page[-1][: len(key)])


def _act(ids: list[Any], body: str) -> str | None:
    try:
        got = said(ids[2], json.loads(body))
    except (ValueError, RecursionError):
        return None  # not JSON: the store's reader moves its job aside, as before
    return None if got is None else json.dumps(got, sort_keys=True)


def upgrade() -> None:
    conn = op.get_bind()
    _rewrite(conn, _acts, (*_ID, "seq"), _act)
    _rewrite(conn, _jobs, _ID, lambda _, body: with_severity(body))


def downgrade() -> None:
    raise NotImplementedError("the acts keep what they say")
