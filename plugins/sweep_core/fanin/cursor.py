"""Logs read whole, incrementally: each RUNNING job's read cursor in the ledger (byte offset, inode,
device of its SLURM StdOut; for an iris job the controller's log-entry time and id read up to, its
attempts and submission), what the gather asks for with it, and how the new lines meet what the
ledger kept.

- ``cursors_for`` / ``iris_cursors_for``: the cursors of one cluster's jobs the ledger holds (the
  gather reads the ledger read-only; the render task's fold stores the new ones: sweep_core.ledger.fold).
- A read past the sweep's byte budget (sweep.yaml ``gather.log_budget_bytes``) reads history: the
  cursor advances by what was read, the text is that part's lines (``hist`` of them) then the
  log's newest lines; ``cursor_note`` says "reading history: N of M MiB" in the row.
- ``prefilter``: the literals a metric line must hold (the required literals of every metric
  pattern of sweep.yaml ``metrics:``, profiles included). The remote reader (read_logs.py
  ``stream``) sends back only the new bytes' lines holding one, then the last bytes.
- ``before_digest``: a log read on from its cursor gets the last lines the ledger kept put before
  its new lines (a silent job's hang evidence and last lines are still there); a restarted read
  (truncated, replaced) says so in the cluster's notes.
- ``carry``: after the digest, a metric the new lines do not hold keeps its ledger value, said as
  carried (``metrics['carried']``, shown in the row's note).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any

from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.patterns import required_literals
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.metric_values import IRIS_CURSOR, STREAM_CURSOR, is_value
from sweep_core.records.models import ClusterSnapshot, Job

MIN_LITERAL = (
    2  # a shorter required literal would send back nearly every line: its pattern is read in the last bytes only
)
KEEP_LINES = 50  # of the lines holding each literal, the last this many come back
RESTARTED = ("truncated", "replaced", "attempt", "resubmitted", "reset", "source")  # SLURM, then iris
CARRIED = "carried"  # metrics key: the columns kept from the ledger, and why


def _patterns(mcfg: MetricsConfig) -> Iterable[re.Pattern[str]]:
    """The patterns a metric value is read with. Not the bars that count something else (they
    discount a step line, which comes back by its own literal), nor exceptions and infra checks
    (read in the last bytes, as before)."""
    yield from (*mcfg.rl_step, *mcfg.sft_total, *mcfg.sft_step, *mcfg.dg_results, *mcfg.dg_turns)
    yield from (*mcfg.ev_progress, *mcfg.ev_pass)
    for p in mcfg.profiles:
        yield from (*p.signature, *p.step, *p.total, *p.dict_line, *p.pairs_line)


def _minimal(lits: Iterable[str]) -> tuple[str, ...]:
    """The literals without those holding another one (a line holding the longer holds the shorter)."""
    uniq = sorted(set(lits), key=len)
    out: list[str] = []
    for lit in uniq:
        if not any(o in lit for o in out):
            out.append(lit)
    return tuple(out)


def prefilter(mcfg: MetricsConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(literals, patterns without one): a line of the new bytes comes back when it holds a
    literal; a pattern without a usable literal is matched in the last bytes only."""
    lits = [mcfg.rl_marker] if len(mcfg.rl_marker) >= MIN_LITERAL else []
    blind: list[str] = []
    for p in _patterns(mcfg):
        got = required_literals(p)
        if got and all(len(x) >= MIN_LITERAL and "\n" not in x and "\r" not in x for x in got):
            lits.extend(got)
        else:
            blind.append(p.pattern)
    return _minimal(lits), tuple(dict.fromkeys(blind))


def cursors_for(ledger: Ledger, cluster: str) -> dict[str, tuple[int, int, int]]:
    """job id -> (offset, inode, dev) of the cluster's jobs whose cursor the ledger holds."""
    out: dict[str, tuple[int, int, int]] = {}
    for e in ledger.jobs.values():
        c = e.cursor
        if e.cluster == cluster and all(isinstance(c.get(k), int) for k in ("offset", "ino", "dev")):
            out[e.job_id] = (c["offset"], c["ino"], c["dev"])
    return out


def stream_cursors_for(ledger: Ledger, cluster: str) -> dict[str, dict[str, tuple[int, ...]]]:
    """job id -> path -> (offset, ino, dev, mtime, head, step) of the cluster's metric streams."""
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    for e in ledger.jobs.values():
        if e.cluster == cluster and e.streams:
            files = {p: tuple(c.get(k, 0) for k in STREAM_CURSOR) for p, c in e.streams.items()}
            out[e.job_id] = {p: c for p, c in files.items() if all(isinstance(v, int) and v >= 0 for v in c)}
    return out


def iris_cursors_for(ledger: Ledger, cluster: str) -> dict[str, dict[str, int | str]]:
    """job id -> iris cursor (``ms``, ``seq``, ``sub``, ``attempt``, ``bytes``) of the cluster's jobs
    whose cursor the ledger holds (iris_poll.py reads on from it)."""
    out: dict[str, dict[str, int | str]] = {}
    for e in ledger.jobs.values():
        c = e.cursor
        if e.cluster == cluster and all(isinstance(c.get(k), int) for k in ("ms", "seq", "sub")):
            out[e.job_id] = {k: c[k] for k in IRIS_CURSOR if k in c}
    return out


