"""The dated run log (``YYYY-MM-DD_<topic>.md``) and the short run note."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import jinja2

from sweep_core.models import ClusterStatus
from sweep_core.sweep import SweepResult

NOTE_LIMIT = 1000  # Airflow's dag_run note column holds 1000 characters


def run_log_path(run_log_dir: str | Path, window_end: dt.datetime, topic: str) -> Path:
    """``<dir>/YYYY-MM-DD_<topic>.md``; topic may use ``{end:%H%M}``."""
    name = f"{window_end:%Y-%m-%d}_{topic.format(end=window_end)}.md"
    if "/" in name or name.startswith("."):
        raise ValueError(f"run log topic {topic!r} makes an unsafe file name {name!r}")
    return Path(run_log_dir) / name


def flagged_lines(result: SweepResult) -> list[str]:
    """The 'actions taken / flagged' items: cluster problems, then every rule's flag by severity."""
    lines = []
    for s in result.snapshots:
        if s.status not in (ClusterStatus.OK, ClusterStatus.SKIPPED, ClusterStatus.DROPPED):
            lines.append(f"[cluster-{s.status.lower()}] {s.cluster}: {'; '.join(s.notes) or s.status}")
    order = {"critical": 0, "warn": 1, "info": 2}
    lines += [f.line() for f in sorted(result.flags, key=lambda f: order.get(f.severity, 3))]
    return lines


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
    return env.get_template(template).render(
        snapshots=result.snapshots,
        counts=result.counts(),
        rendered=result.rendered,
        flagged=flagged_lines(result),
        changes=result.changes,
        dag_id=dag_id,
        run_id=run_id,
        window_start=window_start,
        window_end=window_end,
    )


def write_run_log(path: Path, text: str) -> Path:
    """Write atomically (temp file + rename): a re-run of the same window replaces its log."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def run_note(result: SweepResult, log_path: Path | None) -> str:
    """A short DAG-run note: cluster states, bucket counts, flags; within Airflow's 1000 chars."""
    head = " · ".join(f"{s.cluster} {s.status}" for s in result.snapshots)
    counts = " · ".join(f"{b} {n}" for b, n in result.counts().items())
    flags = flagged_lines(result)
    text = f"Clusters: {head}\nJobs: {counts}\nFlagged: {len(flags)}"
    if flags:
        text += "\n" + "\n".join(f"- {f}" for f in flags)
    if log_path:
        text += f"\nRun log: {log_path}"
    if len(text) > NOTE_LIMIT:
        text = text[: NOTE_LIMIT - 20] + "\n… (see run log)"
    return text


def upsert_section(text: str, key: str, body: str) -> str:
    """``text`` with the section tagged ``key`` set to ``body``: appended once, replaced on re-run."""
    start, end = f"<!-- handoff:{key} -->", f"<!-- /handoff:{key} -->"
    block = f"{start}\n{body.rstrip()}\n{end}\n"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        return head + block + rest.split(end, 1)[1].lstrip("\n")
    sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    return text + sep + block
