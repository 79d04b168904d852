"""Box-drawing tables (┌─┬─┐, not Markdown): one cluster overview, then one unified
cross-cluster table per bucket."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sweep_core.liveness import last_output_text
from sweep_core.models import ClusterSnapshot, ClusterStatus, Job

NOTE_WIDTH = 60

MetricColumns = dict[str, Sequence[tuple[str, Callable[[Job], str]]]]


def _fmt(value: object, digits: int = 3) -> str:
    if value is None:
        return "?"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _frac(a: object, b: object) -> str:
    if a is None and b is None:
        return "?"
    return f"{_fmt(a)}/{_fmt(b)}"


def _metric(key: str, digits: int = 3) -> Callable[[Job], str]:
    return lambda j: _fmt(j.metrics.get(key), digits) if j.metrics else "?"


def _infra(job: Job) -> str:
    checks = job.metrics.get("checks") or {}
    if not checks:
        return "?"
    bad = [k for k, v in checks.items() if v != "ok"]
    return f"{len(checks)}/{len(checks)} ok" if not bad else " ".join(f"{k} FAIL" for k in bad)


def _pct(value: object) -> str:
    return "?" if value is None else f"{float(value):.1f}%"  # type: ignore[arg-type]


# The mandatory metric columns per bucket (spec §3); "?" = could not be read (the note says why).
METRIC_COLUMNS: MetricColumns = {
    "RL": (
        ("Step", lambda j: _frac(j.metrics.get("step"), j.metrics.get("max_steps")) if j.metrics else "?"),
        ("Reward", _metric("reward")),
        ("Grad", _metric("grad_norm")),
        ("Entropy", _metric("entropy")),
        ("TIS", _metric("tis")),
    ),
    "SFT": (
        ("Step", lambda j: _frac(j.metrics.get("step"), j.metrics.get("total")) if j.metrics else "?"),
        ("Loss", _metric("loss", 4)),
        ("Grad", _metric("grad_norm")),
    ),
    "Datagen": (
        ("Chunks", lambda j: _frac(j.metrics.get("chunks_done"), j.metrics.get("chunks_total")) if j.metrics else "?"),
        ("result.json", _metric("results")),
        ("Avg turns", _metric("avg_turns")),
        ("Exc%", lambda j: _pct(j.metrics.get("exc_pct"))),
    ),
    "Eval": (
        ("Done", lambda j: _frac(j.metrics.get("done"), j.metrics.get("total")) if j.metrics else "?"),
        ("Pass", lambda j: _pct(100 * j.metrics["pass_rate"]) if j.metrics.get("pass_rate") is not None else "?"),
        ("Top exception", lambda j: j.metrics.get("top_exception") or "—"),
        ("Infra", _infra),
    ),
}


@dataclass
class RenderedSweep:
    overview: str
    tables: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        parts = [f"Clusters\n{self.overview}"]
        parts += [f"{name}\n{table}" for name, table in self.tables.items()]
        return "\n\n".join(parts)


def _cell_lines(text: str, width: int | None) -> list[str]:
    if "\n" not in text and (width is None or len(text) <= width):
        return [text]
    lines = text.split("\n")
    if width is None or all(len(ln) <= width for ln in lines):
        return lines
    out: list[str] = []
    for ln in lines:
        out += wrap_words(ln, width)
    return out


def wrap_words(line: str, width: int) -> list[str]:
    """Greedy word wrap (textwrap.wrap's result for plain text, long words broken), ~5x faster."""
    out: list[str] = []
    cur = ""
    for word in line.split():
        while len(word) > width:
            if cur:
                room = width - len(cur) - 1
                if room > 0:
                    out.append(f"{cur} {word[:room]}")
                    word = word[room:]
                else:
                    out.append(cur)
                cur = ""
                continue
            out.append(word[:width])
            word = word[width:]
        if not word:
            continue
        if not cur:
            cur = word
        elif len(cur) + 1 + len(word) <= width:
            cur = f"{cur} {word}"
        else:
            out.append(cur)
            cur = word
    if cur:
        out.append(cur)
    return out or [""]


def box_table(headers: list[str], rows: list[list[str]], widths: list[int | None]) -> str:
    """The same box-drawing grid as tabulate's ``simple_grid`` (┌─┬─┐ │ ├─┼─┤ └─┴─┘).

    Drawn here rather than by tabulate: at 10,000 rows tabulate's type inference and per-cell
    wrapping took ~6 s of a 1 s fan-in budget (benchmarks/fan_in.py); this takes ~0.1 s.
    """
    cells = [[_cell_lines(c, w) for c, w in zip(r, widths, strict=True)] for r in [headers, *rows]]
    # tabulate's widths: the longest line, and at least the header + 2 (its MIN_PADDING)
    col = [
        max(max(len(ln) for row in cells[1:] for ln in row[i]) if rows else 0, max(map(len, cells[0][i])) + 2)
        for i in range(len(headers))
    ]

    def rule(left: str, mid: str, right: str) -> str:
        return left + mid.join("─" * (w + 2) for w in col) + right

    def body(row: list[list[str]]) -> list[str]:
        height = max(map(len, row))
        if height == 1:
            return ["│ " + " │ ".join(c[0].ljust(w) for c, w in zip(row, col, strict=True)) + " │"]
        return [
            "│ " + " │ ".join((c[k] if k < len(c) else "").ljust(w) for c, w in zip(row, col, strict=True)) + " │"
            for k in range(height)
        ]

    out = [rule("┌", "┬", "┐"), *body(cells[0])]
    for row in cells[1:]:
        out.append(rule("├", "┼", "┤"))
        out += body(row)
    out.append(rule("└", "┴", "┘"))
    return "\n".join(out)


def render_overview(snaps: Sequence[ClusterSnapshot]) -> str:
    """One row per cluster: status, which login node answered, counts (``?`` when UNKNOWN)."""
    headers = ["Cluster", "Scheduler", "Status", "Login node", "Running", "Ended in window", "Note"]
    rows = []
    for s in snaps:
        rows.append(
            [
                s.cluster,
                s.scheduler,
                str(s.status),
                s.login_node or "—",
                "?" if s.running is None else str(len(s.running)),
                "?" if s.finished is None else str(len(s.finished)),
                "; ".join(s.notes) or "—",
            ]
        )
    return box_table(headers, rows, [None, None, None, 24, None, None, NOTE_WIDTH])


def job_sort_key(job: Job) -> tuple[bool, str, tuple[int, ...], str]:
    """RUNNING first, then by cluster and numeric job id (9 before 10, 3_2 before 3_10)."""
    nums = tuple(int(n) for n in re.findall(r"\d+", job.job_id))
    return (job.source != "squeue", job.cluster, nums, job.job_id)


def _job_note(job: Job) -> str:
    parts = [f"[{f['rule']}] {f['message']}" for f in job.flags]
    if job.metrics.get("metrics_from"):
        parts.append(f"metrics from {job.metrics['metrics_from']}")
    if job.source == "squeue" and job.log_note:
        parts.append(job.log_note)
    elif job.source == "squeue" and job.metric_problems:
        parts.append("?: " + "; ".join(job.metric_problems))
    if job.reason:
        parts.append(job.reason)
    return "; ".join(parts) or "—"


def render_bucket(
    bucket: str,
    jobs: Sequence[Job],
    snaps: Sequence[ClusterSnapshot],
    cadence_for: Callable[[str, str], int],
    metric_columns: Sequence[tuple[str, Callable[[Job], str]]] = (),
) -> str:
    """The unified table of one bucket: RUNNING rows (with last output), then jobs that ended in
    the window, then a row per cluster whose running set is UNKNOWN (never shown as empty)."""
    headers = ["Cluster", "Job ID", "Name", "State", "Elapsed", "Last output / End"]
    headers += [h for h, _ in metric_columns] + ["Note"]
    rows: list[list[str]] = []
    order = sorted(jobs, key=job_sort_key)
    for job in order:
        if job.source == "squeue":
            cadence = cadence_for(job.cluster, job.bucket)
            when = last_output_text(job.minutes_since_output, job.stale, cadence, "no log" if job.log_note else "")
        else:
            when = f"ended {job.end or '?'} (exit {job.exit_code or '?'})"
        row = [job.cluster, job.job_id, job.name, job.state, job.elapsed or "—", when]
        row += [fn(job) for _, fn in metric_columns]
        row.append(_job_note(job))
        rows.append(row)
    for s in snaps:
        if s.status in (ClusterStatus.SKIPPED, ClusterStatus.DROPPED):
            continue
        if s.running is None:
            reason = "; ".join(s.notes) or "running set unknown"
            rows.append(
                [
                    s.cluster,
                    "?",
                    "?",
                    "UNKNOWN",
                    "?",
                    "?",
                    *(["?"] * len(metric_columns)),
                    f"running jobs UNKNOWN ({s.status}): {reason}",
                ]
            )
    if not rows:
        rows.append(["—", "—", "(no jobs)", "—", "—", "—", *(["—"] * len(metric_columns)), "—"])
    widths: list[int | None] = [None, None, 40, None, None, 40] + [24] * len(metric_columns) + [NOTE_WIDTH]
    return box_table(headers, rows, widths)


def render_sweep(
    snaps: Sequence[ClusterSnapshot],
    grouped: dict[str, list[Job]],
    cadence_for: Callable[[str, str], int],
    metric_columns: MetricColumns | None = None,
) -> RenderedSweep:
    """Overview plus one table per bucket, in bucket order."""
    metric_columns = METRIC_COLUMNS if metric_columns is None else metric_columns
    out = RenderedSweep(overview=render_overview(snaps))
    for bucket, jobs in grouped.items():
        out.tables[bucket] = render_bucket(bucket, jobs, snaps, cadence_for, metric_columns.get(bucket, ()))
    return out
