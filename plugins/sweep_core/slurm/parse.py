"""Parsers for the text output of squeue, sacct -P and scontrol show job.

The text formats are the stable contract across Slurm versions (``--json`` changed shape at
23.11). Each parser validates before it trusts: an errored command raises
:class:`SlurmOutputError`, never returns "no jobs".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from sweep_core.records.models import base_state_of
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.efficiency import USAGE_FIELDS, Efficiency, job_efficiency

# squeue -o fields. JobName goes LAST: it may contain the delimiter.
SQUEUE_FIELDS: tuple[tuple[str, str], ...] = (
    ("%i", "JOBID"),  # 123, 123_4 for array elements
    ("%A", "JOBID"),  # the raw job id
    ("%T", "STATE"),
    ("%M", "TIME"),
    ("%l", "TIME_LIMIT"),
    ("%D", "NODES"),
    ("%P", "PARTITION"),
    ("%R", "NODELIST(REASON)"),
    ("%j", "NAME"),
)
SQUEUE_FORMAT = "|".join(spec for spec, _ in SQUEUE_FIELDS)
SQUEUE_HEADER = "|".join(head for _, head in SQUEUE_FIELDS)


def squeue_format(delimiter: str = "|") -> str:
    """``squeue -o`` format with ``delimiter`` between fields (a per-run nonce: a job name, which
    may hold ``|`` or a newline, cannot contain it, so one tenant's name cannot forge a row)."""
    return delimiter.join(spec for spec, _ in SQUEUE_FIELDS)


# The PENDING listing (`squeue --start` with SLURM_TIME_FORMAT=%s: times as epoch seconds): submit
# time (time pending), expected start (N/A until the scheduler has one), the reason (%R:
# DependencyNeverSatisfied, ReqNodeNotAvail, ...), the dependency left (%E). JobName LAST.
PENDING_FIELDS: tuple[tuple[str, str], ...] = (
    ("%i", "JOBID"),
    ("%A", "JOBID"),
    ("%T", "STATE"),
    ("%V", "SUBMIT_TIME"),
    ("%S", "START_TIME"),
    ("%D", "NODES"),
    ("%P", "PARTITION"),
    ("%R", "NODELIST(REASON)"),
    ("%E", "DEPENDENCY"),
    ("%j", "NAME"),
)


def pending_format(delimiter: str) -> str:
    """``squeue --start -o`` format of the PENDING listing, fields split by the run's marker."""
    return delimiter.join(spec for spec, _ in PENDING_FIELDS)


SACCT_FIELDS: tuple[str, ...] = (
    "JobID",
    "JobIDRaw",
    "State",
    "ExitCode",
    "Start",
    "End",
    "Elapsed",
    "Partition",
    "NodeList",
    "JobName",
)
SACCT_FORMAT = ",".join(SACCT_FIELDS)
# The gather's ONE windowed sacct, steps included (no -X): the usage fields of seff before the
# name, which stays LAST. Steps feed the efficiency of their job (sweep_core.slurm.efficiency).
SACCT_WINDOW_FIELDS: tuple[str, ...] = (*SACCT_FIELDS[:-1], *USAGE_FIELDS, "JobName")
SACCT_WINDOW_FORMAT = ",".join(SACCT_WINDOW_FIELDS)
# The short form every other sacct read asks for (the gather's chunk counts, the cleanup probe's
# and the harvest's `sacct -j`, the HF chain's probe): -X -P -n, fields split by the run's
# marker, the name LAST. Read by read_sacct_jobs, the one reader of it.
SACCT_JOBS_FIELDS: tuple[str, ...] = ("JobID", "State", "JobName")
SACCT_JOBS_FORMAT = ",".join(SACCT_JOBS_FIELDS)
# Terminal states for `sacct -s`: a job that reached one of them inside the window.
SACCT_TERMINAL_STATES = "BF,CA,CD,DL,F,NF,OOM,PR,RQ,TO"

# Texts that mean the controller/database did not answer, whatever the exit code says.
_ERROR_PATTERNS = (
    re.compile(r"slurm_load_jobs error", re.I),
    re.compile(r"slurm_load_partitions error", re.I),
    re.compile(r"Socket timed out on send/recv operation", re.I),
    re.compile(r"Unable to contact slurm controller", re.I),
    re.compile(r"Zero Bytes were transmitted or received", re.I),
    re.compile(r"Rate limit exceeded", re.I),
    re.compile(r"Problem talking to the database", re.I),
    re.compile(r"accounting storage is disabled", re.I),
    re.compile(r"^\w+: error:", re.I | re.M),
    re.compile(r"command not found|No such file or directory", re.I),
)


class SlurmOutputError(ValueError):
    """A Slurm command's output cannot be trusted; the message says why (with its stderr)."""


def _check(tool: str, result: CommandResult) -> None:
    err = result.stderr.strip()
    if result.rc != 0:
        raise SlurmOutputError(f"{tool} exited {result.rc}: {err or '(no stderr)'}")
    for pattern in _ERROR_PATTERNS:
        if pattern.search(err):
            raise SlurmOutputError(f"{tool} reported an error (exit 0): {err}")


def check_command(tool: str, result: CommandResult) -> None:
    """Raise SlurmOutputError when ``result`` errored (exit code, or an error text on stderr)."""
    _check(tool, result)


def _lines(tool: str, result: CommandResult, heads: tuple[str, ...]) -> tuple[str, list[str]]:
    """(delimiter, data lines): the delimiter is read off the header (``|`` or a run's nonce)."""
    _check(tool, result)
    if not result.stdout.strip():
        raise SlurmOutputError(f"{tool} printed nothing, not even its header: output missing")
    lines = result.stdout.split("\n")
    first = lines[0].strip()
    cut = first.find(heads[1], len(heads[0])) if first.startswith(heads[0]) else -1
    delim = first[len(heads[0]) : cut] if cut > len(heads[0]) else ""
    if not delim or first != delim.join(heads):
        raise SlurmOutputError(f"{tool} header is {first[:200]!r}, expected {'|'.join(heads)!r}: output not trusted")
    if not result.stdout.endswith("\n"):
        raise SlurmOutputError(f"{tool} output ends mid-line: truncated")
    return delim, lines[1:-1]


def _records(
    tool: str,
    lines: list[str],
    delim: str,
    n: int,
    id_ok: re.Pattern[str],
    strict: bool = True,
    odd: list[str] | None = None,
) -> list[tuple[list[str], str]]:
    """Split data lines into (fields, note) records; the last field (the job name) may hold
    newlines: a line that is not a record of its own continues the name of the one before it,
    and that record gets a note. With a nonce delimiter no name can forge a record. A line before
    the first record raises (``strict``) or is dropped (kept in ``odd`` when given)."""
    out: list[tuple[list[str], str]] = []
    for i, line in enumerate(lines, start=2):
        parts = line.split(delim, n - 1)
        if len(parts) == n and id_ok.fullmatch(parts[0]):
            out.append((parts, ""))
        elif out:
            fields, _ = out[-1]
            fields[-1] += "\n" + line
            out[-1] = (fields, "job name holds a newline")
        elif strict and line.strip():
            raise SlurmOutputError(f"{tool} line {i} has {len(parts)} fields, expected {n}: {line[:200]!r}")
        elif odd is not None and line.strip():
            odd.append(line)
    return out


_JOB_ID = re.compile(r"\d+(_(\d+|\[[0-9,%-]+\]))?(\+\d+)?")
_SACCT_ID = re.compile(r"\d+(_(\d+|\[[0-9,%-]+\]))?(\+\d+)?(\.[A-Za-z0-9_+-]+)?")


def read_records(text: str, delim: str, n: int, odd: list[str] | None = None) -> list[tuple[list[str], str]]:
    """Records of a headerless (``-h``/``-n``) squeue/sacct output whose last field is the job
    name, fields split by ``delim`` (the run's marker): (fields, note) per job. A line that is no
    record of its own continues the name before it (note says so); lines before the first record
    are dropped (kept in ``odd`` when given). Never raises: no name can forge a record, none can
    hide another."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return _records("", lines, delim, n, _SACCT_ID, strict=False, odd=odd)


@dataclass(frozen=True)
class SacctJob:
    """One row of ``sacct -o JobID,State,JobName`` (SACCT_JOBS_FORMAT)."""

    job_id: str
    state: str
    name: str
    note: str = ""  # what is odd about this row (a newline in its name)


def read_sacct_jobs(text: str, delim: str) -> list[SacctJob]:
    """Rows of a headerless ``sacct -X -P -n --delimiter=<marker> -o JobID,State,JobName``: the
    records of read_records (no name can forge or hide a row; a line that is no record of its own
    continues the name before it; lines before the first record dropped; never raises), a step
    (``.batch``) dropped as parse_sacct drops it, the state stripped. ``delim`` must not be empty."""
    if not delim:
        raise ValueError("read_sacct_jobs needs the delimiter sacct was given")
    rows = read_records(text, delim, len(SACCT_JOBS_FIELDS))
    return [SacctJob(f[0], f[1].strip(), f[2], note) for f, note in rows if "." not in f[0]]


@dataclass(frozen=True)
class SqueueRow:
    job_id: str
    raw_id: str
    state: str
    elapsed: str
    time_limit: str
    nodes: str
    partition: str
    reason: str
    name: str
    note: str = ""  # what is odd about this row (a newline in its name), shown in its Note cell


def parse_squeue(result: CommandResult) -> list[SqueueRow]:
    """Rows of ``squeue -o squeue_format(d)`` (d read off the header); raises SlurmOutputError
    when the output is not trustworthy. A name with a newline spoils only its own row (note)."""
    heads = tuple(head for _, head in SQUEUE_FIELDS)
    delim, lines = _lines("squeue", result, heads)
    return [SqueueRow(*parts, note=note) for parts, note in _records("squeue", lines, delim, len(heads), _JOB_ID)]


@dataclass(frozen=True)
class PendingRow:
    job_id: str
    raw_id: str
    state: str
    submit: str  # epoch seconds (SLURM_TIME_FORMAT=%s)
    start: str  # expected start, epoch seconds, or N/A
    nodes: str
    partition: str
    reason: str
    dependency: str  # what is left of --dependency, "(null)" when none
    name: str
    note: str = ""


def parse_pending(result: CommandResult) -> list[PendingRow]:
    """Rows of the PENDING listing (``pending_format``); raises SlurmOutputError when the output
    is not trustworthy, as parse_squeue does."""
    heads = tuple(head for _, head in PENDING_FIELDS)
    delim, lines = _lines("squeue --start", result, heads)
    return [PendingRow(*parts, note=note) for parts, note in _records("squeue", lines, delim, len(heads), _JOB_ID)]


@dataclass(frozen=True)
class SacctRow:
    job_id: str
    raw_id: str
    state: str
    exit_code: str
    start: str
    end: str
    elapsed: str
    partition: str
    nodes: str
    name: str
    note: str = ""  # what is odd about this row (a newline in its name)
    efficiency: Efficiency | None = field(default=None, compare=False)  # windowed sacct only

    @property
    def base_state(self) -> str:
        """State without the ``by <uid>`` suffix: ``CANCELLED by 1001`` -> ``CANCELLED``."""
        return base_state_of(self.state)


def parse_sacct(result: CommandResult) -> list[SacctRow]:
    """Rows of ``sacct -X -P [--delimiter=d] -o SACCT_FORMAT`` (allocation lines only; steps are
    dropped); d is read off the header. A name with a newline spoils only its own row (note)."""
    delim, lines = _lines("sacct", result, SACCT_FIELDS)
    rows = []
    for parts, note in _records("sacct", lines, delim, len(SACCT_FIELDS), _SACCT_ID):
        row = SacctRow(*parts, note=note)
        if "." in row.job_id:  # a step (.batch/.extern/.0) even though -X was asked
            continue
        rows.append(row)
    return rows


# Keys of `scontrol show job` whose values may hold spaces: split on known keys instead.
_SCONTROL_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=")
_KNOWN_KEYS = frozenset(
    """JobId ArrayJobId ArrayTaskId ArrayTaskThrottle HetJobId HetJobOffset HetJobIdSet JobName
    UserId GroupId MCS_label Priority Nice Account QOS JobState Reason Dependency Requeue Restarts
    BatchFlag Reboot ExitCode DerivedExitCode RunTime TimeLimit TimeMin SubmitTime EligibleTime
    AccrueTime StartTime EndTime Deadline SuspendTime SecsPreSuspend LastSchedEval Scheduler
    Partition AllocNode:Sid ReqNodeList ExcNodeList NodeList BatchHost NumNodes NumCPUs NumTasks
    CPUs/Task ReqB:S:C:T TRES Socks/Node NtasksPerN:B:S:C CoreSpec MinCPUsNode MinMemoryNode
    MinMemoryCPU MinTmpDiskNode Features DelayBoot OverSubscribe Contiguous Licenses Network
    Command WorkDir StdErr StdIn StdOut Power Comment AdminComment TresPerNode TresPerJob
    TresPerTask CpusPerTres MemPerTres MailUser MailType Container ContainerID CronJob
    Nodes CPU_IDs Mem GRES JOB_GRES Switches Wait-for-Switch Prolog Epilog""".split()
)


def parse_scontrol_job(text: str) -> dict[str, str]:
    """``scontrol show job [-o]`` output (one job) as a dict; values may contain spaces.

    Splits only at ``Key=`` where Key is a known scontrol key, so ``JobName=a b=c`` keeps its
    value whole. Works on the one-line (-o) and the multi-line form.
    """
    flat = " ".join(line.strip() for line in text.splitlines() if line.strip())
    if not flat.startswith("JobId="):
        raise SlurmOutputError(f"scontrol output does not start with JobId=: {flat[:200]!r}")
    cuts = [(m.start(1), m.end(), m.group(1)) for m in _SCONTROL_KEY.finditer(flat) if m.group(1) in _KNOWN_KEYS]
    out: dict[str, str] = {}
    for i, (_, value_start, key) in enumerate(cuts):
        value_end = cuts[i + 1][0] - 1 if i + 1 < len(cuts) else len(flat)
        value = flat[value_start:value_end].strip()
        # A key repeated by a hostile JobName (``x\n   StdOut=/etc/hostname``) comes BEFORE the
        # real one: the last occurrence wins, except for the leading JobId/JobName.
        if key in ("JobId", "JobName"):
            out.setdefault(key, value)
        else:
            out[key] = value
    return out


def parse_sacct_window(result: CommandResult) -> list[SacctRow]:
    """Rows of the gather's windowed ``sacct -P --delimiter=d -o SACCT_WINDOW_FORMAT`` (steps
    included): one per job, each with the efficiency of its allocation line and its steps. Output
    in the short SACCT_FORMAT (an older script) is read by parse_sacct, without efficiency."""
    first = result.stdout.split("\n", 1)[0]
    if result.rc == 0 and first.startswith("JobID") and "TotalCPU" not in first:
        return parse_sacct(result)
    delim, lines = _lines("sacct", result, SACCT_WINDOW_FIELDS)
    n_base = len(SACCT_FIELDS) - 1
    jobs: list[tuple[SacctRow, dict[str, str]]] = []
    steps: dict[str, list[dict[str, str]]] = {}
    for parts, note in _records("sacct", lines, delim, len(SACCT_WINDOW_FIELDS), _SACCT_ID):
        rec = dict(zip(SACCT_WINDOW_FIELDS, parts, strict=True))
        if "." in parts[0]:
            steps.setdefault(parts[0].split(".", 1)[0], []).append(rec)
            continue
        jobs.append((SacctRow(*parts[:n_base], parts[-1], note=note), rec))
    return [replace(row, efficiency=job_efficiency(rec, steps.get(row.job_id, []))) for row, rec in jobs]
