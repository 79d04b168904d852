"""The field tables of docs/configuration.md are the schema's: every field has its row (name,
default, meaning from its Field description) and every row names a field;
`python scripts/docs_tables.py` rewrites them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sweep_core.config.fields_table import END_MARKER, TABLES, begin_marker, render_tables

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "configuration.md"


def _rows(name: str) -> list[str]:
    """The field names of the page's rows between the table's markers."""
    lines = [line.strip() for line in PAGE.read_text(encoding="utf-8").split("\n")]
    start = lines.index(begin_marker(name))
    end = lines.index(END_MARKER, start)
    return [m.group(1) for line in lines[start + 1 : end] if (m := re.match(r"^\| `([^`]+)` \|", line))]


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_schema_field_has_a_row_and_every_row_names_a_field(name: str) -> None:
    model, _ = TABLES[name]
    rows = _rows(name)
    fields = list(model.model_fields)
    assert not set(fields) - set(rows), f"docs {name} table lacks rows for {sorted(set(fields) - set(rows))}"
    assert not set(rows) - set(fields), f"docs {name} rows name no field: {sorted(set(rows) - set(fields))}"
    assert rows == fields  # one row each, in schema order


def test_the_tables_are_what_the_schema_draws() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert render_tables(text) == text, "stale schema tables: run python scripts/docs_tables.py"


def test_the_generator_check_fails_on_a_stale_table_and_passes_on_the_page(tmp_path: Path) -> None:
    """`scripts/docs_tables.py --check` is what a contributor runs: it passes on the checkout and
    fails (exit 1) once a generated row no longer says what the schema says."""
    script = ROOT / "scripts" / "docs_tables.py"
    ok = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    copy = tmp_path / "repo"
    (copy / "docs").mkdir(parents=True)
    (copy / "scripts").mkdir()
    (copy / "plugins").symlink_to(ROOT / "plugins")
    (copy / "scripts" / "docs_tables.py").write_text(script.read_text(encoding="utf-8"), encoding="utf-8")
    text = PAGE.read_text(encoding="utf-8")
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("| `scheduler` | both |"))
    stale = text.replace(row, row.rsplit("|", 2)[0] + "| something the schema does not say |")
    assert stale != PAGE.read_text(encoding="utf-8")
    (copy / "docs" / "configuration.md").write_text(stale, encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, str(copy / "scripts" / "docs_tables.py"), "--check"], capture_output=True, text=True
    )
    assert bad.returncode == 1 and "stale" in bad.stderr
    fixed = subprocess.run([sys.executable, str(copy / "scripts" / "docs_tables.py")], capture_output=True, text=True)
    assert fixed.returncode == 0
    assert (copy / "docs" / "configuration.md").read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")


def test_every_field_has_a_description() -> None:
    for name, (model, _) in TABLES.items():
        assert all(info.description for info in model.model_fields.values()), name
