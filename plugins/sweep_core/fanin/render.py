"""Box-drawing tables (┌─┬─┐, not Markdown): one cluster overview, then one unified
cross-cluster table per bucket, then the Pending table, drawn by tabulate's ``simple_grid`` from cells whose cluster text
is made safe first (``safe_text.clean``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tabulate import tabulate

from sweep_core.fanin.cursor import cursor_note
from sweep_core.fanin.isolate import guarded
from sweep_core.fanin.liveness import age_text, elapsed_text, epoch_of, last_output_text, pending_minutes, utc_text
from sweep_core.fanin.usage import USAGE_HEADER, bucket_summary, usage_cell, usage_notes
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job
from sweep_core.records.vocab import Bucket
from sweep_core.safe.text import clean
from sweep_core.timing.window import PAST_RUNNING_LOG_NOTE

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


def _shown(key: str) -> Callable[[Job], str]:
    """A column no rule reads (the learning rate): ``—`` when the log prints none, ``?`` when unreadable."""
    return lambda j: ("—" if j.metrics.get(key) is None else _fmt(j.metrics[key])) if j.metrics else "?"


def _infra(job: Job) -> str:
    checks = job.metrics.get("checks") or {}
    if not checks:
        return "?"
    bad = [k for k, v in checks.items() if v != "ok"]
    return f"{len(checks)}/{len(checks)} ok" if not bad else " ".join(f"{k} FAIL" for k in bad)


def _pct(value: object) -> str:
    return "?" if value is None else f"{float(value):.1f}%"  # type: ignore[arg-type]


def _rate(job: Job) -> str:
    """``120/h, ETA 3h10m`` (filled by the progress_rate rule from the series' samples); ``?`` before
    a second sighting."""
    rate, eta = job.metrics.get("steps_per_hour"), job.metrics.get("eta_hours")
    if rate is None:
        return "?"
    return f"{rate:.3g}/h" + (f", ETA {age_text(eta * 60)}" if eta is not None else "")


# The mandatory metric columns per bucket (spec §3); "?" = could not be read (the note says why).
METRIC_COLUMNS: MetricColumns = {
    Bucket.RL: (
        ("Step", lambda j: _frac(j.metrics.get("step"), j.metrics.get("max_steps")) if j.metrics else "?"),
        ("Reward", _metric("reward")),
        ("Grad", _metric("grad_norm")),
        ("Entropy", _metric("entropy")),
        ("TIS", _metric("tis")),
        ("LR", _shown("lr")),
        ("Rate", _rate),
    ),
    Bucket.SFT: (
        ("Step", lambda j: _frac(j.metrics.get("step"), j.metrics.get("total")) if j.metrics else "?"),
        ("Loss", _metric("loss", 4)),
        ("Grad", _metric("grad_norm")),
        ("LR", _shown("lr")),
        ("Rate", _rate),
    ),
    Bucket.DATAGEN: (
        ("Chunks", lambda j: _frac(j.metrics.get("chunks_done"), j.metrics.get("chunks_total")) if j.metrics else "?"),
        ("result.json", _metric("results")),
        ("Avg turns", _metric("avg_turns")),
        ("Exc%", lambda j: _pct(j.metrics.get("exc_pct"))),
    ),
    Bucket.EVAL: (
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


@dataclass
class SweepResult:
    """One sweep's fan-in: the snapshots, the jobs by bucket, the rendered tables, flags and changes."""

    snapshots: list[ClusterSnapshot]
    grouped: dict[str, list[Job]]
    rendered: RenderedSweep
    flags: list[Flag] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    off: dict[str, list[str]] = field(default_factory=dict)  # cluster -> "OFF: <handoff> needs <field> in <file>"

    def counts(self) -> dict[str, int]:
        return {bucket: len(jobs) for bucket, jobs in self.grouped.items()}


def prepare_cell(text: str) -> str:
    """A cell of cluster text as the grid gets it: controls and escape sequences stripped, tabs as
    spaces (newlines kept: a cell may hold several lines)."""
    return clean(text).replace("\t", " ")


def box_table(headers: list[str], rows: list[list[str]], widths: list[int | None]) -> str:
    """tabulate's ``simple_grid`` (┌─┬─┐ │ ├─┼─┤ └─┴─┘) of the prepared cells (:func:`prepare_cell`).

    Every cell is text (no number parsing: left-aligned, as written); a column with a width wraps
    its cells at that many display columns (wide characters count 2: tabulate measures with wcwidth).
    """
    n = len(headers)
    if len(widths) != n or any(len(r) != n for r in rows):
        raise ValueError("box_table: every row and the widths need one entry per header")
    # tabulate 0.10.0 types the cells of a wrapped column with number parsing on, whatever
    # disable_numparse says (astanin/python-tabulate#428): "False" is drawn as "True" and "80,443"
    # raises ValueError. A trailing space makes every cell plain text to it; tabulate strips
    # surrounding whitespace from cells, so the space never shows.
    return tabulate(
        [[prepare_cell(c) + " " for c in r] for r in rows],
        headers=[prepare_cell(h) for h in headers],
        tablefmt="simple_grid",
        maxcolwidths=list(widths),
        disable_numparse=True,
    )


def render_overview(snaps: Sequence[ClusterSnapshot], off: Mapping[str, Sequence[str]] | None = None) -> str:
    """One row per cluster: status, which login node answered, counts (``?`` when UNKNOWN), the
    INODE HEADROOM verdict (``—`` where ops.md says none or dormant), and in its Note the hand-offs
    its config leaves off (``off``: cluster -> ``OFF: <handoff> needs <field> in <file>``) as one
    short line (:func:`off_summary`; what each needs: the run log's head and ``check-config``)."""
    off = off or {}
    headers = ["Cluster", "Scheduler", "Status", "Login node", "Running", "Ended in window", "Quota", "Note"]
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
                _quota_cell(s.quota),
                "\n".join([_overview_note(s), *([off_summary(off[s.cluster])] if off.get(s.cluster) else [])]),
            ]
        )
    return box_table(headers, rows, [None, None, None, 24, None, None, 30, NOTE_WIDTH])


