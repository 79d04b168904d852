"""Fold one sweep into the ledger and say what changed since the last sweep that KNEW each
cluster: jobs new, ended in any state, state changes, stalls started and cleared, jobs that left
the queue unseen, cluster status changes. An UNKNOWN/UNREACHABLE cluster changes no job entry;
an older window (a backfill) never overwrites what a later sweep saw.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sweep_core.ledger.entries import Ledger, LedgerEntry, SeriesMax
from sweep_core.models import ClusterSnapshot, ClusterStatus, Job

ACTIVE = frozenset(
    {"RUNNING", "PENDING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "COMPLETING",
     "RESIZING", "STOPPED", "SIGNALING", "STAGE_OUT"}
)  # fmt: skip
FAILING = frozenset({"FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"})
TRUSTED = frozenset({ClusterStatus.OK, ClusterStatus.PARTIAL})
KEEP_ENDED_DAYS = 30  # an ended job stays this long after it was last seen (hand-offs stay known)
FIRST_SWEEP = "first sweep on record: no previous sweep to compare with"


@dataclass(frozen=True)
class Change:
    """One change since the last sweep that knew the cluster: ``kind`` for code, ``line`` for people."""

    kind: str  # new | failure | completed | ended | state | stall | stall_cleared | gone | left | cluster | first
    cluster: str
    line: str


def _label(e: LedgerEntry) -> str:
    return f"{e.cluster} {e.bucket} {e.job_id} {e.name}"


def _progress(job: Job) -> tuple[int | None, int | None]:
    """(step, max steps) from the bucket metrics: RL step/max_steps, SFT step/total."""
    m = job.metrics
    step, top = m.get("step"), m.get("max_steps", m.get("total"))
    ok = lambda v: v if isinstance(v, int) and not isinstance(v, bool) else None  # noqa: E731
    return ok(step), ok(top)


def _seen(s: ClusterSnapshot) -> dict[str, Job]:
    """Every job this snapshot lists, by key; a terminal sacct row wins over a squeue row."""
    out: dict[str, Job] = {}
    for j in [*(s.running or []), *(s.pending or []), *(s.finished or [])]:
        out[f"{j.cluster}|{j.job_id}"] = j
    return out


def _job_changes(e: LedgerEntry | None, state: str, stale: bool, label: str, cluster: str) -> list[Change]:
    prev = e.state if e else None
    out: list[Change] = []
    if e is None and state in ACTIVE:
        out.append(Change("new", cluster, f"new: {label} ({state})"))
    if state in FAILING and prev not in FAILING:
        was = f"; was {prev}" if prev else ""
        out.append(Change("failure", cluster, f"new failure: {label} ({state}{was})"))
    elif state == "COMPLETED" and prev != "COMPLETED":
        out.append(Change("completed", cluster, f"completed: {label}"))
    elif state not in ACTIVE and state not in FAILING and state != "COMPLETED" and state != prev:
        was = f"; was {prev}" if prev else ""
        out.append(Change("ended", cluster, f"ended: {label} ({state}{was})"))
    elif e is not None and state != prev and state in ACTIVE:
        out.append(Change("state", cluster, f"state: {label} {prev} → {state}"))
    if stale and not (e and e.stale):
        out.append(Change("stall", cluster, f"new stall: {label}"))
    elif e is not None and e.stale and not stale and state == "RUNNING":  # SUSPENDED: told as a state
        out.append(Change("stall_cleared", cluster, f"stall cleared: {label} (output again)"))
    return out


def _update(e: LedgerEntry, job: Job, state: str, end: str, run_id: str) -> None:
    e.name, e.state, e.source, e.stale = job.name, state, job.source, job.stale
    e.bucket = str(job.bucket or e.bucket)
    e.series = str(job.metrics.get("run_series") or e.series)
    step, top = _progress(job)
    e.step = step if step is not None else e.step
    e.max_steps = top if top is not None else e.max_steps
    e.last_output = job.log_mtime if job.log_mtime is not None else e.last_output
    e.last_seen, e.last_run = max(e.last_seen, end), run_id


def _remember_series(ledger: Ledger, e: LedgerEntry) -> None:
    """The series' max steps from whichever link printed it last; the link that COMPLETED at it."""
    if not e.series:
        return
    known = ledger.series.get(e.series)
    if e.max_steps is not None and (known is None or known.max_steps != e.max_steps):
        known = ledger.series[e.series] = SeriesMax(e.max_steps, e.key, known.completed_at_max if known else "")
    top = e.max_steps if e.max_steps is not None else (known.max_steps if known else None)
    if known is not None and e.state == "COMPLETED" and e.step is not None and top is not None and e.step >= top:
        known.completed_at_max = e.key


