"""Tracker markdown grids (spec §4, HF-only SFT chain leg 3 and "Standalone eval-grid trackers"): the
pipe tables of a tracker file, its records (TrackerTable, TrackerRow) and the line and cell scan
tracker_rows (reading) and tracker_edit (writing) share.

A tracker is a markdown file (``…/base_sft_evals/grid.md``, ``…/main_sft_evals/SCORES.md``) with
prose, headings and one or more pipe tables. What this module reads:

Tables
  A header line with a pipe, then a delimiter line (``|---|:--:|``) with the same number of
  cells, then body lines until a blank line or a line without an unescaped pipe. Leading and
  trailing pipes are optional. Lines inside ``` / ~~~ fences are never tables. Cells split on
  ``|`` except an escaped ``\\|`` and pipes inside inline code (`` `a|b` ``).
Status marks
  ⏳/⌛ pending, ✅/✔ done, ❌/✗ failed (how a row's status cell is found: tracker_rows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PENDING_MARKS = ("⏳", "⌛")
DONE_MARKS = ("✅", "✔", "☑")
FAILED_MARKS = ("❌", "✗", "✖")
_ALL_MARKS = PENDING_MARKS + DONE_MARKS + FAILED_MARKS
# a mark plus an optional emoji variation selector
MARK_RE = re.compile("(?:" + "|".join(re.escape(m) for m in _ALL_MARKS) + ")\ufe0f?")

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


def split_lines(text: str) -> list[tuple[str, str]]:
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
    return scan_pipes(line)[0]


def scan_pipes(line: str) -> tuple[list[int], bool]:
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
class CellSpans:
    """Spans ``(start, end)`` of each cell's text between its pipes, in line offsets."""

    spans: tuple[tuple[int, int], ...]
    leading_pipe: bool
    trailing_pipe: bool


def cell_spans(line: str) -> CellSpans | None:
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
    return CellSpans(tuple(spans), leading, trailing)


def unescape_cell(cell: str) -> str:
    return cell.strip().replace("\\|", "|")


def cell_texts(line: str, cells: CellSpans) -> list[str]:
    return [unescape_cell(line[a:b]) for a, b in cells.spans]


def norm_header(header: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", header.casefold())


# ---------------------------------------------------------------------------------------- reading


def read_tables(text: str) -> list[TrackerTable]:
    """All pipe tables in ``text``, in file order (fenced code blocks skipped)."""
    lines = [c for c, _ in split_lines(text)]
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
        head, delim = cell_spans(line), cell_spans(lines[i + 1])
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
        tables.append(TrackerTable(tuple(cell_texts(line, head)), i, end))
        i = end
    return tables
