"""Cluster text leaves a code fence only escaped: no terminal escapes, no live Markdown/HTML, no
fence or code span a value can close (sweep_core.safe.text, and every boundary that uses it)."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.render import box_table
from sweep_core.fanin.report import flagged_lines, render_run_log, run_note
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.safe.text import clean, md_code, md_fence, md_text

ROOT = Path(__file__).resolve().parents[2]
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")
NOW = 1_764_680_000.0
HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "[x](https://evil)",
    "a`b``c",
    "col|umn",
    "\x1b[2J",
    "\x1b]8;;http://x\x07click\x1b]8;;\x07",
    "abc\u202eevil",
    "\x1b[36m(pid=4242)\x1b[0m hello",
    "# heading",
    "```",
]
MD = MarkdownIt("commonmark").enable("table")


def _controls(text: str) -> set[str]:
    """Characters a terminal or a bidi-aware viewer acts on (newline is the one allowed)."""
    return {
        c
        for c in text
        if c != "\n" and (unicodedata.category(c) in ("Cc", "Cf") or c in "\u2028\u2029") and c not in "\u200c\u200d"
    }


def _html(markdown: str) -> str:
    return MD.render(markdown)


@pytest.mark.parametrize("text", HOSTILE)
def test_md_text_renders_literally(text: str) -> None:
    html = _html(md_text(text))
    assert "<img" not in html and "<a " not in html and "<code>" not in html and "<h1>" not in html
    assert _controls(md_text(text)) == set()
    visible = re.sub(r"<[^>]+>", "", html).strip()  # what a reader sees: the text, controls gone
    assert visible.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").replace("&quot;", '"') == clean(
        text, newlines=False
    ).replace("://", "[:]//")  # a bare URL defanged: a GFM renderer would link it


def test_md_text_leaves_no_bare_url_a_gfm_renderer_links() -> None:
    line = "approve here: https://airflow.evil.example/approve or www.evil.example/x (HTTP://EVIL.example)"
    out = md_text(line)
    assert "<a " not in MarkdownIt("gfm-like").render(out) and "<a " in MarkdownIt("gfm-like").render(line)
    assert "https[:]//airflow.evil.example/approve" in _html(out) and "www[.]evil.example/x" in _html(out)


def test_clean_strips_ansi_osc_and_bidi_keeps_text() -> None:
    assert clean("\x1b[31mred\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07 \u202edone\r\n\tok") == "red link done\n\tok"
    assert clean("a\nb\tc", newlines=False) == "a b c"
    assert clean("plain rl__a2_qwen8b: loss=0.31") == "plain rl__a2_qwen8b: loss=0.31"
    assert md_text("rl__a2_qwen8b_resume1") == "rl__a2_qwen8b_resume1"  # intraword _ stays readable


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_property_no_control_characters_and_balanced_fences(text: str) -> None:
    for out in (clean(text), md_text(text), md_code(text), md_fence(text)):
        assert _controls(out) <= {"\t"}
    assert "\n" not in md_text(text) and "\n" not in md_code(text)
    # a fence: exactly one code block holding the whole (cleaned) text, nothing rendered after it
    tokens = MD.parse(md_fence(text) + "\n\nafter")
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 and fences[0].content == clean(text).replace("\t", "    ") + "\n"
    assert tokens[-2].type == "inline" and tokens[-2].content == "after"
    # a code span: one span holding the whole one-line text
    inline = MD.parseInline("x " + md_code(text) + " y")[0].children
    codes = [t for t in inline if t.type == "code_inline"]
    assert len(codes) == 1 and codes[0].content.strip(" ") == clean(text, newlines=False).strip(" ")


def _hostile_snapshot() -> ClusterSnapshot:
    def job(jid: str, name: str, **kw) -> Job:
        return Job(cluster="c1", job_id=jid, name=name, **kw)

    tail = (
        "".join(f"step 3 {h}\n" for h in HOSTILE) + "Traceback (most recent call last):\nValueError: ``` <b>boom</b>\n"
    )
    return ClusterSnapshot(
        "c1",
        "slurm",
        ClusterStatus.OK,
        login_node="login01",
        remote_now=NOW,
        running=[
            job(str(i), f"rl__{h}", state="RUNNING", source="squeue", log_mtime=NOW - 4 * 3600, log_tail=tail)
            for i, h in enumerate(HOSTILE, 1)
        ],
        finished=[
            job(
                "99",
                "sft__```<img src=x onerror=alert(1)>",
                state="FAILED",
                source="sacct",
                exit_code="1:0",
                log_tail=tail,
            )
        ],
    )


def test_run_log_and_note_keep_cluster_text_inert(tmp_path: Path) -> None:
    bad = ClusterSnapshot("c2", "slurm", ClusterStatus.UNKNOWN, notes=["squeue: \x1b[2J<img src=x onerror=alert(1)>"])
    result = run_fan_in([_hostile_snapshot(), bad], CONFIG)
    result.changes = [f"gone: c1 RL 1 rl__{HOSTILE[0]}", "new failure: [x](https://evil) `"]
    text = render_run_log(
        result, ROOT / "include" / "templates", dag_id="d", run_id="r`x", window_start="s", window_end="e"
    )
    assert _controls(text) == set()  # `cat` of the run log cannot clear a terminal or reorder text
    html = _html(text)
    assert "<img" not in html and 'href="https://evil"' not in html and "<b>" not in html
    # every box table is still inside ONE fenced block (a ``` in a cell did not close it)
    tokens = MD.parse(text)
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 + len(result.rendered.tables)
    assert all(f.content.startswith("┌") and f.content.rstrip("\n").endswith("┘") for f in fences)
    assert "[liveness_stale]" in text and "[cluster-unknown] c2" in text
    note = run_note(result, tmp_path / "x.md")
    assert _controls(note) == set() and "<img" not in _html(note) and 'href="https://evil"' not in _html(note)
    # the task log (plain text) keeps the text, without escapes
    plain = "\n".join(flagged_lines(result))
    assert _controls(plain) == set() and "<img src=x onerror=alert(1)>" in plain


def test_box_table_strips_controls_and_tabs_from_cells() -> None:
    table = box_table(["name", "note"], [["a\x1b[2Jb", "x\ty\u202e"], ["ok", "```"]], [None, None])
    assert _controls(table) == set() and "ab" in table and "x y" in table
    widths = {len(line) for line in table.splitlines()}
    assert len(widths) == 1  # the grid stays aligned


def test_handoff_section_cannot_be_closed_by_its_text(tmp_path: Path, monkeypatch) -> None:
    from sweep_operators.handoff_record import append_record

    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", str(tmp_path))
    log = tmp_path / "2026-12-02_sweep.md"
    log.write_text("# Sweep\n")
    ctx = {"params": {"run_log": str(log)}, "run_id": "manual__1"}
    append_record(ctx, str(ROOT / "include" / "sweep.yaml"), "sweep_cancel", "job x```\n```\n<img src=x>\x1b[2J")
    text = log.read_text()
    assert _controls(text) == set()
    fences = [t for t in MD.parse(text) if t.type == "fence"]
    assert len(fences) == 1 and "<img src=x>" in fences[0].content and "<img" not in _html(text).replace("&lt;img", "")


def test_window_values_and_dates_are_plain() -> None:
    assert md_text(dt.datetime(2026, 12, 2, tzinfo=dt.UTC).isoformat()) == "2026-12-02T00:00:00+00:00"


def test_handoff_output_cannot_end_or_fake_a_run_log_section() -> None:
    """A hand-off section whose cluster text holds a line that looks like a section marker is
    replaced whole on a re-run, and the section after it survives."""
    from sweep_core.fanin.report import upsert_section

    log = "# run log\n"
    hostile = "rm ok\n<!-- /handoff:sweep_cleanup -->\n<!-- handoff:sweep_cancel -->\ntail"
    log = upsert_section(log, "sweep_cleanup", hostile)
    log = upsert_section(log, "sweep_cancel", "cancelled nothing")
    log = upsert_section(log, "sweep_cleanup", "second run")
    assert log.count("<!-- handoff:sweep_cleanup -->") == 1 and "rm ok" not in log and "second run" in log
    assert log.count("\n<!-- handoff:sweep_cancel -->\n") == 1 and "cancelled nothing" in log


def test_run_note_keeps_its_line_breaks_as_markdown(tmp_path: Path) -> None:
    """Airflow renders the note as Markdown: the header lines stay separate blocks, not one paragraph."""
    from sweep_core.fanin.render import RenderedSweep
    from sweep_core.pipeline.steps import SweepResult
    from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag
    from sweep_core.records.vocab import Severity

    snap = ClusterSnapshot("local", "slurm", ClusterStatus.OK)
    result = SweepResult([snap], {}, RenderedSweep("", {}), [])
    html = _html(run_note(result, tmp_path / "x.md"))
    paragraphs = re.findall(r"<p>(.*?)</p>", html, re.S)
    assert [p.split(":")[0] for p in paragraphs] == ["Clusters", "Jobs", "Flagged", "Run log"]
    many = [Flag(rule="r", severity=Severity.WARN, cluster="local", message="x" * 80) for _ in range(40)]
    long_note = run_note(SweepResult([snap], {}, RenderedSweep("", {}), many), tmp_path / "x.md")
    assert len(long_note) <= 1000 and "… (see run log)" in long_note
    assert long_note.endswith(f"Run log: `{tmp_path / 'x.md'}`")  # cut flags, never the log's name
