"""The datagen tracker row (sweep_core.handoffs.consolidate.tracker): found by its array job (and
cluster), set to ✅ with the consolidate job and the hub repo, every other byte kept; a missing row
appended to the table that has an ``Array job`` column, or a new table."""

from __future__ import annotations

from sweep_core.handoffs.consolidate.tracker import advance, find_row

TABLE = (
    "# Datagen\r\n\r\n| Dataset | Cluster | Array job | Consolidate job | Status | Note |\r\n"
    "|---|---|---|---|---|---|\r\n| datagen__a | leonardo | 11 |  | ⏳ | launched |\r\n"
    "| datagen__a | tacc | 11 |  | ⏳ | same id, other cluster |\r\n\r\nprose | with a pipe"
)


def test_the_row_of_the_array_on_its_cluster_goes_done_and_nothing_else_changes() -> None:
    new = advance(TABLE, "t.md", "tacc", "11", "datagen__a", "99", "on the hub: org/datagen__a")
    assert "| datagen__a | tacc | 11 | 99 | ✅ | same id, other cluster; on the hub: org/datagen__a |\r\n" in new
    assert "| datagen__a | leonardo | 11 |  | ⏳ | launched |\r\n" in new
    assert new.endswith("\r\n\r\nprose | with a pipe") and new.count("\n") == TABLE.count("\n")


def test_a_cluster_prefixed_array_cell_is_found() -> None:
    text = "| Dataset | Array job | Status |\n|---|---|---|\n| d | leonardo:123 | ⏳ |\n"
    assert find_row(text, "t", "leonardo", "123") is not None
    assert find_row(text, "t", "tacc", "123") is None
    assert "| d | leonardo:123 | ✅ (consolidated) |" in advance(text, "t", "leonardo", "123", "d", "7", "consolidated")


def test_a_missing_row_is_appended_to_the_array_table_or_a_new_table() -> None:
    new = advance(TABLE, "t.md", "local", "12", "datagen__b", "5", "n")
    lines = new.split("\r\n")
    assert lines[6] == "| datagen__b | local | 12 | 5 | ✅ | n |" and lines[7] == ""
    fresh = advance("# Notes\n", "t.md", "local", "12", "datagen__b", "5", "n")
    assert fresh.startswith("# Notes\n\n| Dataset | Cluster | Array job | Consolidate job | Status | Note |\n")
    assert find_row(fresh, "t", "local", "12") is not None
    # a second advance of the same array edits its row, never a second one
    assert advance(fresh, "t.md", "local", "12", "datagen__b", "5", "n").count("datagen__b") == 1
