"""Writing a tracker row in place (:func:`fill_row`, :func:`mark_row`): one line is edited and every
other byte is left alone: other rows, prose, blank lines, trailing whitespace, CRLF/LF endings, the
final newline or its absence. Inside the edited line only the touched cells change; their padding is
kept (aligned cells keep their width when the new text fits). A row whose line changed since it was
read is refused with :class:`TrackerError`: re-read the file and try again.
"""

from __future__ import annotations

import re

from sweep_core.handoffs.harvest.tracker_md import (
    MARK_RE,
    TrackerError,
    TrackerRow,
    TrackerTable,
    cell_spans,
    cell_texts,
    norm_header,
    read_tables,
    scan_pipes,
    split_lines,
    unescape_cell,
)
from sweep_core.handoffs.harvest.tracker_rows import status_col

_NOTE_HEADERS = {"note", "notes", "comment", "comments", "remark", "remarks"}


def escape_cell(value: str) -> str:
    """``value`` as cell text: newlines flattened to spaces, every unescaped ``|`` as ``\\|``.

    Backticks are escaped too when one is left unclosed (it could pair with a later cell's).
    """
    value = re.sub(r"\s*[\r\n]+\s*", " ", value).strip()
    escaped = _escape(value, ticks=False)
    return _escape(value, ticks=True) if scan_pipes(escaped)[1] else escaped


def _escape(value: str, ticks: bool) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            out.append(value[i : i + 2])
            i += 2
            continue
        if ch == "|" or (ticks and ch == "`"):
            out.append("\\" + ch)
        else:
            out.append("\\\\" if ch == "\\" else ch)
        i += 1
    return "".join(out)


def _locate(text: str, row: TrackerRow) -> tuple[list[tuple[str, str]], TrackerTable]:
    lines = split_lines(text)
    idx = row.line_index
    if not 0 <= idx < len(lines):
        raise TrackerError(f"{row.path or 'tracker'}: line {idx + 1} no longer exists (file has {len(lines)} lines)")
    if lines[idx][0] != row.raw:
        raise TrackerError(
            f"{row.path or 'tracker'}: line {idx + 1} changed since it was read; re-read the tracker "
            f"(expected {row.raw!r}, found {lines[idx][0]!r})"
        )
    for table in read_tables(text):
        if idx in table.body:
            return lines, table
    raise TrackerError(f"{row.path or 'tracker'}: line {idx + 1} is not a table body row")


def _resolve(header: tuple[str, ...], key: str) -> int:
    folded = [h.strip().casefold() for h in header]
    k = key.strip().casefold()
    if k in folded:
        return folded.index(k)
    normed = [norm_header(h) for h in header]
    nk = norm_header(key)
    if nk and nk in normed:
        return normed.index(nk)
    prefixed = [i for i, h in enumerate(normed) if nk and h.startswith(nk)]
    if len(prefixed) == 1:
        return prefixed[0]
    raise TrackerError(f"column {key!r} not in table header {list(header)}")


def has_column(header: tuple[str, ...], key: str) -> bool:
    """Whether ``key`` names one column of ``header`` as :func:`fill_row` matches it."""
    try:
        _resolve(header, key)
    except TrackerError:
        return False
    return True


def _note_col(header: tuple[str, ...]) -> int | None:
    for k, name in enumerate(header):
        if norm_header(name) in _NOTE_HEADERS:
            return k
    return None


def _replace(seg: str, content: str) -> str:
    """New cell segment with ``content``, keeping the segment's padding (and width if it fits)."""
    stripped = seg.strip()
    if stripped:
        start = seg.index(stripped)
        lead, trail = seg[:start], seg[start + len(stripped) :]
    elif seg:
        lead, trail = " ", " " * max(1, len(seg) - 1)
    else:
        lead = trail = ""
    if len(trail) > 1:
        trail = " " * max(1, len(seg) - len(lead) - len(content))
    return lead + content + trail


def _set_mark(cell: str, status: str) -> str:
    if MARK_RE.search(cell):
        return MARK_RE.sub(status, cell, count=1)
    return f"{status} {cell}" if cell else status