def off_summary(lines: Sequence[str]) -> str:
    """``OFF: <handoff> needs <field> in <file>`` lines as one short line: the hand-offs' names, and
    where what each needs is said (the run log's head, ``check-config``)."""
    names = list(dict.fromkeys(ln.split()[1] if ln.startswith("OFF: ") and len(ln.split()) > 1 else ln for ln in lines))
    return f"OFF: {', '.join(names)} (what each needs: run log head, check-config)"


_DETAIL = re.compile(r"\s*\([^()]*\)")  # a parenthesised detail: the names tried, what a line held
_NO_COLUMN = re.compile(r"^no (\S+) in (.+)$")


def short_reasons(problems: Sequence[str], width: int = 80) -> str:
    """Why the ``?`` columns are ``?``, in a few words for the table: each reason without its
    parenthesised details, ``no <col> in <where>`` of several columns said once (``no grad_norm,
    entropy in the last WANDB_MIRROR dict``), each cut to ``width``. The full reasons: the run log."""
    merged: dict[tuple[str, str], list[str]] = {}  # (reason, '') or ('', where) -> its columns
    for p in problems:
        short = _DETAIL.sub("", p).strip() or p
        m = _NO_COLUMN.match(short)
        cols = merged.setdefault(("", m.group(2)) if m else (short, ""), [])
        if m and m.group(1) not in cols:
            cols.append(m.group(1))
    said = [reason or f"no {', '.join(cols)} in {where}" for (reason, where), cols in merged.items()]
    return "; ".join(t if len(t) <= width else t[: width - 1] + "…" for t in said)


def _overview_note(s: ClusterSnapshot) -> str:
    """The cluster's notes; a swept cluster whose running set is UNKNOWN says so here, once (no
    placeholder row in every bucket table; its jobs that ended in the window are still listed)."""
    notes = list(s.notes)
    if s.running is None and s.status not in (ClusterStatus.SKIPPED, ClusterStatus.DROPPED, ClusterStatus.UNCONFIGURED):
        notes.append("running jobs UNKNOWN (not none): no RUNNING rows for it in the bucket tables")
    return "; ".join(notes) or "—"


