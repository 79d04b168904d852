"""Tracker markdown grids: find pending eval rows, fill them in place (spec §4, HF-only SFT chain
leg 3 and "Standalone eval-grid trackers").

A tracker is a markdown file (``…/base_sft_evals/grid.md``, ``…/main_sft_evals/SCORES.md``) with
prose, headings and one or more pipe tables. What this module reads:

Tables
  A header line with a pipe, then a delimiter line (``|---|:--:|``) with the same number of
  cells, then body lines until a blank line or a line without an unescaped pipe. Leading and
  trailing pipes are optional. Lines inside ``` / ~~~ fences are never tables. Cells split on
  ``|`` except an escaped ``\\|`` and pipes inside inline code (`` `a|b` ``).
Status
  The cell under a ``status``/``state`` header, else the first cell holding a mark:
  ⏳/⌛ pending, ✅/✔ done, ❌/✗ failed; anything else is "other".
Eval job id
  The cell under an eval-job header (``eval job``, ``eval jobid`` …), else a generic job header
  (``job``, ``jobid``, ``job id``, ``slurm job``; never ``sft job``/``upload job``), holding
  ``1234567`` or ``leonardo:1234567``; else an inline ``job 1234567`` / ``jobid=leonardo:1234567``
  anywhere in the row (``eval job`` preferred, ``sft job`` etc. ignored); else a
  cluster-prefixed ``leonardo:1234567`` anywhere in the row. Bare numbers elsewhere are not ids.
Run / cell name
  The cell under ``run``/``cell``/``name``/``run name``/``model`` (backticks stripped).

Writing (:func:`fill_row`, :func:`mark_row`) edits one line and leaves every other byte alone:
other rows, prose, blank lines, trailing whitespace, CRLF/LF endings, the final newline or its
absence. Inside the edited line only the touched cells change; their padding is kept (aligned
cells keep their width when the new text fits). A row whose line changed since it was read is
refused with :class:`TrackerError`: re-read the file and try again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PENDING_MARKS = ("⏳", "⌛")
DONE_MARKS = ("✅", "✔", "☑")
FAILED_MARKS = ("❌", "✗", "✖")
_ALL_MARKS = PENDING_MARKS + DONE_MARKS + FAILED_MARKS
# a mark plus an optional emoji variation selector
_MARK_RE = re.compile("(?:" + "|".join(re.escape(m) for m in _ALL_MARKS) + ")\ufe0f?")
_PENDING_RE = re.compile("(?:" + "|".join(re.escape(m) for m in PENDING_MARKS) + ")\ufe0f?")

_STATUS_HEADERS = {"status", "state", "st", "evalstatus", "evalstate"}
_NOTE_HEADERS = {"note", "notes", "comment", "comments", "remark", "remarks"}
_RUN_HEADERS = {"run", "cell", "name", "runname", "cellname", "runcell", "celltag", "runtag", "model"}
_GENERIC_JOB_HEADERS = {"job", "jobid", "jobs", "slurmjob", "slurmjobid", "slurmid"}
_NON_EVAL_JOB_WORDS = ("sft", "train", "upload", "hf", "datagen", "rl", "convert", "consolidate")

_ID = r"(?:(?P<cluster>[A-Za-z][A-Za-z0-9_-]*):)?(?P<id>\d+(?:_\d+)?)"
_CELL_ID_RE = re.compile(r"(?<![\w:])" + _ID + r"\b")
_INLINE_ID_RE = re.compile(
    r"(?:(?P<kind>\b[A-Za-z]+)[ _-])?(?<![A-Za-z0-9])job(?:[ _-]?id)?\b\s*[:=#]?\s*`?" + _ID + r"\b", re.IGNORECASE
)
_PREFIXED_ID_RE = re.compile(r"(?<![\w:])(?P<cluster>[A-Za-z][A-Za-z0-9_-]*):(?P<id>\d{5,}(?:_\d+)?)\b")
_DELIM_CELL_RE = re.compile(r"^\s*:?-+:?\s*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class TrackerError(ValueError):
    """A tracker edit that cannot be done safely (stale row, unknown column, broken structure)."""


@dataclass(frozen=True)
class TrackerTable:
    """One pipe table: its header cells and line range ``[start, end)`` (0-based, end exclusive).

    ``start`` is the header line, ``start + 1`` the delimiter line, body rows follow.
    """

    header: tuple[str, ...]
    start: int
    end: int

    @property
    def body(self) -> range:
        """Line indices of the body rows."""
        return range(self.start + 2, self.end)


@dataclass(frozen=True)
class TrackerRow:
    """One body row of a tracker table, as read.

    ``raw`` is the line's text without its line ending; writes refuse when the file's line at
    ``line_index`` is no longer exactly ``raw``.
    """

    path: str
    line_index: int
    cells: dict[str, str] = field(hash=False)
    status: str  # pending | done | failed | other
    job_id: str | None
    cluster: str | None
    run: str | None
    raw: str
    header: tuple[str, ...] = field(default=(), repr=False)


# ---------------------------------------------------------------------------- line and cell scan


def _split_lines(text: str) -> list[tuple[str, str]]:
    """(content, ending) per line; ending is "\\r\\n", "\\n" or "" (last line without newline)."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        nl = text.find("\n", pos)
        if nl < 0:
            out.append((text[pos:], ""))
            break
        if nl > pos and text[nl - 1] == "\r":
            out.append((text[pos : nl - 1], "\r\n"))
        else:
            out.append((text[pos:nl], "\n"))
        pos = nl + 1
    return out


