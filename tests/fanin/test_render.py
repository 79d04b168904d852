"""The box tables are tabulate's ``simple_grid`` of the prepared cells, and stay aligned whatever
the cluster wrote: runs of spaces (tqdm lines), tabs, newlines, wide characters, controls."""

from __future__ import annotations

import pytest
import tabulate as tabulate_module
from hypothesis import given, settings
from hypothesis import strategies as st
from tabulate import tabulate
from wcwidth import wcswidth

from sweep_core.fanin.liveness import elapsed_text
from sweep_core.fanin.render import box_table, prepare_cell, render_bucket
from sweep_core.records.models import Job

TQDM = "12%|█▏        | 227/1875 [10:18<1:14:44,  2.72s/it]"

# Pieces of cluster text that a hand-drawn grid gets wrong: runs of spaces, tabs, newlines (and
# CRLF), wide characters (CJK, emoji, a ZWJ family), a combining accent, escapes and bidi
# controls, hyphens and long words (the wrap points), numbers (never parsed), empty strings.
PIECES = [
    "a",
    "job",
    "sft__cell_12",
    "eval-tb2-long-name",
    "x" * 30,
    " ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    "中文",
    "日本語のテキスト",
    "👍",
    "👨\u200d👩\u200d👧",
    "e\u0301",
    "—",
    "█▏",
    "\x1b[2J",
    "\x1b[36m(pid=42)\x1b[0m",
    "\u202e",
    "\x07",
    "12",
    "-1.5e3",
    "False",
    "80,443",
    "",
]


def misread_when_wrapped(cell: str) -> bool:
    """tabulate 0.10.0 parses these in a wrapped column although number parsing is off
    (astanin/python-tabulate#428): "False" comes out "True", "80,443" and "\\n" raise ValueError."""
    t = tabulate_module
    return cell != "" and not t._isnumber(cell) and (t._isbool(cell) or t._isnumber_with_thousands_separator(cell))


CELL = st.one_of(st.lists(st.sampled_from(PIECES), max_size=8).map("".join), st.text(max_size=12))
WIDTH = st.one_of(st.none(), st.integers(6, 40))


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[list[str]], list[int | None]]:
    n = draw(st.integers(1, 4))
    headers = draw(st.lists(CELL, min_size=n, max_size=n))
    rows = draw(st.lists(st.lists(CELL, min_size=n, max_size=n), max_size=5))
    widths = draw(st.lists(WIDTH, min_size=n, max_size=n))
    return headers, rows, widths


@settings(max_examples=400, deadline=None, derandomize=True)
@given(tables())
def test_box_table_is_tabulate_simple_grid_and_every_line_has_one_display_width(
    table: tuple[list[str], list[list[str]], list[int | None]],
) -> None:
    headers, rows, widths = table
    drawn = box_table(headers, rows, widths)
    if any(misread_when_wrapped(prepare_cell(c)) for r in rows for c in r):
        return  # tabulate itself is wrong there: test_cells_tabulate_misreads_when_wrapped_are_drawn_as_text
    assert drawn == tabulate(
        [[prepare_cell(c) for c in r] for r in rows],
        headers=[prepare_cell(h) for h in headers],
        tablefmt="simple_grid",
        maxcolwidths=widths,
        disable_numparse=True,
    )
    lines = drawn.split("\n")
    assert lines[0].startswith("┌") and lines[-1].startswith("└")
    assert len({wcswidth(line) for line in lines}) == 1  # aligned boxes on a terminal
    assert "\x1b" not in drawn and "\t" not in drawn and "\u202e" not in drawn


def test_box_table_matches_tabulate_simple_grid() -> None:
    headers = ["Cluster", "Job ID", "Note"]
    rows = [["leo", "12", "short"], ["tacc", "3_4", "a longer note that wraps around"], ["x", "", "—"]]
    ours = box_table(headers, rows, [None, None, 12])
    theirs = tabulate(
        rows, headers=headers, tablefmt="simple_grid", maxcolwidths=[None, None, 12], disable_numparse=True
    )
    assert ours == theirs


def test_box_table_matches_tabulate_on_tall_rows() -> None:
    headers = ["Cluster", "Name", "Step", "Note"]
    rows = [
        ["leo", "rl__a2_qwen8b_lr3e6", "45/100", "[liveness_stale] no output for 214 min (cadence 30 min); last line"],
        ["tacc", "sft__cell_with_a_rather_long_name", "?", "one\ntwo lines"],
        ["jup", "x", "3/4", "—"],
        ["cw", "eval-tb2", "1/2", "a note long enough to wrap twice over the sixty character column width"],
    ]
    widths = [None, 12, None, 20]
    assert box_table(headers, rows, widths) == tabulate(
        rows, headers=headers, tablefmt="simple_grid", maxcolwidths=widths, disable_numparse=True
    )


@pytest.mark.parametrize("cell", ["False", "True", "80,443", "1,000.5", "-1,000", "\n", "1,000\n"])
def test_cells_tabulate_misreads_when_wrapped_are_drawn_as_text(cell: str) -> None:
    # each fits its column: what tabulate draws without wrapping (where it honours disable_numparse)
    table = box_table(["Job", "Note"], [["sft__x", cell]], [None, 60])
    assert misread_when_wrapped(prepare_cell(cell))
    assert table == tabulate(
        [["sft__x", prepare_cell(cell)]], headers=["Job", "Note"], tablefmt="simple_grid", disable_numparse=True
    )