def _quota_cell(quota: dict | None) -> str:
    if not quota:
        return "—"
    return f"{quota.get('status', '?')}: {quota.get('reason', '')}".strip(": ")


_DIGITS = re.compile(r"\d+")


def job_sort_key(job: Job) -> tuple[bool, str, tuple[int, ...], str]:
    """RUNNING first, then by cluster and numeric job id (9 before 10, 3_2 before 3_10)."""
    nums = tuple(map(int, _DIGITS.findall(job.job_id)))
    return (job.source != "squeue", job.cluster, nums, job.job_id)


def _job_note(job: Job) -> str:
    parts = [f"[{f['rule']}] {f['message']}" for f in job.flags]
    parts += [e for e in job.errors if not any(e in f["message"] for f in job.flags)]  # a flag may quote it
    if job.metrics.get("log_profile"):  # read with a framework's log profile, not the runbook's formats
        parts.append(f"log format: {job.metrics['log_profile']}")
    if job.metrics.get("metrics_from"):
        parts.append(f"metrics from {job.metrics['metrics_from']}")
    if job.metrics.get("carried"):  # kept from the ledger: the bytes read since did not show them
        parts.append(f"carried: {job.metrics['carried']}")
    if restarted := cursor_note(job):
        parts.append(restarted)
    if job.metrics.get("max_steps_from"):  # filled by rl_resume_overshoot from the ledger
        parts.append(f"max steps {job.metrics.get('max_steps')} from {job.metrics['max_steps_from']}")
    if job.metrics.get("deep_dive"):  # filled by rl_new_untested from the ledger
        parts.append(f"deep-dive {job.metrics['deep_dive']}")
    if job.metrics.get("relaunched"):  # filled by relaunch_escalated from the ledger
        parts.append(str(job.metrics["relaunched"]))
    told = any(f["rule"] == "progress_unreadable" for f in job.flags)  # its flag already says why
    if job.source == "squeue" and job.log_note and not told:
        said = [f["message"] for f in job.flags]  # one note per fact: a flag that says it already
        parts += [n for n in job.log_note.split("; ") if n and not any(n in m for m in said)]
    elif job.source == "squeue" and job.metric_problems and not told:
        parts.append("?: " + short_reasons(job.metric_problems))  # the full reasons: the run log
    parts += [_DETAIL.sub("", n) for n in usage_notes(job)]  # in a few words; in full: the run log's "Why ?"
    if job.reason:
        parts.append(job.reason)
    if job.note:
        parts.append(job.note)
    return "; ".join(parts) or "—"


def _job_row(
    job: Job, cadence_for: Callable[[str, str], int], metric_columns: Sequence[tuple[str, Callable[[Job], str]]]
) -> list[str]:
    if job.source == "squeue" and job.log_note == PAST_RUNNING_LOG_NOTE:
        when = "running at the window's end (past window: output not judged)"
    elif job.source == "squeue":
        cadence = cadence_for(job.cluster, job.bucket)
        when = last_output_text(job.minutes_since_output, job.stale, cadence, "no log" if job.log_note else "")
    elif job.state == "WEDGED":  # iris RUNNING with 0 pods: no end, no exit code is known
        when = "0 pods (no end, no exit code)"
    elif job.state == "VANISHED":  # listed nowhere now: ``end`` is when it was last seen
        when = f"last seen {job.end or '?'}"
    else:
        when = f"ended {job.end or '?'} (exit {job.exit_code or '?'})"
    row = [job.cluster, job.job_id, job.name, job.state, elapsed_text(job.elapsed) or "—", when]
    row += [fn(job) for _, fn in metric_columns]
    row += [usage_cell(job), _job_note(job)]
    return [c if isinstance(c, str) else str(c) for c in row]


