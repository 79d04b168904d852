"""The datagen tracker (sweep.yaml ``consolidate.tracker``, a markdown file of the LOCAL
ground-truth clone, committed as the harvest commits, never pushed). One row per datagen array,
like the eval grids:

    | Dataset      | Cluster  | Array job | Consolidate job | Status | Note                        |
    |--------------|----------|-----------|-----------------|--------|-----------------------------|
    | datagen__foo | leonardo | 1234567   |                 | ⏳     | launched 2026-12-01         |

The launcher (or a person) writes the ⏳ row with the array job id; when the consolidate job
COMPLETED and the dataset is on the hub, the row gets the consolidate job id and ✅ with the hub
repo in its note. An array with no row gets one (appended to the table with an ``Array job``
column, or a new table at the end). The row is found by its ``Array job`` cell (``1234567`` or
``leonardo:1234567``) and, when the table has one, its ``Cluster`` cell. The eval harvest never
reads these rows (its globs name grid.md/SCORES.md, and ``array``/``consolidate`` job columns are
not eval job columns). Every other byte of the file is kept (tracker_edit).
"""

from __future__ import annotations

from sweep_core.handoffs.harvest.tracker_edit import escape_cell, fill_row
from sweep_core.handoffs.harvest.tracker_md import TrackerRow, norm_header, read_tables, split_lines
from sweep_core.handoffs.harvest.tracker_rows import read_rows

HEADER = ("Dataset", "Cluster", "Array job", "Consolidate job", "Status", "Note")
ARRAY_COLUMN = "arrayjob"


def _array_of(cell: str) -> str:
    return cell.strip().strip("`").split(":")[-1].strip()


def find_row(text: str, path: str, cluster: str, array_id: str) -> TrackerRow | None:
    """The array's row (its ``Array job`` cell, and its ``Cluster`` cell when the table has one)."""
    for row in read_rows(text, path):
        cells = {norm_header(k): v for k, v in row.cells.items()}
        if _array_of(cells.get(ARRAY_COLUMN, "")) != array_id:
            continue
        prefixed = cells.get(ARRAY_COLUMN, "").strip("` ")
        where = cells.get("cluster", "").strip() or (prefixed.split(":")[0] if ":" in prefixed else "")
        if where and where != cluster:
            continue
        return row
    return None


def _line(header: tuple[str, ...], values: dict[str, str]) -> str:
    cells = [escape_cell(values.get(norm_header(h), "")) or " " for h in header]
    return "| " + " | ".join(cells) + " |"


def advance(text: str, path: str, cluster: str, array_id: str, name: str, job: str, note: str) -> str:
    """``text`` with the array's row at ✅ (consolidate job id, note); appended when missing."""
    row = find_row(text, path, cluster, array_id)
    if row is not None:
        values = {"Consolidate job": job} if any(norm_header(h) == "consolidatejob" for h in row.header) else {}
        return fill_row(text, row, values, status="✅", note=note)
    values = {
        "dataset": name,
        "cluster": cluster,
        "arrayjob": array_id,
        "consolidatejob": job,
        "status": "✅",
        "note": note,
    }
    lines = split_lines(text)
    for table in read_tables(text):
        if ARRAY_COLUMN in {norm_header(h) for h in table.header}:
            last = table.end - 1
            ending = lines[last][1] or ("\r\n" if any(e == "\r\n" for _, e in lines) else "\n")
            head = "".join(c + e for c, e in lines[:last]) + lines[last][0] + ending
            tail = "".join(c + e for c, e in lines[last + 1 :])
            return head + _line(table.header, values) + (lines[last][1] if tail else "") + tail
    sep = "" if not text or text.endswith("\n") else "\n"
    block = "| " + " | ".join(HEADER) + " |\n" + "|" + "---|" * len(HEADER) + "\n" + _line(HEADER, values) + "\n"
    return text + sep + ("\n" if text else "") + block
