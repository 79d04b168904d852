"""The dated run log (``YYYY-MM-DD_<topic>.md``) and the short run note."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path

import jinja2

from sweep_core.fanin.render import SweepResult
from sweep_core.fanin.usage import usage_notes
from sweep_core.records.models import ClusterStatus
from sweep_core.records.vocab import Severity
from sweep_core.safe.text import clean, md_code, md_fence, md_text
from sweep_core.state.durable import locked, write_atomic

NOTE_LIMIT = 1000  # Airflow's dag_run note column holds 1000 characters


def run_log_name(window_end: dt.datetime, topic: str) -> str:
    """``YYYY-MM-DD_<topic>.md``; topic may use ``{end:%H%M}``."""
    name = f"{window_end:%Y-%m-%d}_{topic.format(end=window_end)}.md"
    if "/" in name or name.startswith("."):
        raise ValueError(f"run log topic {topic!r} makes an unsafe file name {name!r}")
    return name


def run_log_path(run_log_dir: str | Path, window_end: dt.datetime, topic: str) -> Path:
    """``<dir>/YYYY-MM-DD_<topic>.md`` (a local run-log folder)."""
    return Path(run_log_dir) / run_log_name(window_end, topic)


def is_run_of(run_id: str, window_start: str, window_end: str) -> Callable[[str], bool]:
    """Whether a run log's head was written by this run (its run id, or its window)."""
    mine = (f"- Run: {md_code(run_id)}", f"- Window (sacct -S/-E): {md_text(window_start)} → {md_text(window_end)}")
    return lambda head: any(line in head.splitlines() for line in mine)


def own_run_log(path: Path, run_id: str, window_start: str, window_end: str) -> Path:
    """``path``, or ``<stem>-2.md``, ``-3``... when ``path`` holds the log of ANOTHER run: a re-run
    (the same run id, or the same window) replaces its own log, never another run's (a run by hand
    whose window ends in the minute a scheduled one ended)."""
    mine = is_run_of(run_id, window_start, window_end)
    for n in range(1, 100):
        candidate = path if n == 1 else path.with_name(f"{path.stem}-{n}{path.suffix}")
        try:
            head = candidate.read_text(encoding="utf-8", errors="replace")[:4000]
        except FileNotFoundError:
            return candidate
        if mine(head):
            return candidate
    return path


def _one_line(text: str) -> str:
    return clean(text, newlines=False)


def report_text(result: SweepResult) -> str:
    """The sweep as the task log prints it: the changes, the tables, the actions taken / flagged."""
    text = "Changes since the previous sweep\n" + "\n".join(f"- {c}" for c in result.changes)
    text += "\n\n" + result.rendered.text()
    return text + "\n\nActions taken / flagged\n" + ("\n".join(f"- {f}" for f in flagged_lines(result)) or "- none")


def flagged_lines(result: SweepResult, esc: Callable[[str], str] = _one_line) -> list[str]:
    """The 'actions taken / flagged' items: cluster problems, then every rule's flag by severity.

    ``esc`` is applied to what came from a cluster (names, log lines, stderr): by default control
    characters are stripped (plain text, one line each); ``safe_text.md_text`` for Markdown.
    """
    lines = []
    for s in result.snapshots:
        if s.status not in (ClusterStatus.OK, ClusterStatus.SKIPPED, ClusterStatus.DROPPED):
            lines.append(f"[cluster-{s.status.lower()}] {esc(s.cluster)}: {esc('; '.join(s.notes) or s.status)}")
    order = {Severity.CRITICAL: 0, Severity.WARN: 1, Severity.INFO: 2}
    lines += [f.line(esc) for f in sorted(result.flags, key=lambda f: order.get(f.severity, 3))]
    return lines


def unknown_lines(result: SweepResult) -> list[str]:
    """Why a job's ``?`` columns are ``?``, every reason in full (the table's Note says them in a few
    words: fanin.render.short_reasons), one Markdown line per job: a RUNNING job's metric columns, an
    ended job's efficiency figures (fanin.usage.usage_notes)."""
    out = []
    for jobs in result.grouped.values():
        for j in jobs:
            why = list(j.metric_problems) if j.source == "squeue" else []
            why += usage_notes(j)
            if why:
                out.append(f"{md_text(j.cluster)} {md_text(j.job_id)} {md_text(j.name)}: {md_text('; '.join(why))}")
    return out