def render_bucket(
    bucket: str,
    jobs: Sequence[Job],
    snaps: Sequence[ClusterSnapshot],
    cadence_for: Callable[[str, str], int],
    metric_columns: Sequence[tuple[str, Callable[[Job], str]]] = (),
) -> str:
    """The unified table of one bucket: RUNNING rows (with last output), then jobs that ended in
    the window. A cluster whose running set is UNKNOWN is said once, in the overview's Note
    (:func:`_overview_note`), not as a row in every bucket table."""
    headers = ["Cluster", "Job ID", "Name", "State", "Elapsed", "Last output / End"]
    headers += [h for h, _ in metric_columns] + [USAGE_HEADER, "Note"]
    rows: list[list[str]] = []
    order = sorted(jobs, key=lambda j: guarded(j, "render", lambda: job_sort_key(j)) or (True, "~", (), ""))
    for job in order:
        row = guarded(job, "render", lambda j=job: _job_row(j, cadence_for, metric_columns))
        if row is None:  # this job's data broke its row: "?" cells and the error, the table goes on
            row = [str(job.cluster), str(job.job_id), str(job.name), str(job.state), "?", "?"]
            row += ["?"] * len(metric_columns) + ["?", "; ".join(map(str, job.errors))]
        rows.append(row)
    if not rows:
        rows.append(["—", "—", "(no jobs)", "—", "—", "—", *(["—"] * len(metric_columns)), "—", "—"])
    widths: list[int | None] = [None, None, 40, None, None, 40] + [24] * len(metric_columns) + [28, NOTE_WIDTH]
    summary = bucket_summary(bucket, jobs)  # the efficiency of the bucket's ended jobs, "" if none
    return box_table(headers, rows, widths) + (f"\n{summary}" if summary else "")


def _pending_row(job: Job, now: float | None) -> list[str]:
    waited, start = pending_minutes(job, now), epoch_of(job.start)
    note = [f"[{f['rule']}] {f['message']}" for f in job.flags]
    note += [f"dependency {job.dependency}"] * bool(job.dependency) + [job.note] * bool(job.note)
    return [
        job.cluster,
        job.job_id,
        job.name,
        job.reason or "?",
        "?" if waited is None else age_text(waited),
        utc_text(start) if start is not None else (job.start or "?"),
        "; ".join(note) or "—",
    ]


def render_pending(snaps: Sequence[ClusterSnapshot]) -> str:
    """Every cluster's PENDING jobs: the reason (squeue %R), how long each has waited (its submit time
    on the cluster's clock), its expected start (squeue --start; N/A until the scheduler has one),
    flags (chain_dependency_broken, pending_stuck). A cluster whose pending set is UNKNOWN says so
    in the overview's Note."""
    rows = []
    for s in snaps:
        for job in sorted(s.pending or [], key=job_sort_key):
            row = guarded(job, "render", lambda j=job, now=s.remote_now: _pending_row(j, now))
            rows.append(row or [str(job.cluster), str(job.job_id), str(job.name), "?", "?", "?", "; ".join(job.errors)])
    if not rows:
        rows.append(["—", "—", "(no jobs)", "—", "—", "—", "—"])
    headers = ["Cluster", "Job ID", "Name", "Reason", "Pending for", "Expected start", "Note"]
    return box_table(headers, rows, [None, None, 40, 30, None, None, NOTE_WIDTH])


def render_sweep(
    snaps: Sequence[ClusterSnapshot],
    grouped: dict[str, list[Job]],
    cadence_for: Callable[[str, str], int],
    metric_columns: MetricColumns | None = None,
    off: Mapping[str, Sequence[str]] | None = None,
) -> RenderedSweep:
    """Overview (with the hand-offs ``off`` per cluster) plus one table per bucket, in bucket order."""
    metric_columns = METRIC_COLUMNS if metric_columns is None else metric_columns
    out = RenderedSweep(overview=render_overview(snaps, off))
    for bucket, jobs in grouped.items():
        out.tables[bucket] = render_bucket(bucket, jobs, snaps, cadence_for, metric_columns.get(bucket, ()))
    out.tables["Pending"] = render_pending(snaps)
    return out
