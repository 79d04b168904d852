"""Write the editors' JSON Schemas of the config (include/schema/*.schema.json) from the pydantic
models in plugins/sweep_core/config: ``python scripts/json_schemas.py`` (``--check``: exit 1 when
a committed file is not what the models draw)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))

from sweep_core.config.json_schema import rendered  # noqa: E402

OUT = ROOT / "include" / "schema"


def main(argv: list[str]) -> int:
    stale = []
    for name, text in rendered().items():
        path = OUT / name
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if "--check" not in argv:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"{path.relative_to(ROOT)}: written")
    if stale and "--check" in argv:
        names = ", ".join(str(p.relative_to(ROOT)) for p in stale)
        print(f"stale JSON Schemas: {names}: run python scripts/json_schemas.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
