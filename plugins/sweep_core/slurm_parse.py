"""Parsers for the text output of squeue, sacct -P and scontrol show job.

The text formats are the stable contract across Slurm versions (``--json`` changed shape at
23.11). Each parser validates before it trusts: an errored command raises
:class:`SlurmOutputError`, never returns "no jobs".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


@dataclass(frozen=True)
class CommandResult:
    """One remote command: its exit code and both streams, decoded."""

    rc: int
    stdout: str
    stderr: str


def _check(tool: str, result: CommandResult) -> None:
    err = result.stderr.strip()
    if result.rc != 0:
        raise SlurmOutputError(f"{tool} exited {result.rc}: {err or '(no stderr)'}")
    for pattern in _ERROR_PATTERNS:
        if pattern.search(err):
            raise SlurmOutputError(f"{tool} reported an error (exit 0): {err}")


def _lines(tool: str, result: CommandResult, header: str) -> list[str]:
    _check(tool, result)
    if not result.stdout.strip():
        raise SlurmOutputError(f"{tool} printed nothing, not even its header: output missing")
    lines = result.stdout.splitlines()
    if lines[0].strip() != header:
        raise SlurmOutputError(f"{tool} header is {lines[0][:200]!r}, expected {header!r}: output not trusted")
    if not result.stdout.endswith("\n"):
        raise SlurmOutputError(f"{tool} output ends mid-line: truncated")
    return [line for line in lines[1:] if line.strip()]


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


def parse_squeue(result: CommandResult) -> list[SqueueRow]:
    """Rows of ``squeue -o SQUEUE_FORMAT``; raises SlurmOutputError when not trustworthy."""
    rows = []
    n = len(SQUEUE_FIELDS)
    for i, line in enumerate(_lines("squeue", result, SQUEUE_HEADER), start=2):
        parts = line.split("|", n - 1)
        if len(parts) != n:
            raise SlurmOutputError(f"squeue line {i} has {len(parts)} fields, expected {n}: {line[:200]!r}")
        job_id, raw_id, state, elapsed, limit, nodes, partition, reason, name = parts
        if not re.fullmatch(r"\d+(_(\d+|\[[0-9,%-]+\]))?(\+\d+)?", job_id):
            raise SlurmOutputError(f"squeue line {i}: job id {job_id!r} is not a Slurm job id")
        rows.append(SqueueRow(job_id, raw_id, state, elapsed, limit, nodes, partition, reason, name))
    return rows


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

    @property
    def base_state(self) -> str:
        """State without the ``by <uid>`` suffix: ``CANCELLED by 1001`` -> ``CANCELLED``."""
        return self.state.split(" ", 1)[0].rstrip("+")


def parse_sacct(result: CommandResult) -> list[SacctRow]:
    """Rows of ``sacct -X -P -o SACCT_FORMAT`` (allocation lines only; steps are dropped)."""
    rows = []
    n = len(SACCT_FIELDS)
    header = "|".join(SACCT_FIELDS)
    for i, line in enumerate(_lines("sacct", result, header), start=2):
        parts = line.split("|", n - 1)
        if len(parts) != n:
            raise SlurmOutputError(f"sacct line {i} has {len(parts)} fields, expected {n}: {line[:200]!r}")
        row = SacctRow(*parts)
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
        out.setdefault(key, flat[value_start:value_end].strip())
    return out