def _vanished(e: LedgerEntry, s: ClusterSnapshot, blind: str) -> Change | None:
    """An active job this sweep did not list at all: how it is explained, and its new state.
    ``blind``: the cluster's status at the previous sweep when that sweep could not read it."""
    if e.state == "PENDING" and s.pending is None and s.scheduler != "iris":
        return None  # PENDING jobs were not listed: nothing can be told
    label = f"{_label(e)} (was {e.state}"
    if s.scheduler == "iris":
        e.state = "GONE"
        why = "record disappeared: TERMINAL (silent wedge: kill/evict/preempt leaves no terminal line)"
        return Change("gone", e.cluster, f"gone: {label}, {why})")
    if s.finished is None:  # sacct UNKNOWN: how it ended cannot be told, "gone" would be a guess
        e.state = "LEFT"
        return Change("left", e.cluster, f"left the queue: {label}; sacct UNKNOWN this sweep, end state not known)")
    e.state = "GONE"
    if blind:  # it ended in a window whose sweep could not read the queue: its sacct row is there
        why = f"ended while the sweeps did not read the cluster ({blind}): its end state is in that window's sacct"
        return Change("gone", e.cluster, f"gone: {label}, {why})")
    return Change("gone", e.cluster, f"gone: {label}, not running and not in this window's sacct)")


def fold_sweep(
    ledger: Ledger,
    snaps: Sequence[ClusterSnapshot],
    *,
    run_id: str,
    window_end: dt.datetime,
    base_state: Callable[[Job], str],
) -> tuple[Ledger, list[Change]]:
    """The ledger after this sweep, and what changed (the input ledger is not modified)."""
    new = copy.deepcopy(ledger)
    end = window_end.astimezone(dt.UTC).isoformat()
    first = not ledger.window_end
    older = bool(ledger.window_end) and end < ledger.window_end  # a backfill of an earlier window
    changes: list[Change] = [Change("first", "", FIRST_SWEEP)] if first else []
    for s in sorted(snaps, key=lambda s: s.cluster):
        status, before = str(s.status), ledger.clusters.get(s.cluster)
        if not older:
            if before is not None and before != status and not first:
                changes.append(Change("cluster", s.cluster, f"cluster {s.cluster}: {before} → {status}"))
            new.clusters[s.cluster] = status
        if s.status not in TRUSTED or s.running is None:
            continue  # what it did not know changes nothing
        quiet = first or s.cluster not in ledger.known  # the first sweep that knows a cluster lists no "new"
        if quiet and not first:
            changes.append(Change("first", s.cluster, f"cluster {s.cluster}: first sweep that knew it"))
        new.known.add(s.cluster)
        if s.finished is not None and not older:  # its sacct window was read: nothing ended unseen before end
            new.read_until[s.cluster] = max(ledger.read_until.get(s.cluster, ""), end)
        seen = _seen(s)
        for key, job in sorted(seen.items()):
            e = new.jobs.get(key)
            if e is not None and e.last_seen > end:
                continue  # a later sweep saw it: an older window does not overwrite that
            state = base_state(job)
            if not quiet:
                label = f"{job.cluster} {job.bucket or (e.bucket if e else '')} {job.job_id} {job.name}"
                changes.extend(_job_changes(e, state, job.stale, label, s.cluster))
            if e is None:
                e = new.jobs[key] = LedgerEntry(job.cluster, job.job_id, job.name, first_seen=end)
            _update(e, job, state, end, run_id)
            _remember_series(new, e)
        if older:
            continue  # an earlier window cannot tell that a job is gone now
        blind = before if before is not None and before not in TRUSTED else ""
        for key, e in sorted(new.jobs.items()):
            if e.cluster == s.cluster and e.state in ACTIVE and key not in seen:
                change = _vanished(e, s, blind)
                if change is not None:
                    e.last_seen, e.last_run = max(e.last_seen, end), run_id
                    changes.append(change)
    new.window_end = max(ledger.window_end, end)
    _prune(new, window_end)
    if not changes:
        changes.append(Change("none", "", "no change since the previous sweep"))
    return new, changes


def _prune(ledger: Ledger, now: dt.datetime) -> None:
    """Drop ended jobs not seen for KEEP_ENDED_DAYS (series max steps are kept)."""
    cutoff = (now.astimezone(dt.UTC) - dt.timedelta(days=KEEP_ENDED_DAYS)).isoformat()
    for key in [k for k, e in ledger.jobs.items() if e.state not in ACTIVE and e.last_seen < cutoff]:
        del ledger.jobs[key]
