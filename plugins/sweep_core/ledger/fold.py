"""Fold one sweep into the ledger and say what changed since the last sweep that KNEW each
cluster: jobs new, ended in any state, state changes, stalls started and cleared, jobs that left
the queue unseen, cluster status changes. An UNKNOWN/UNREACHABLE cluster changes no job entry;
an older window (a backfill) never overwrites what a later sweep saw, and tells its changes
against the window folded before it (each entry as it stood then), not the latest sweep.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from sweep_core.ledger.entries import Ledger, LedgerEntry, SeriesMax, clone_entry
from sweep_core.ledger.metric_values import STREAM_CURSOR, latest_values, stored_cursor
from sweep_core.ledger.progress import link_index, note_counter
from sweep_core.ledger.reconcile import reconcile_lost_cancels
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

ACTIVE = frozenset(
    {
        "RUNNING",
        "PENDING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "CONFIGURING",
        "COMPLETING",
        "RESIZING",
        "STOPPED",
        "SIGNALING",
        "STAGE_OUT",
    }
)
FAILING = frozenset({"FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "WEDGED"})
VANISHED = "VANISHED"  # a row of its own (sweep_core.ledger.vanished): it keeps the time it was last listed
TRUSTED = frozenset({ClusterStatus.OK, ClusterStatus.PARTIAL})
KEEP_ENDED_DAYS = 30  # an ended job stays this long after it was last seen (hand-offs stay known)
FIRST_SWEEP = "first sweep on record: no previous sweep to compare with"
NO_WINDOW_BEFORE = "no earlier window on record: nothing to compare this backfilled window with"


@dataclass(frozen=True)
class Change:
    """One change since the last sweep that knew the cluster: ``kind`` for code, ``line`` for people."""

    kind: str  # new | failure | completed | ended | state | stall | stall_cleared | gone | left | cluster | first | act
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


def window_before(ledger: Ledger, end: str) -> str:
    """The latest window end folded in before ``end`` (ISO), "" when there is none on record."""
    return max((w for w in ledger.windows if w < end), default="")


def as_it_stood(e: LedgerEntry | None, when: str, state_now: str) -> LedgerEntry | None:
    """Entry ``e`` as the sweep of the window ending ``when`` left it: None when no sweep had seen
    the job by then; its state when it has not changed since; else (it changed after ``when``, to
    what the ledger holds now) not known: ``state_now`` (this window's) when that is active, so no
    change is made up, "" when it ended (told with no "was"). Its stall mark is not known: False."""
    if e is None or not e.first_seen or e.first_seen > when:
        return None
    then = copy.copy(e)
    if not (e.since and e.since <= when):
        then.state = state_now if state_now in ACTIVE else ""
    then.stale = False
    return then


def _update(e: LedgerEntry, job: Job, state: str, end: str, run_id: str) -> None:
    e.since = end if state != e.state or not e.since else e.since
    e.name, e.state, e.source, e.stale = job.name, state, job.source, job.stale
    e.bucket = str(job.bucket or e.bucket)
    e.series = str(job.metrics.get("run_series") or e.series)
    step, top = _progress(job)
    e.step = step if step is not None else e.step
    e.max_steps = top if top is not None else e.max_steps
    e.last_output = job.log_mtime if job.log_mtime is not None else e.last_output
    _remember_read(e, job)
    _remember_streams(e, job)
    e.last_seen, e.last_run = max(e.last_seen, end), run_id


def _remember_read(e: LedgerEntry, job: Job) -> None:
    """A log read from its cursor: the new cursor, the latest value of every numeric metric (a
    value the read did not show stays), the last lines read (kept when the excerpt was dropped)."""
    c = job.log_cursor
    kept = stored_cursor(c)
    if kept is None:
        return
    e.cursor = kept
    e.metrics = {**e.metrics, **latest_values(job.metrics)} if c.get("why") == "cont" else latest_values(job.metrics)
    e.log_lines = job.log_tail or (e.log_lines if c.get("why") == "cont" else "")


def _remember_streams(e: LedgerEntry, job: Job) -> None:
    """The metric streams read this sweep: each file's new cursor; a file that could not be read
    keeps its old one; a file no longer found is dropped (its cursor with it)."""
    if not job.stream_dirs:
        return  # not asked (no metric_streams, the shell path): the cursors stay
    kept: dict[str, dict[str, int]] = {}
    for s in job.streams:
        c, path = s.get("cursor") or {}, s.get("path")
        if isinstance(path, str) and all(isinstance(c.get(k), int) for k in STREAM_CURSOR):
            kept[path] = {k: c[k] for k in STREAM_CURSOR}
    errors = {p for p in e.streams if any("error" in s and p in s["error"] for s in job.streams)}
    e.streams = {**{p: e.streams[p] for p in errors}, **kept}


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
    if e.state == "PENDING" and s.pending is None:
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
) -> tuple[Ledger, list[Change]]:
    """The ledger after this sweep, and what changed (the input ledger is not modified)."""
    new = copy.deepcopy(dataclasses.replace(ledger, jobs={}))
    new.jobs = {k: clone_entry(e) for k, e in ledger.jobs.items()}  # deepcopy's result, faster
    end = window_end.astimezone(dt.UTC).isoformat()
    first = not ledger.window_end
    older = bool(ledger.window_end) and end < ledger.window_end  # a backfill of an earlier window
    before = window_before(ledger, end) if older else ""  # what an older window is compared with
    changes: list[Change] = [Change("first", "", FIRST_SWEEP)] if first else []
    if older and not before:
        changes.append(Change("first", "", NO_WINDOW_BEFORE))
    links = link_index(ledger)  # the chains of the ledger before this sweep (progress counters)
    for s in sorted(snaps, key=lambda s: s.cluster):
        status, was = str(s.status), ledger.clusters.get(s.cluster)
        if not older:
            if was is not None and was != status and not first:
                changes.append(Change("cluster", s.cluster, f"cluster {s.cluster}: {was} → {status}"))
            new.clusters[s.cluster] = status
        if s.status not in TRUSTED or s.running is None:
            continue  # what it did not know changes nothing
        quiet = first or s.cluster not in ledger.known  # the first sweep that knows a cluster lists no "new"
        if quiet and not first:
            changes.append(Change("first", s.cluster, f"cluster {s.cluster}: first sweep that knew it"))
        quiet = quiet or (older and not before)
        new.known.add(s.cluster)
        if s.finished is not None and not older:  # its sacct window was read: nothing ended unseen before end
            new.read_until[s.cluster] = max(ledger.read_until.get(s.cluster, ""), end)
        seen = _seen(s)
        running = {f"{j.cluster}|{j.job_id}" for j in s.running or []}
        for key, job in sorted(seen.items()):
            e = new.jobs.get(key)
            state = job.base_state
            label = f"{job.cluster} {job.bucket or (e.bucket if e else '')} {job.job_id} {job.name}"
            if older and not quiet and state != VANISHED:  # told against the window before, whatever later sweeps saw
                then = as_it_stood(ledger.jobs.get(key), before, state)
                changes.extend(_job_changes(then, state, job.stale, label, s.cluster))
            if e is not None and e.last_seen > end:
                e.first_seen = min(e.first_seen or end, end)  # known this early: a later backfill compares with it
                continue  # a later sweep saw it: an older window does not overwrite that
            if state == VANISHED and e is not None:  # told by its row: last seen stays when it was listed
                changes.append(
                    Change("gone", s.cluster, f"vanished: {_label(e)} (was {e.state}, last seen {e.last_seen})")
                )
                e.state, e.since, e.last_run = VANISHED, end, run_id
                continue
            if not quiet and not older:
                changes.extend(_job_changes(e, state, job.stale, label, s.cluster))
            if e is None:
                e = new.jobs[key] = LedgerEntry(job.cluster, job.job_id, job.name, first_seen=end)
            _update(e, job, state, end, run_id)
            note_counter(ledger, e, job, s.remote_now, links, running)  # the progress counter vs the ledger before
            _remember_series(new, e)
        if older:
            continue  # an earlier window cannot tell that a job is gone now
        listed = dt.datetime.fromtimestamp(s.remote_now, dt.UTC) if s.remote_now else window_end
        for cluster, line in reconcile_lost_cancels(
            new, seen, running, ACTIVE, listed_at=listed, end=end, run_id=run_id
        ):
            changes.append(Change("act", cluster, line))
        blind = was if was is not None and was not in TRUSTED else ""
        for key, e in sorted(new.jobs.items()):
            if e.cluster == s.cluster and e.state in ACTIVE and key not in seen:
                change = _vanished(e, s, blind)
                if change is not None:
                    e.last_seen, e.last_run, e.since = max(e.last_seen, end), run_id, end
                    changes.append(change)
    new.window_end = max(ledger.window_end, end)
    new.windows = sorted({*ledger.windows, end})
    _prune(new, window_end)
    if not changes:
        changes.append(Change("none", "", "no change since the previous sweep"))
    return new, changes


def _prune(ledger: Ledger, now: dt.datetime) -> None:
    """Drop ended jobs not seen for KEEP_ENDED_DAYS (series max steps are kept)."""
    cutoff = (now.astimezone(dt.UTC) - dt.timedelta(days=KEEP_ENDED_DAYS)).isoformat()
    for key in [k for k, e in ledger.jobs.items() if e.state not in ACTIVE and e.last_seen < cutoff]:
        del ledger.jobs[key]
    ledger.windows = [w for w in ledger.windows if w >= cutoff]
