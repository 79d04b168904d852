"""``sweep-state import-json``: the memory files of the file-based store (``<run_log_dir>/.sweep-state/``
ledger.json, ledger.before.json, cleanup_backlog.json) moved into the state database once: the two
ledger files as the ledger's rows (sweep_core.state.ledger_documents: a damaged one recovered with
``hold``, its text kept), the backlog as its document, in one transaction; then each file renamed
``<file>.imported-<stamp>``, never deleted. What the database holds already is never overwritten:
those files are left where they are and named.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from sweep_core.state import ledger_documents as old
from sweep_core.state.db import STATE_DIR
from sweep_core.state.documents import locked
from sweep_core.state.rows import LedgerRows

BACKLOG = "cleanup_backlog.json"
FILES = (old.LEDGER_DOC, old.BEFORE_DOC, BACKLOG)


@dataclass
class ImportResult:
    imported: list[str] = field(default_factory=list)  # "<file> -> <file>.imported-<stamp>"
    refused: list[str] = field(default_factory=list)  # why a file was left where it is
    earlier: list[str] = field(default_factory=list)  # files imported by an earlier run
    notes: list[str] = field(default_factory=list)  # a ledger recovered on the way in

    def lines(self, folder: Path) -> list[str]:
        out = [f"imported {x}" for x in self.imported] + [f"NOT imported: {x}" for x in self.refused] + self.notes
        if not self.imported and not self.refused:
            done = f" (imported before: {', '.join(self.earlier)})" if self.earlier else ""
            out.append(f"nothing to import in {folder}: no {', '.join(FILES)}{done}")
        return out


def _text(path: Path, result: ImportResult) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        result.refused.append(f"{path}: not UTF-8 ({exc}): left as it is")
        return None


def import_json(run_log_dir: str | Path, url: str | None = None) -> ImportResult:
    """Move the memory files of ``run_log_dir`` into the state database (module docstring)."""
    folder = Path(run_log_dir) / STATE_DIR
    result = ImportResult(earlier=sorted(p.name for p in folder.glob("*.imported-*")))
    found = {n: folder / n for n in FILES if (folder / n).is_file()}
    if not found:
        return result
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    taken: list[Path] = []
    with locked(run_log_dir, BACKLOG, url) as docs:
        rows = LedgerRows(docs.conn, docs.space)
        rows.lock_top(shared=False)
        ledger_files = [found[n] for n in (old.LEDGER_DOC, old.BEFORE_DOC) if n in found]
        if ledger_files and (rows.top() is not None or rows.jobs()):
            result.refused += [
                f"{p}: the database already holds a ledger for {docs.space}: left as it is, compare by hand"
                for p in ledger_files
            ]
        elif ledger_files:
            texts = {p.name: _text(p, result) for p in ledger_files}
            if all(t is not None for t in texts.values()):
                parts = old.split(texts.get(old.LEDGER_DOC), texts.get(old.BEFORE_DOC), stamp)
                old.write(rows, parts)
                for name, text in parts.aside.items():
                    docs.write(f"{name}.corrupt-{stamp}", text)
                result.notes += parts.notes
                taken += ledger_files
        if BACKLOG in found:
            if docs.read(BACKLOG) is not None:
                result.refused.append(
                    f"{found[BACKLOG]}: the database already holds {BACKLOG} for {docs.space}: left as it is, compare by hand"
                )
            elif (text := _text(found[BACKLOG], result)) is not None:
                docs.write(BACKLOG, text)
                taken.append(found[BACKLOG])
    for path in taken:  # after the commit: a crash before leaves files the database holds (refused next time)
        aside = path.with_name(f"{path.name}.imported-{stamp}")
        path.rename(aside)
        result.imported.append(f"{path} -> {aside.name}")
    return result
