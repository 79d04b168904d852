"""The ledger's rows as stored (sweep_core.state.rows), read and written by hand: what a test looks at
or damages (a bad write by hand, a partial restore) without the store's code in between."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sweep_core.state.db import engine_for, space_of, state_url
from sweep_core.state.rows import NOW, LedgerRows


@contextmanager
def rows_of(run_log_dir: str | Path) -> Iterator[LedgerRows]:
    with engine_for(state_url(run_log_dir)).begin() as conn:
        yield LedgerRows(conn, space_of(run_log_dir))


def read_row(run_log_dir: str | Path, key: str | None = None, gen: str = NOW) -> str | None:
    """A job row's body (``key``), or the ledger row's (None), of ``gen``; None when absent."""
    with rows_of(run_log_dir) as rows:
        return rows.top(gen) if key is None else rows.jobs(gen, [key], nulls=True).get(key)


def write_row(run_log_dir: str | Path, key: str | None, body: str | None, gen: str = NOW) -> None:
    """Replace a job row's body (``key``) or the ledger row's (None) as is (None: the row emptied)."""
    with rows_of(run_log_dir) as rows:
        if key is None:
            rows.write_top(body, gen)
        elif body is None:
            rows.delete_jobs([key], gen)
        else:
            rows.put_jobs({key: body}, gen)


def generations(run_log_dir: str | Path) -> list[str]:
    with rows_of(run_log_dir) as rows:
        return rows.generations()


ADDED_BY_0005 = ("act", "target", "act_cluster", "did", "unreadable")  # what migration 0005 may add to an act


def acts_as_before(ledger: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """A ledger's ``to_dict`` with the fields migration 0005 added to its acts taken out again (those
    the same act in ``before``, a ledger read before 0005, lacked): the rest compares exactly."""
    out = json.loads(json.dumps(ledger))
    for key, e in out["jobs"].items():
        was = before["jobs"].get(key, {}).get("acts", [])
        e["acts"] = [
            {k: v for k, v in a.items() if k not in ADDED_BY_0005 or (i < len(was) and k in was[i])}
            for i, a in enumerate(e["acts"])
        ]
    return out