def _pipe_positions(line: str) -> list[int]:
    """Offsets of the cell-separating pipes: not escaped, not inside an inline code span."""
    return _scan(line)[0]


def _scan(line: str) -> tuple[list[int], bool]:
    """(separating pipe offsets, whether an unclosed backtick run was seen)."""
    pipes: list[int] = []
    unclosed = False
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "\\" and i + 1 < n:
            i += 2
            continue
        if ch == "`":
            j = i
            while j < n and line[j] == "`":
                j += 1
            run = line[i:j]
            close = line.find(run, j)
            # the closing run must be exactly as long as the opening one
            while close >= 0 and close + len(run) < n and line[close + len(run)] == "`":
                k = close
                while k < n and line[k] == "`":
                    k += 1
                close = line.find(run, k)
            if close >= 0:
                i = close + len(run)
                continue
            unclosed = True
            i = j
            continue
        if ch == "|":
            pipes.append(i)
        i += 1
    return pipes, unclosed


@dataclass(frozen=True)
class _Cells:
    """Spans ``(start, end)`` of each cell's text between its pipes, in line offsets."""

    spans: tuple[tuple[int, int], ...]
    leading_pipe: bool
    trailing_pipe: bool


def _cells(line: str) -> _Cells | None:
    pipes = _pipe_positions(line)
    if not pipes:
        return None
    bounds = [-1, *pipes, len(line)]
    spans = [(bounds[k] + 1, bounds[k + 1]) for k in range(len(bounds) - 1)]
    leading = line[: pipes[0]].strip() == ""
    trailing = line[pipes[-1] + 1 :].strip() == ""
    if leading:
        spans = spans[1:]
    if trailing:
        spans = spans[:-1]
    return _Cells(tuple(spans), leading, trailing)


def _unescape(cell: str) -> str:
    return cell.strip().replace("\\|", "|")


def _cell_texts(line: str, cells: _Cells) -> list[str]:
    return [_unescape(line[a:b]) for a, b in cells.spans]


