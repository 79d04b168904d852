"""``sweep-state import-json``: the memory files of the file-based store (``<run_log_dir>/.sweep-state/``
ledger.json, ledger.before.json, cleanup_backlog.json) moved into the state database once. Each
is stored as it is (a damaged one too: the store recovers it on first read, as it did the file),
in one transaction; then renamed ``<file>.imported-<stamp>``, never deleted. A document the database
holds already is never overwritten: that file is left where it is and named.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from sweep_core.state.db import STATE_DIR
from sweep_core.state.documents import locked

FILES = ("ledger.json", "ledger.before.json", "cleanup_backlog.json")


@dataclass
class ImportResult:
    imported: list[str] = field(default_factory=list)  # "<file> -> <file>.imported-<stamp>"
    refused: list[str] = field(default_factory=list)  # why a file was left where it is
    earlier: list[str] = field(default_factory=list)  # files imported by an earlier run

    def lines(self, folder: Path) -> list[str]:
        out = [f"imported {x}" for x in self.imported] + [f"NOT imported: {x}" for x in self.refused]
        if not self.imported and not self.refused:
            done = f" (imported before: {', '.join(self.earlier)})" if self.earlier else ""
            out.append(f"nothing to import in {folder}: no {', '.join(FILES)}{done}")
        return out


def import_json(run_log_dir: str | Path, url: str | None = None) -> ImportResult:
    """Move the memory files of ``run_log_dir`` into the state database (module docstring)."""
    folder = Path(run_log_dir) / STATE_DIR
    result = ImportResult(earlier=sorted(p.name for p in folder.glob("*.imported-*")))
    found = [folder / n for n in FILES if (folder / n).is_file()]
    if not found:
        return result
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    taken: list[Path] = []
    with locked(run_log_dir, FILES[0], url) as docs:  # the ledger's lock guards ledger.before.json too
        docs.lock(FILES[2])
        for path in found:
            try:
                text = path.read_bytes().decode("utf-8")
            except UnicodeDecodeError as exc:
                result.refused.append(f"{path}: not UTF-8 ({exc}): left as it is")
                continue
            if docs.read(path.name) is not None:
                result.refused.append(
                    f"{path}: the database already holds {path.name} for {docs.space}: left as it is, compare by hand"
                )
                continue
            docs.write(path.name, text)
            taken.append(path)
    for path in taken:  # after the commit: a crash before leaves files the database holds (refused next time)
        aside = path.with_name(f"{path.name}.imported-{stamp}")
        path.rename(aside)
        result.imported.append(f"{path} -> {aside.name}")
    return result
