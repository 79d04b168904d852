"""A past window's running set, from sacct instead of squeue: ``sacct -s R -S <start> -E <end>``
lists every job that was running at some time in the window; a job still running at the window's
end is a RUNNING row as it was then (elapsed up to the end); one that ended in the window is the
finished set's (the terminal-state sacct). An odd line is an UNKNOWN row that says why, never a crash.
"""

from __future__ import annotations

from sweep_core.records.models import Job, base_state_of
from sweep_core.slurm.parse import read_records
from sweep_core.timing.window import PAST_RUNNING_LOG_NOTE

# Read with SLURM_TIME_FORMAT=%s (Start/End as epoch seconds; End "Unknown" while it runs),
# -X -P -n --delimiter=<the run's marker>: the name LAST (it may hold the marker's neighbours).
PAST_RUNNING_FIELDS: tuple[str, ...] = (
    "JobID",
    "JobIDRaw",
    "State",
    "Start",
    "End",
    "Partition",
    "NodeList",
    "NNodes",
    "JobName",
)
PAST_RUNNING_FORMAT = ",".join(PAST_RUNNING_FIELDS)


def elapsed_between(start: int, end: int) -> str:
    """sacct's Elapsed form of ``end - start`` seconds: ``HH:MM:SS``, ``D-HH:MM:SS`` past a day."""
    s = max(0, end - start)
    days, s = divmod(s, 86400)
    hms = f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{days}-{hms}" if days else hms


def _epoch(text: str) -> int | None:
    return int(text) if text.strip().isdigit() else None


def _unknown(cluster: str, job_id: str, name: str, why: str) -> Job:
    return Job(cluster, job_id, name, "UNKNOWN", "squeue", note=why, log_note=PAST_RUNNING_LOG_NOTE)


def _row(cluster: str, f: list[str], note: str, window_end: int) -> Job | None:
    """The job as it was at the window's end, None when it was not running then (ended in the
    window: the finished set has it; started after the end: not this window's)."""
    job_id, _raw, state, start_s, end_s, partition, nodes, n_nodes, name = f
    start, end = _epoch(start_s), _epoch(end_s)
    if start is None:
        return _unknown(cluster, job_id, name, f"sacct start time {start_s[:40]!r} not understood")
    if end is None and end_s.strip() not in ("Unknown", "None", ""):
        return _unknown(cluster, job_id, name, f"sacct end time {end_s[:40]!r} not understood")
    if start >= window_end or (end is not None and end <= window_end):
        return None
    now = base_state_of(state) or "?"
    notes = [f"running at the window's end (sacct); now {now}", *([note] if note else [])]
    return Job(
        cluster,
        job_id,
        name,
        "RUNNING",
        "squeue",  # the running set, as it was
        elapsed=elapsed_between(start, window_end),
        partition=partition,
        nodes=nodes,
        num_nodes=int(n_nodes) if n_nodes.isdigit() else None,
        log_note=PAST_RUNNING_LOG_NOTE,
        note="; ".join(notes),
    )


def past_running_jobs(cluster: str, text: str, delim: str, window_end: int) -> list[Job]:
    """RUNNING rows of a past window from the headerless ``sacct -s R`` text (PAST_RUNNING_FORMAT,
    fields split by ``delim``). A line that is no record continues the name before it (a newline
    in a name); one before any record, or a record whose times are not epoch seconds, is an
    UNKNOWN row with the reason. Steps (``.batch``) are dropped. Never raises."""
    if not delim:
        raise ValueError("past_running_jobs needs the delimiter sacct was given")
    odd: list[str] = []
    records = read_records(text, delim, len(PAST_RUNNING_FIELDS), odd)
    unknown = [_unknown(cluster, "?", "?", f"sacct line not understood: {line[:120]!r}") for line in odd]
    jobs = [_row(cluster, f, note, window_end) for f, note in records if "." not in f[0]]
    return unknown + [j for j in jobs if j is not None]
