"""The README's field tables are the schema's: every field has its row (name, default, meaning from
its Field description) and every row names a field; `python scripts/readme_tables.py` rewrites them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sweep_core.config.fields_table import END_MARKER, TABLES, begin_marker, render_readme

README = Path(__file__).resolve().parents[2] / "README.md"


def _rows(name: str) -> list[str]:
    """The field names of the README rows between the table's markers."""
    lines = [line.strip() for line in README.read_text(encoding="utf-8").split("\n")]
    start = lines.index(begin_marker(name))
    end = lines.index(END_MARKER, start)
    return [m.group(1) for line in lines[start + 1 : end] if (m := re.match(r"^\| `([^`]+)` \|", line))]


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_schema_field_has_a_readme_row_and_every_row_names_a_field(name: str) -> None:
    model, _ = TABLES[name]
    rows = _rows(name)
    fields = list(model.model_fields)
    assert not set(fields) - set(rows), f"README {name} table lacks rows for {sorted(set(fields) - set(rows))}"
    assert not set(rows) - set(fields), f"README {name} rows name no field: {sorted(set(rows) - set(fields))}"
    assert rows == fields  # one row each, in schema order


def test_readme_tables_are_what_the_schema_draws() -> None:
    text = README.read_text(encoding="utf-8")
    assert render_readme(text) == text, "stale README schema tables: run python scripts/readme_tables.py"


def test_every_field_has_a_description() -> None:
    for name, (model, _) in TABLES.items():
        assert all(info.description for info in model.model_fields.values()), name