def _append_note(cell: str, note: str, parens: bool) -> str:
    if note in cell:
        return cell  # idempotent: the same note is not stacked sweep after sweep
    if not cell or cell in {"-", "—", "–"}:
        return f"({note})" if parens else note
    return f"{cell} ({note})" if parens else f"{cell}; {note}"


def _edit(
    text: str,
    row: TrackerRow,
    values: dict[str, str],
    status: str | None,
    note: str | None,
) -> str:
    lines, table = _locate(text, row)
    line, ending = lines[row.line_index]
    cells = cell_spans(line)
    assert cells is not None  # a body row always has a pipe
    raw = [line[a:b] for a, b in cells.spans]
    new = [r.strip() for r in raw]
    touched: set[int] = set()

    for key, value in values.items():
        k = _resolve(table.header, key)
        if k in touched:
            raise TrackerError(f"two values for column {table.header[k]!r}")
        if k >= len(raw):
            raise TrackerError(f"row at line {row.line_index + 1} has no cell for column {table.header[k]!r}")
        new[k] = escape_cell(str(value))
        touched.add(k)

    texts = cell_texts(line, cells)
    scol = status_col(table.header, texts)
    if status is not None:
        status = escape_cell(status)
        if scol is None:
            raise TrackerError(f"row at line {row.line_index + 1} has no status cell")
        if scol not in touched:
            new[scol] = _set_mark(new[scol], status)
            touched.add(scol)

    if note:
        note = escape_cell(note)
        ncol = _note_col(table.header)
        if ncol is not None and ncol < len(raw):
            new[ncol] = _append_note(new[ncol], note, parens=False)
            touched.add(ncol)
        elif scol is not None:
            new[scol] = _append_note(new[scol], note, parens=True)
            touched.add(scol)
        else:
            raise TrackerError(f"row at line {row.line_index + 1} has neither a note nor a status cell")

    out = line
    for k in sorted(touched, reverse=True):
        if new[k] == raw[k].strip():
            continue
        a, b = cells.spans[k]
        out = out[:a] + _replace(line[a:b], new[k]) + out[b:]

    check = cell_spans(out)
    if (
        check is None
        or len(check.spans) != len(cells.spans)
        or (check.leading_pipe, check.trailing_pipe) != (cells.leading_pipe, cells.trailing_pipe)
        or [unescape_cell(out[a:b]) for a, b in check.spans] != [unescape_cell(n) for n in new]
    ):
        raise TrackerError(f"edit of line {row.line_index + 1} would break the table structure: {out!r}")

    head = "".join(c + e for c, e in lines[: row.line_index])
    tail = "".join(c + e for c, e in lines[row.line_index + 1 :])
    return head + out + ending + tail


def fill_row(
    text: str,
    row: TrackerRow,
    values: dict[str, str],
    status: str = "✅",
    note: str | None = None,
) -> str:
    """Return ``text`` with ``row``'s named columns set to ``values`` and its status mark set.

    Column names match the header case-insensitively (then ignoring punctuation, then as a
    unique prefix: ``AIME24`` fills ``AIME24 (mean±se)``); an unknown column raises. The status
    cell's mark (⏳) becomes ``status``. ``note`` goes to a note/notes/comment column, else in
    parentheses after the status mark. Values are escaped (``|`` -> ``\\|``). Only the row's line
    changes; raises :class:`TrackerError` if that line changed since the row was read.
    """
    return _edit(text, row, values, status, note)


def mark_row(text: str, row: TrackerRow, status: str = "❌", note: str | None = None) -> str:
    """Return ``text`` with ``row``'s status mark set to ``status`` and ``note`` recorded.

    Pass ``status="⏳"`` to keep a row pending while flagging it (e.g. a COMPLETED eval with an
    empty ``results: {}``). The note goes to a note/notes/comment column if the table has one,
    else in parentheses after the status mark; a note already present is not added again.
    """
    return _edit(text, row, {}, status, note)
