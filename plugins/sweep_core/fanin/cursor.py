"""Logs read whole, incrementally: each RUNNING job's read cursor in the ledger (byte offset, inode,
device of its SLURM StdOut), what the gather asks for with it, and how the new bytes' lines meet
what the ledger kept.

- ``cursors_for``: the cursors of one cluster's jobs the ledger holds (the gather reads the
  ledger read-only; the render task's fold stores the new ones: sweep_core.ledger.fold).
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

import re
from collections.abc import Iterable

from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.patterns import required_literals
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.metric_values import is_value
from sweep_core.models import ClusterSnapshot, Job

MIN_LITERAL = (
    2  # a shorter required literal would send back nearly every line: its pattern is read in the last bytes only
)
KEEP_LINES = 50  # of the lines holding each literal, the last this many come back
RESTARTED = ("truncated", "replaced")
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


def _entry(ledger: Ledger, job: Job) -> LedgerEntry | None:
    return ledger.jobs.get(f"{job.cluster}|{job.job_id}")


def restart_line(job: Job) -> str:
    """How a restarted read is said ("" when the read went on from the cursor)."""
    c = job.log_cursor
    if c.get("why") == "truncated":
        return f"log restarted: truncated (now {c.get('size')} bytes, below the cursor): read again from 0"
    if c.get("why") == "replaced":
        return "log restarted: replaced (another file at the StdOut path: new inode): read from 0"
    return ""


def before_digest(snap: ClusterSnapshot, ledger: Ledger) -> None:
    """Put the ledger's last lines before a job's new lines when its read went on from the cursor;
    name the jobs whose read restarted in the cluster's notes."""
    restarted = []
    for job in snap.running or []:
        why = job.log_cursor.get("why")
        if why in RESTARTED:
            restarted.append(f"{job.job_id} {why}")
        e = _entry(ledger, job)
        if why == "cont" and e is not None and e.log_lines:
            job.log_tail = e.log_lines + "\n" + job.log_tail if job.log_tail else e.log_lines
    if restarted:
        snap.notes.append(f"log cursor restarted (read from 0) for {len(restarted)} jobs: " + ", ".join(restarted))


def carry(snap: ClusterSnapshot, ledger: Ledger) -> None:
    """A digested RUNNING job read from its cursor: each metric the new lines left unknown keeps the
    ledger's latest value, named in ``metrics['carried']``; the problems about those columns go."""
    for job in snap.running or []:
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