def _norm(header: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", header.casefold())


# ---------------------------------------------------------------------------------------- reading


def read_tables(text: str) -> list[TrackerTable]:
    """All pipe tables in ``text``, in file order (fenced code blocks skipped)."""
    lines = [c for c, _ in _split_lines(text)]
    tables: list[TrackerTable] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FENCE_RE.match(line)
        if m:
            marker = m.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            i += 1
            continue
        if fence is not None or i + 1 >= len(lines):
            i += 1
            continue
        head, delim = _cells(line), _cells(lines[i + 1])
        if (
            head is None
            or delim is None
            or len(head.spans) != len(delim.spans)
            or not all(_DELIM_CELL_RE.match(lines[i + 1][a:b]) for a, b in delim.spans)
        ):
            i += 1
            continue
        end = i + 2
        while end < len(lines) and lines[end].strip() and _pipe_positions(lines[end]):
            if _FENCE_RE.match(lines[end]):
                break
            end += 1
        tables.append(TrackerTable(tuple(_cell_texts(line, head)), i, end))
        i = end
    return tables


def _keyed(header: tuple[str, ...], texts: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, name in enumerate(header):
        key = name
        n = 2
        while key in out:
            key = f"{name} ({n})"
            n += 1
        out[key] = texts[k] if k < len(texts) else ""
    return out


def _classify(cell: str) -> str:
    if any(m in cell for m in PENDING_MARKS):
        return "pending"
    if any(m in cell for m in DONE_MARKS):
        return "done"
    if any(m in cell for m in FAILED_MARKS):
        return "failed"
    return "other"


def _status_col(header: tuple[str, ...], texts: list[str]) -> int | None:
    for k, name in enumerate(header):
        if _norm(name) in _STATUS_HEADERS and k < len(texts):
            return k
    for k, t in enumerate(texts):
        if _MARK_RE.search(t):
            return k
    return None


def _job_cols(header: tuple[str, ...]) -> tuple[list[int], set[int]]:
    """(eval-job columns then generic job columns, other job columns such as ``SFT job``)."""
    evals, generic, other = [], [], set()
    for k, name in enumerate(header):
        n = _norm(name)
        if "job" not in n:
            continue
        if "eval" in n:
            evals.append(k)
        elif n in _GENERIC_JOB_HEADERS:
            generic.append(k)
        else:
            other.add(k)
    return evals + generic, other


def _job_id(header: tuple[str, ...], texts: list[str]) -> tuple[str | None, str | None]:
    cols, other = _job_cols(header)
    for k in cols:
        if k < len(texts):
            m = _CELL_ID_RE.search(texts[k])
            if m:
                return m.group("id"), m.group("cluster")
    row = " | ".join(t for k, t in enumerate(texts) if k not in other)
    hits = []
    for m in _INLINE_ID_RE.finditer(row):
        kind = (m.group("kind") or "").casefold()
        if kind in _NON_EVAL_JOB_WORDS:
            continue
        hits.append((0 if kind == "eval" else 1, m.start(), m))
    if hits:
        m = min(hits, key=lambda h: (h[0], h[1]))[2]
        return m.group("id"), m.group("cluster")
    m2 = _PREFIXED_ID_RE.search(row)
    if m2:
        return m2.group("id"), m2.group("cluster")
    return None, None


def _run_name(header: tuple[str, ...], texts: list[str]) -> str | None:
    for k, name in enumerate(header):
        if _norm(name) in _RUN_HEADERS and k < len(texts):
            value = texts[k].strip().strip("`").strip()
            return value or None
    return None


def read_rows(text: str, path: str = "") -> list[TrackerRow]:
    """Every body row of every table in ``text``, with status, job id, cluster and run name."""
    lines = [c for c, _ in _split_lines(text)]
    rows: list[TrackerRow] = []
    for table in read_tables(text):
        for idx in table.body:
            line = lines[idx]
            cells = _cells(line)
            if cells is None:
                continue
            texts = _cell_texts(line, cells)
            col = _status_col(table.header, texts)
            status = _classify(texts[col]) if col is not None else "other"
            job_id, cluster = _job_id(table.header, texts)
            rows.append(
                TrackerRow(
                    path=path,
                    line_index=idx,
                    cells=_keyed(table.header, texts),
                    status=status,
                    job_id=job_id,
                    cluster=cluster,
                    run=_run_name(table.header, texts),
                    raw=line,
                    header=table.header,
                )
            )
    return rows


def pending_rows(text: str, path: str = "") -> list[TrackerRow]:
    """⏳ rows that carry a recorded eval job id: the ones a harvest can act on."""
    return [r for r in read_rows(text, path) if r.status == "pending" and r.job_id]


def rows_without_job(text: str, path: str = "") -> list[TrackerRow]:
    """⏳ rows with no recorded eval job id (the harvest notes them; nothing to poll)."""
    return [r for r in read_rows(text, path) if r.status == "pending" and not r.job_id]


# ---------------------------------------------------------------------------------------- writing


def escape_cell(value: str) -> str:
    """``value`` as cell text: newlines flattened to spaces, every unescaped ``|`` as ``\\|``.

    Backticks are escaped too when one is left unclosed (it could pair with a later cell's).
    """
    value = re.sub(r"\s*[\r\n]+\s*", " ", value).strip()
    escaped = _escape(value, ticks=False)
    return _escape(value, ticks=True) if _scan(escaped)[1] else escaped


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
    lines = _split_lines(text)
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
    normed = [_norm(h) for h in header]
    nk = _norm(key)
    if nk and nk in normed:
        return normed.index(nk)
    prefixed = [i for i, h in enumerate(normed) if nk and h.startswith(nk)]
    if len(prefixed) == 1:
        return prefixed[0]
    raise TrackerError(f"column {key!r} not in table header {list(header)}")


def _note_col(header: tuple[str, ...]) -> int | None:
    for k, name in enumerate(header):
        if _norm(name) in _NOTE_HEADERS:
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
    if _MARK_RE.search(cell):
        return _MARK_RE.sub(status, cell, count=1)
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
    cells = _cells(line)
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

    texts = _cell_texts(line, cells)
    scol = _status_col(table.header, texts)
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

    check = _cells(out)
    if (
        check is None
        or len(check.spans) != len(cells.spans)
        or (check.leading_pipe, check.trailing_pipe) != (cells.leading_pipe, cells.trailing_pipe)
        or [_unescape(out[a:b]) for a, b in check.spans] != [_unescape(n) for n in new]
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