def _entry(ledger: Ledger, job: Job) -> LedgerEntry | None:
    return ledger.jobs.get(f"{job.cluster}|{job.job_id}")


_RESTART_WHY = {
    "truncated": "truncated (now {size} bytes, below the cursor): read again from 0",
    "replaced": "replaced (another file at the StdOut path: new inode): read from 0",
    "attempt": "new attempt (tasks now {attempt}, were {was}): read from the attempt's start",
    "resubmitted": "resubmitted (another submission under this name): read from its submission",
    "reset": "the controller's log ids restarted below the cursor: read from the submission",
    "source": "last read through the other iris path (client vs CLI: cursors differ): read from the submission",
}
MIB = 1 << 20


def _utc(ms: Any) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%H:%M:%SZ") if isinstance(ms, int) else "?"


def restart_line(job: Job) -> str:
    """How a restarted read is said ("" when the read went on from the cursor)."""
    c = job.log_cursor
    why = c.get("why")
    if why not in _RESTART_WHY:
        return ""
    return "log restarted: " + _RESTART_WHY[str(why)].format(
        size=c.get("size"), attempt=c.get("attempt"), was=c.get("was", "?")
    )


def history_line(job: Job) -> str:
    """A read stopped at the sweep's byte budget: how much of the history is read ("" otherwise);
    an ended job's final read says that its metrics and traceback come from the part read."""
    c = job.log_cursor
    if "tail" not in c:
        return ""
    budget = "gather.log_budget_bytes a sweep"
    if job.source != "squeue":
        budget += "; ended: its final read cut there, metrics and traceback from the part read"
    if "ino" in c:  # SLURM: a file of known size
        return (
            f"reading history: {c.get('offset', 0) / MIB:.1f} of {c.get('size', 0) / MIB:.1f} MiB "
            f"({budget}; the newest {c['tail']} bytes read too)"
        )
    return (
        f"reading history: {c.get('bytes', 0) / MIB:.1f} MiB read, up to {_utc(c.get('ms'))} "
        f"(log runs to {_utc(c.get('newest_ms'))}; {budget}; its newest {c['tail']} lines read too)"
    )


def skipped_line(job: Job) -> str:
    """An iris CLI read that skipped past seconds holding more entries than it pages through."""
    n = job.log_cursor.get("skipped")
    return f"log lines of {n} second(s) skipped (more than the iris CLI pages through)" if n else ""


def cursor_note(job: Job) -> str:
    """What the row says about its log read: a restart, history still being read, lines skipped."""
    return "; ".join(x for x in (restart_line(job), history_line(job), skipped_line(job)) if x)


def before_digest(snap: ClusterSnapshot, ledger: Ledger) -> None:
    """Put the ledger's last lines before a job's new lines (RUNNING, or ended: its final read)
    when its read went on from the cursor (after the ``hist`` lines of a history read: they are older); name the jobs whose read
    restarted in the cluster's notes."""
    restarted = []
    for job in [*(snap.running or []), *(snap.finished or [])]:
        why = job.log_cursor.get("why")
        if why in RESTARTED:
            restarted.append(f"{job.job_id} {why}")
        e = _entry(ledger, job)
        if why == "cont" and e is not None and e.log_lines:
            hist = int(job.log_cursor.get("hist") or 0)
            lines = job.log_tail.split("\n") if job.log_tail else []
            older, newer = "\n".join(lines[:hist]), "\n".join(lines[hist:])
            job.log_tail = "\n".join(x for x in (older, e.log_lines, newer) if x)
    if restarted:
        snap.notes.append(
            f"log cursor restarted (read from the start) for {len(restarted)} jobs: " + ", ".join(restarted)
        )


def carry(snap: ClusterSnapshot, ledger: Ledger) -> None:
    """A digested job (RUNNING, or ended: its final read) read from its cursor: each metric the new lines left unknown keeps the
    ledger's latest value, named in ``metrics['carried']``; the problems about those columns go."""
    for job in [*(snap.running or []), *(snap.finished or [])]:
        e = _entry(ledger, job)
        if not job.log_cursor or job.log_cursor.get("why") != "cont" or e is None or not e.metrics:
            continue
        kept = [k for k, v in sorted(e.metrics.items()) if job.metrics.get(k) is None and is_value(v)]
        if not kept:
            continue
        for k in kept:
            job.metrics[k] = e.metrics[k]
        words = [re.compile(rf"\b{re.escape(k)}\b|\b{re.escape(k.replace('_', ' '))}\b") for k in kept]
        job.metric_problems = [p for p in job.metric_problems if not any(w.search(p) for w in words)]
        job.metrics[CARRIED] = (
            f"{', '.join(kept)} from the ledger (not in the {job.log_cursor.get('read', 0)} bytes written since)"
        )