def test_a_tqdm_line_keeps_its_runs_of_spaces() -> None:
    # Before: the hand-drawn grid collapsed them (`12%|█▏ | 227/1875 [10:18<1:14:44, 2.72s/it]`).
    note = f"[liveness_stale] no output for 32 min (cadence 30 min); last line: '{TQDM}'"
    table = box_table(["Job", "Note"], [["sft__cell_2", note]], [None, 60])
    assert f"line: '{TQDM}'" in table


def test_wide_characters_wrap_at_display_columns_and_stay_aligned() -> None:
    note = "学習が停止しました 損失が発散 👍👍 then ascii words that wrap"
    table = box_table(["Cluster", "Note"], [["jupiter", note], ["leo", "ok"]], [None, 12])
    lines = table.split("\n")
    assert len({wcswidth(line) for line in lines}) == 1
    note_cells = [line.split("│")[2].strip() for line in lines[3:] if line.startswith("│")][:-1]  # not "ok"
    assert all(wcswidth(cell) <= 12 for cell in note_cells) and len(note_cells) > 4
    assert "".join(note_cells).replace(" ", "") == note.replace(" ", "")  # nothing lost in the wrap


def test_number_like_cells_stay_text() -> None:
    # no number parsing: "007" keeps its zeros, "1e3" is not 1000.0, and both are left-aligned
    table = box_table(["Job ID", "Step"], [["007", "1e3"], ["12", "45/100"]], [None, None])
    assert "│ 007      │ 1e3    │" in table and "│ 12       │ 45/100 │" in table


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("3:23", "00:03:23"),  # squeue MM:SS
        ("1:02:03", "01:02:03"),  # squeue H:MM:SS
        ("2-3:04:05", "2-03:04:05"),  # squeue D-H:MM:SS
        ("00:00:10", "00:00:10"),  # sacct, already in the one form
        ("12-00:00:00", "12-00:00:00"),
        ("INVALID", "INVALID"),
        ("", ""),
    ],
)
def test_elapsed_has_one_form(raw: str, shown: str) -> None:
    assert elapsed_text(raw) == shown


def test_one_table_shows_squeue_and_sacct_elapsed_alike() -> None:
    running = Job("c1", "1", "rl__a", "RUNNING", "squeue", elapsed="3:23", bucket="RL")
    done = Job("c1", "2", "rl__b", "COMPLETED", "sacct", elapsed="00:00:10", bucket="RL")
    table = render_bucket("RL", [running, done], [], lambda c, b: 30)
    assert "│ 00:03:23 " in table and "│ 00:00:10 " in table and " 3:23 " not in table


def test_table_rows_reads_a_wrapped_cell_as_one_text() -> None:
    """The tests' table reader (helpers.table_rows) joins a wrapped cell, so an assertion on a note
    holds whatever the column widths."""
    from helpers import table_rows

    note = "log not read: no such file; job name holds a newline"
    table = box_table(["Job", "Name", "Note"], [["1", "rl__a\nb", note], ["2", "ok", "—"]], [None, 4, 16])
    assert "job name holds a newline" not in table  # wrapped across lines
    rows = table_rows(table)
    assert [r["Job"] for r in rows] == ["1", "2"]
    assert "job name holds a newline" in rows[0]["Note"] and rows[1]["Note"] == "—"


def test_lr_column_shows_the_rate_a_dash_when_the_log_has_none_and_unknown_when_unread() -> None:
    from helpers import table_rows

    from sweep_core.fanin.render import METRIC_COLUMNS
    from sweep_core.records.vocab import Bucket

    base = {"step": 5, "max_steps": 10, "reward": 0.5, "grad_norm": 1.0, "entropy": 0.4, "tis": 1.0}
    with_lr = Job("c1", "1", "rl__a", "RUNNING", "squeue", bucket="RL", metrics={**base, "lr": 1e-06})
    no_lr = Job("c1", "2", "rl__b", "RUNNING", "squeue", bucket="RL", metrics={**base, "lr": None})
    unread = Job("c1", "3", "rl__c", "RUNNING", "squeue", bucket="RL")
    table = render_bucket("RL", [with_lr, no_lr, unread], [], lambda c, b: 30, METRIC_COLUMNS[Bucket.RL])
    rows = {r["Job ID"]: r for r in table_rows(table)}
    assert (rows["1"]["LR"], rows["2"]["LR"], rows["3"]["LR"]) == ("1e-06", "—", "?")
    sft = Job("c1", "4", "sft_a", "RUNNING", "squeue", bucket="SFT", metrics={"step": 1, "total": 2, "lr": 2.5e-05})
    sft_rows = table_rows(render_bucket("SFT", [sft], [], lambda c, b: 30, METRIC_COLUMNS[Bucket.SFT]))
    assert sft_rows[0]["LR"] == "2.5e-05" and sft_rows[0]["Grad"] == "?"
