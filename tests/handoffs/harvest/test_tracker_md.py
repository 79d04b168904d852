"""Tracker markdown grids: reading pending rows and byte-preserving fills (spec §4 harvest)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep_core.handoffs.harvest.tracker_edit import escape_cell, fill_row, mark_row
from sweep_core.handoffs.harvest.tracker_md import TrackerError, read_tables
from sweep_core.handoffs.harvest.tracker_rows import pending_rows, read_rows, rows_without_job

FIX = Path(__file__).parents[2] / "fixtures" / "trackers"


def load(name: str) -> str:
    # bytes -> str keeps CRLF and the (absent) final newline exactly
    return (FIX / name).read_bytes().decode("utf-8")


def changed_lines(old: str, new: str) -> list[int]:
    """Indices of lines that differ; line endings are part of the line."""
    a, b = old.split("\n"), new.split("\n")
    assert len(a) == len(b), "line count changed"
    return [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]


# ------------------------------------------------------------------------------------- reading


def test_scores_md_two_tables_and_rows() -> None:
    text = load("SCORES.md")
    tables = read_tables(text)
    assert len(tables) == 2
    assert tables[0].header == (
        "Cell", "Midtrain mix", "HF repo", "Eval job", "MATH500", "AIME24", "gsm8k", "Status", "Notes",
    )  # fmt: skip
    assert tables[1].header == tables[0].header
    lines = text.split("\n")
    assert lines[tables[0].start].startswith("| Cell |")
    assert lines[tables[1].start + 1].startswith("| :---")

    pend = pending_rows(text, "main_sft_evals/SCORES.md")
    assert [(r.run, r.job_id, r.cluster) for r in pend] == [
        ("mt1b_a10_r1", "18234562", "leonardo"),
        ("mt1b_a25_r0", "18234563", "leonardo"),
        ("mt3b_a10_r1", "18240002", None),
        ("mt3b_a25_r0", "412233", "tacc"),
    ]
    first = pend[0]
    assert first.path == "main_sft_evals/SCORES.md"
    assert lines[first.line_index] == first.raw
    assert first.cells["HF repo"] == "`delphi/mt1b_a10_r1-sft`"
    assert first.cells["Notes"] == "launched 2026-06-09"
    assert first.status == "pending"

    statuses = {r.run: r.status for r in read_rows(text)}
    assert statuses["mt1b_a10_r0"] == "done"
    assert statuses["mt1b_a50_r0"] == "failed"


def test_pending_without_job_id_reported_separately() -> None:
    text = load("SCORES.md")
    missing = rows_without_job(text, "SCORES.md")
    assert [(r.run, r.status, r.job_id) for r in missing] == [("mt1b_a25_r1", "pending", None)]
    assert all(r.job_id for r in pending_rows(text))
    assert len(set(pending_rows(text))) == 4  # rows are hashable (e.g. a harvest's seen-set)

    grid = load("grid.md")
    assert [r.run for r in rows_without_job(grid)] == ["llama32_1b__tulu3"]


def test_grid_eval_job_column_wins_over_sft_job() -> None:
    text = load("grid.md")
    rows = {r.run: r for r in read_rows(text)}
    assert rows["qwen25_1p5b__tulu3"].job_id == "18200002"  # eval job, not SFT job 18100002
    assert rows["llama32_1b__tulu3"].job_id is None  # empty eval job cell: SFT id is not used
    assert rows["smollm2_1p7b__openmath"].status == "other"
    assert rows["olmo2_1b__openmath"].status == "failed"
    # the prose line with pipes after the table is not a row
    assert max(r.line_index for r in rows.values()) == 12


def test_crlf_inline_job_ids() -> None:
    text = load("baseline_crlf.md")
    assert "\r\n" in text
    pend = pending_rows(text)
    assert [(r.run, r.job_id, r.cluster) for r in pend] == [
        ("Llama-3.2-1B", "18300002", "leonardo"),
        ("OLMo-2-1B", "18300003", None),
    ]
    assert not pend[0].raw.endswith("\r")


def test_no_leading_pipes_escaped_pipe_and_code_span() -> None:
    text = load("pass_at_k_nofinal.md")
    assert not text.endswith("\n")
    rows = read_rows(text)
    assert [r.status for r in rows] == ["done", "pending", "pending"]
    last = rows[-1]
    assert last.cells == {
        "model": "llama32_1b__openmath", "jobid": "18400003", "pass@1": "`a|b`", "pass@8": "x | y", "status": "⏳",
    }  # fmt: skip


@pytest.mark.parametrize(
    "row, job, cluster",
    [
        ("| a | ⏳ | job 1234567 |", "1234567", None),
        ("| a | ⏳ | jobid=leonardo:1234567 |", "1234567", "leonardo"),
        ("| a | ⏳ | SFT job 1111111, eval job 2222222 |", "2222222", None),
        ("| a | ⏳ | sft_job 1111111 |", None, None),
        ("| a | ⏳ | eval_job: `3333333` |", "3333333", None),
        ("| a | ⏳ | rerun on leonardo:4444444 |", "4444444", "leonardo"),
        ("| a | ⏳ | 1234567 steps |", None, None),
        ("| a | ⏳ | at 12:30 |", None, None),
    ],
)
def test_inline_job_id_shapes(row: str, job: str | None, cluster: str | None) -> None:
    text = f"| name | status | notes |\n|---|---|---|\n{row}\n"
    (r,) = read_rows(text)
    assert (r.job_id, r.cluster) == (job, cluster)


def test_fenced_table_is_ignored() -> None:
    text = "```\n| a | status |\n|---|---|\n| x | ⏳ job 1234567 |\n```\n\n| a | status |\n|---|---|\n| y | ✅ |\n"
    tables = read_tables(text)
    assert [t.start for t in tables] == [6]


def test_header_needs_matching_delimiter() -> None:
    assert read_tables("| a | b |\n|---|\n| 1 | 2 |\n") == []
    assert read_tables("| a | b |\n| x | y |\n") == []


# ------------------------------------------------------------------------------------- writing


def test_fill_row_changes_exactly_one_line() -> None:
    text = load("SCORES.md")
    row = pending_rows(text)[0]
    new = fill_row(text, row, {"math500": "33.0", "AIME24": "4.2±1.3", "GSM8K": "57.1"})
    assert changed_lines(text, new) == [row.line_index]
    line = new.split("\n")[row.line_index]
    assert line == (
        "| `mt1b_a10_r1` | a10 | `delphi/mt1b_a10_r1-sft` | leonardo:18234562 | 33.0 | 4.2±1.3 | 57.1 | ✅ "
        "| launched 2026-06-09 |"
    )
    (again,) = [r for r in read_rows(new) if r.line_index == row.line_index]
    assert again.status == "done"
    assert again.cells["MATH500"] == "33.0"
    assert row.job_id not in {r.job_id for r in pending_rows(new)}


def test_fill_row_keeps_aligned_padding() -> None:
    text = load("grid.md")
    row = pending_rows(text)[0]
    new = fill_row(text, row, {"MATH500": "40.2", "AIME24": "5.0±1.5", "gsm8k": "66.0"})
    assert changed_lines(text, new) == [row.line_index]
    old_line, new_line = text.split("\n")[row.line_index], new.split("\n")[row.line_index]
    assert len(old_line) == len(new_line)  # every value fit its column: widths kept
    assert new_line.endswith("| 40.2    | 5.0±1.5  | 66.0  | ✅     |")


def test_fill_row_long_value_keeps_structure() -> None:
    text = load("grid.md")
    row = pending_rows(text)[0]
    new = fill_row(text, row, {"AIME24": "12.345±6.789 (n=8)"})
    line = new.split("\n")[row.line_index]
    assert line.count("|") == text.split("\n")[row.line_index].count("|")
    assert "| 12.345±6.789 (n=8) |" in line


def test_fill_crlf_preserves_endings_and_trailing_space() -> None:
    text = load("baseline_crlf.md")
    row = pending_rows(text)[0]  # this line carries two trailing spaces before CRLF
    new = fill_row(text, row, {"MATH500": "28.8", "AIME24": "2.5±0.9", "gsm8k": "50.3"})
    assert new.count("\r\n") == text.count("\r\n")
    assert new.count("\n") == text.count("\n")
    assert changed_lines(text, new) == [row.line_index]
    assert (
        new.split("\r\n")[row.line_index]
        == "| Llama-3.2-1B | eval job leonardo:18300002 | 28.8 | 2.5±0.9 | 50.3 | ✅ |  "
    )


def test_fill_no_final_newline_and_no_outer_pipes() -> None:
    text = load("pass_at_k_nofinal.md")
    row = pending_rows(text)[-1]
    new = fill_row(text, row, {"pass@1": "0.5", "pass@8": "0.7"})
    assert not new.endswith("\n")
    assert changed_lines(text, new) == [row.line_index]
    assert new.split("\n")[-1] == "llama32_1b__openmath | 18400003 | 0.5 | 0.7 | ✅"


def test_value_with_pipe_is_escaped() -> None:
    text = load("grid.md")
    row = pending_rows(text)[0]
    new = fill_row(text, row, {"gsm8k": "57|1", "MATH500": "a \\| b"})
    line = new.split("\n")[row.line_index]
    assert "57\\|1" in line
    assert "a \\| b" in line  # already escaped: not doubled
    (again,) = [r for r in read_rows(new) if r.line_index == row.line_index]
    assert again.cells["gsm8k"] == "57|1"
    assert len(again.cells) == len(row.cells)


def test_escape_cell() -> None:
    assert escape_cell("a|b") == "a\\|b"
    assert escape_cell("a\\|b") == "a\\|b"
    assert escape_cell("line1\nline2\r\n") == "line1 line2"
    assert escape_cell("ends\\") == "ends\\\\"
    assert escape_cell("`a|b`") == "`a\\|b`"  # balanced code span kept, pipe escaped
    assert escape_cell("odd ` tick") == "odd \\` tick"  # a lone backtick could pair with a later cell's


def test_lone_backtick_value_does_not_swallow_cells() -> None:
    text = "| run | eval job | MATH500 | AIME24 | status | notes |\n|---|---|---|---|---|---|\n| r | 1234567 | | | ⏳ | `x` |\n"
    (row,) = pending_rows(text)
    new = fill_row(text, row, {"MATH500": "1`", "AIME24": "2"})
    (again,) = read_rows(new)
    assert again.cells["AIME24"] == "2" and again.cells["notes"] == "`x`" and again.status == "done"


def test_stale_row_refused() -> None:
    text = load("SCORES.md")
    row = pending_rows(text)[0]
    edited = text.replace("launched 2026-06-09", "launched 2026-06-09, relaunched")
    with pytest.raises(TrackerError, match="changed since it was read"):
        fill_row(edited, row, {"MATH500": "1.0"})
    shifted = "New intro line.\n" + text
    with pytest.raises(TrackerError, match="changed since it was read"):
        fill_row(shifted, row, {"MATH500": "1.0"})
    with pytest.raises(TrackerError, match="no longer exists"):
        fill_row("# emptied\n", row, {"MATH500": "1.0"})
    # re-reading finds the row again at its new place
    (moved,) = [r for r in pending_rows(shifted) if r.job_id == row.job_id]
    assert changed_lines(shifted, fill_row(shifted, moved, {"MATH500": "1.0"})) == [moved.line_index]


def test_unknown_column_refused() -> None:
    text = load("SCORES.md")
    row = pending_rows(text)[0]
    with pytest.raises(TrackerError, match="'HumanEval' not in table header"):
        fill_row(text, row, {"HumanEval": "12.0"})


def test_prefix_column_match() -> None:
    text = "| run | eval job | AIME24 (mean±se) | status |\n|---|---|---|---|\n| r1 | 1234567 | | ⏳ |\n"
    (row,) = pending_rows(text)
    new = fill_row(text, row, {"aime24": "10.0±2.0"})
    assert new.split("\n")[2] == "| r1 | 1234567 | 10.0±2.0 | ✅ |"


def test_multiple_tables_fill_second() -> None:
    text = load("SCORES.md")
    row = [r for r in pending_rows(text) if r.run == "mt3b_a25_r0"][0]
    new = fill_row(text, row, {"MATH500": "50.0", "AIME24": "13.3±2.2", "gsm8k": "77.0"}, note="harvested 06-10")
    assert changed_lines(text, new) == [row.line_index]
    assert new.split("\n")[row.line_index].endswith("| ✅ | moved to Vista; harvested 06-10 |")


def test_mark_row_failed_with_notes_column() -> None:
    text = load("SCORES.md")
    row = pending_rows(text)[1]
    new = mark_row(text, row, note="FAILED exit 1:0, CUDA OOM")
    assert changed_lines(text, new) == [row.line_index]
    assert new.split("\n")[row.line_index].endswith("| | | | ❌ | FAILED exit 1:0, CUDA OOM |")


def test_mark_row_stays_pending_note_in_status_cell_idempotent() -> None:
    text = load("grid.md")
    row = pending_rows(text)[0]
    note = "COMPLETED but results:{} — rerun"
    once = mark_row(text, row, status="⏳", note=note)
    assert changed_lines(text, once) == [row.line_index]
    assert once.split("\n")[row.line_index].endswith("| ⏳ (COMPLETED but results:{} — rerun) |")
    (again,) = [r for r in pending_rows(once) if r.job_id == row.job_id]
    assert again.status == "pending"
    assert mark_row(once, again, status="⏳", note=note) == once  # the next sweep stacks nothing


def test_fill_then_refill_same_row_object_refused() -> None:
    text = load("grid.md")
    row = pending_rows(text)[0]
    new = fill_row(text, row, {"MATH500": "1.0"})
    with pytest.raises(TrackerError):
        fill_row(new, row, {"MATH500": "2.0"})


def test_refuses_non_table_line() -> None:
    text = load("grid.md")
    row = pending_rows(text)[0]
    lines = text.split("\n")
    fake = type(row)(**{**row.__dict__, "line_index": 0, "raw": lines[0]})
    with pytest.raises(TrackerError, match="not a table body row"):
        fill_row(text, fake, {"MATH500": "1.0"})


# --------------------------------------------------------------------------- property: one line


_cell_text = st.text(alphabet="abcXYZ019 .-_`\\|±", max_size=8)
_value = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    st.text(alphabet="a1 .±|`\\\r\n\t", max_size=10),
)


@st.composite
def tracker_docs(draw: st.DrawFn) -> str:
    """Prose + 1..3 tables with mixed rows, random padding, endings and final newline."""
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    out: list[str] = []
    job = 1000000
    for _ in range(draw(st.integers(1, 3))):
        out += draw(st.lists(st.sampled_from(["# Heading", "Some prose, a | pipe.", "", "- item   "]), max_size=3))
        out.append("")
        outer = draw(st.booleans())
        pad = draw(st.sampled_from(["", " ", "  "]))

        def row(cells: list[str], outer: bool = outer, pad: str = pad) -> str:
            body = "|".join(f"{pad}{c}{pad}" for c in cells)
            return f"|{body}|" if outer else body

        out.append(row(["run", "eval job", "MATH500", "AIME24", "gsm8k", "status", "notes"]))
        out.append(row(["---"] * 7))
        for _ in range(draw(st.integers(1, 5))):
            job += 1
            status = draw(st.sampled_from(["⏳", "✅", "❌", "⏳"]))
            jid = draw(st.sampled_from([str(job), f"leonardo:{job}", ""]))
            notes = "n" + draw(_cell_text).replace("\\", "").replace("|", "\\|").replace("`", "")
            cells = [f"r{job}", jid, "", "", "", status, notes]
            line = row(cells)
            if draw(st.booleans()):
                line += draw(st.sampled_from([" ", "  ", "\t"]))
            out.append(line)
        out.append("")
    text = eol.join(out)
    return text if draw(st.booleans()) else text + eol


@settings(max_examples=200, deadline=None, derandomize=True)
@given(tracker_docs(), st.data())
def test_property_fill_changes_only_that_line(text: str, data: st.DataObject) -> None:
    rows = pending_rows(text)
    if not rows:
        return
    row = data.draw(st.sampled_from(rows))
    values = {
        "MATH500": data.draw(_value),
        "AIME24": data.draw(_value),
        "gsm8k": data.draw(_value),
    }
    note = data.draw(st.one_of(st.none(), _value))
    new = fill_row(text, row, values, note=note)
    assert changed_lines(text, new) == [row.line_index]
    assert new.count("\r\n") == text.count("\r\n")
    assert new.endswith("\n") == text.endswith("\n")
    (again,) = [r for r in read_rows(new) if r.line_index == row.line_index]
    assert len(again.cells) == len(row.cells)
    assert again.status == "done"
    assert again.job_id == row.job_id
    for key, value in values.items():
        assert again.cells[key] == escape_cell(value).replace("\\|", "|")
    if note:
        assert escape_cell(note).replace("\\|", "|") in again.cells["notes"]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(tracker_docs(), st.data())
def test_property_mark_changes_only_that_line_and_is_idempotent(text: str, data: st.DataObject) -> None:
    rows = pending_rows(text)
    if not rows:
        return
    row = data.draw(st.sampled_from(rows))
    status = data.draw(st.sampled_from(["❌", "⏳"]))
    note = data.draw(_value)
    new = mark_row(text, row, status=status, note=note)
    changed = changed_lines(text, new)
    assert changed in ([row.line_index], [])
    (again,) = [r for r in read_rows(new) if r.line_index == row.line_index]
    assert again.status == ("failed" if status == "❌" else "pending")
    assert len(again.cells) == len(row.cells)
    assert mark_row(new, again, status=status, note=note) == new


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet="|-: ab`\\⏳✅\n\r1234567", max_size=120))
def test_property_reading_never_raises_and_rows_match_lines(text: str) -> None:
    lines = text.split("\n")
    for r in read_rows(text):
        assert lines[r.line_index].removesuffix("\r") == r.raw
