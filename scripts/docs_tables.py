"""Write the schema's field tables (ops.md front matter, sweep.yaml sections, …) into
docs/configuration.md from the pydantic models in plugins/sweep_core/config:
``python scripts/docs_tables.py`` (``--check``: exit 1 when the page is not what the schema draws)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))

from sweep_core.config.fields_table import render_tables  # noqa: E402

PAGE = ROOT / "docs" / "configuration.md"


def main(argv: list[str]) -> int:
    text = PAGE.read_text(encoding="utf-8")
    new = render_tables(text)
    if "--check" in argv:
        if new != text:
            print("docs/configuration.md schema tables are stale: run python scripts/docs_tables.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        PAGE.write_text(new, encoding="utf-8")
        print("docs/configuration.md: schema tables rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
