"""The HF chain's state as rows (sweep_core.state.cells): a save writes only the cells that changed
and keeps the others; a cell row that does not read stops the chain naming the cell (never read
as a fresh cell, which would submit its leg again); the move of an earlier Variable's cells is
refused when the rows hold cells already."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from sweep_core.state.cells import CellStateError, load_cells, save_cells
from sweep_core.state.db import engine_for, space_of, state_url


def _written(d) -> dict[str, object]:
    with engine_for(state_url(d)).begin() as conn:
        q = sa.text("SELECT cell, updated_at FROM sweep_state_chain_cells WHERE space = :s")
        return {c: u for c, u in conn.execute(q, {"s": space_of(d)})}


def test_a_save_writes_only_the_cells_that_changed_and_keeps_the_rest(tmp_path) -> None:
    state = {f"s/c{i}": {"leg": "sft", "sft_job": str(i)} for i in range(5)}
    assert save_cells(tmp_path, state) == 5
    first = _written(tmp_path)
    time.sleep(0.01)
    state["s/c2"] = {"leg": "upload", "sft_job": "2", "upload_job": "77"}
    assert save_cells(tmp_path, state) == 1 and save_cells(tmp_path, state) == 0
    second = _written(tmp_path)
    assert {c for c in first if first[c] != second[c]} == {"s/c2"}
    assert save_cells(tmp_path, {"s/c9": {"leg": "sft"}}) == 1  # a save of some cells keeps the others
    got = load_cells(tmp_path)
    assert set(got) == {*state, "s/c9"} and got["s/c2"]["upload_job"] == "77"


def test_a_cell_that_does_not_read_stops_the_chain_naming_it(tmp_path) -> None:
    save_cells(tmp_path, {"s/good": {"leg": "eval"}, "s/bad": {"leg": "upload"}})
    with engine_for(state_url(tmp_path)).begin() as conn:
        conn.execute(sa.text("UPDATE sweep_state_chain_cells SET body = '{\"leg\": ' WHERE cell = 's/bad'"))
    with pytest.raises(CellStateError, match="chain cell 's/bad' is not JSON .*nothing advanced"):
        load_cells(tmp_path)


def test_moving_an_earlier_state_in_never_overwrites_cells_held(tmp_path) -> None:
    assert save_cells(tmp_path, {"s/a": {"leg": "done"}}, only_if_empty=True) == 1
    assert save_cells(tmp_path, {"s/a": {"leg": "sft"}}, only_if_empty=True) == -1
    assert load_cells(tmp_path) == {"s/a": {"leg": "done"}}
