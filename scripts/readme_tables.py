"""Write the README's schema tables (ops.md front matter, sweep.yaml sections) from the pydantic
models in plugins/sweep_core/config: ``python scripts/readme_tables.py`` (``--check``: exit 1 when
README.md is not what the schema draws)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))

from sweep_core.config.fields_table import render_readme  # noqa: E402


def main(argv: list[str]) -> int:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    new = render_readme(text)
    if "--check" in argv:
        if new != text:
            print("README.md schema tables are stale: run python scripts/readme_tables.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        readme.write_text(new, encoding="utf-8")
        print("README.md: schema tables rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