def render_run_log(
    result: SweepResult,
    template_dir: str | Path,
    *,
    dag_id: str,
    run_id: str,
    window_start: str,
    window_end: str,
    template: str = "run_log.md.j2",
) -> str:
    """The run log markdown from the Jinja template."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    # Cluster text leaves a code fence only through these filters: md (escaped text), code (a code
    # span nothing can close), fence (a block nothing can close); see sweep_core.safe.text.
    env.filters.update(md=md_text, code=md_code, fence=md_fence)
    return env.get_template(template).render(
        snapshots=result.snapshots,
        counts=result.counts(),
        rendered=result.rendered,
        flagged=flagged_lines(result, md_text),
        unknowns=unknown_lines(result),
        changes=result.changes,
        off=result.off,
        dag_id=dag_id,
        run_id=run_id,
        window_start=window_start,
        window_end=window_end,
    )


def write_run_log(path: Path, text: str) -> Path:
    """Write atomically (a temp file of this writer + rename): a re-run of the same window replaces its log."""
    return write_atomic(path, text.encode("utf-8"))


def update_run_log(path: Path, change: Callable[[str], str]) -> Path:
    """Read the run log ('' when none yet), ``change`` it, write it, under the run log's lock: the
    sweep and its hand-offs (several at once) each add their section, none lost."""
    with locked(path.with_name(f".{path.name}.lock")):
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        return write_run_log(path, change(old))


def run_note(result: SweepResult, log_path: str | Path | None) -> str:
    """A short DAG-run note: cluster states, bucket counts, flags; within Airflow's 1000 chars.
    Airflow renders it as Markdown, where single line breaks join lines into one paragraph: each
    header line is its own paragraph (blank line between), the flags a list."""
    head = " · ".join(f"{md_text(s.cluster)} {s.status}" for s in result.snapshots)
    counts = " · ".join(f"{md_text(b)} {n}" for b, n in result.counts().items())
    flags = flagged_lines(result, md_text)
    text = f"Clusters: {head}\n\nJobs: {counts}\n\nFlagged: {len(flags)}"
    if flags:
        text += "\n\n" + "\n".join(f"- {f}" for f in flags)
    tail = f"\n\nRun log: {md_code(log_path)}" if log_path else ""
    if len(text) + len(tail) > NOTE_LIMIT:  # the flags are cut, never the run log's name
        text = text[: NOTE_LIMIT - len(tail) - 20] + "\n\n… (see run log)"
    return text + tail


_MARKER_LINE = re.compile(r"^(\s*)(<!-- /?handoff:)", re.M)


def upsert_section(text: str, key: str, body: str) -> str:
    """``text`` with the section tagged ``key`` set to ``body``: appended once, replaced on re-run.
    Markers count only as whole lines; a body line that looks like one (cluster text) is indented
    so that no hand-off output can end or fake a section."""
    start, end = f"<!-- handoff:{key} -->", f"<!-- /handoff:{key} -->"
    body = _MARKER_LINE.sub(r" \1\2", body.rstrip())
    block = f"{start}\n{body}\n{end}\n"
    m_start = re.search(rf"^{re.escape(start)}$", text, re.M)
    m_end = re.search(rf"^{re.escape(end)}$\n?", text[m_start.end() :], re.M) if m_start else None
    if m_start and m_end:
        rest = text[m_start.end() + m_end.end() :]
        return text[: m_start.start()] + block + rest.lstrip("\n")
    sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    return text + sep + block


_SECTION = re.compile(r"^<!-- handoff:(?P<key>[^\n]*?) -->\n(?P<body>.*?)^<!-- /handoff:(?P=key) -->$", re.M | re.S)


def keep_sections(old: str, new: str, run_id: str) -> str:
    """``new`` with the sections of ``old`` that belong to run ``run_id`` (its hand-offs' records,
    keyed ``<dag>:<run_id>...``): a re-run that rewrites its run log does not lose them."""
    for m in _SECTION.finditer(old):
        rest = m["key"].partition(":")[2]  # "<run id>", "<run id>__cleanup", "<run id>:given"
        tail = rest[len(run_id) :]
        if run_id and rest.startswith(run_id) and (not tail or tail.startswith(("__", ":"))):
            new = upsert_section(new, m["key"], m["body"])
    return new
