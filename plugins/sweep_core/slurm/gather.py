"""The ONE batched script a SLURM gather runs over one SSH session, and the reader of its output.

The script is sweep_core/programs/gather.sh (with log_helpers.sh; read_logs.py run by the login
node's python3, or gather_shell.sh without one) under a header of quoted values
(sweep_core.slurm.remote_scripts). Every command's exit code, stdout and stderr come back
base64-encoded, one record per line, and are parsed locally.

Rules the script keeps (ops.md STEP 0 gotchas, DESIGN "Cluster cost"): controller calls constant
in the number of jobs (the StdOut of every job from ONE ``squeue -O`` listing, the chunk counts
of every array from ONE ``sacct -j``); every log stat'ed and tailed (bounded) by ONE process; no
find/du walks; sacct always gets -S and -E. A PAST window (ended more than PAST_WINDOW_GRACE_S
before the remote clock) asks no squeue at all: its running set is ``sacct -s R`` over the window. Values from the cluster (job ids, paths) never reach
a shell command line unquoted.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from sweep_core.config.sweep_schema import GatherLimits
from sweep_core.gpu.probe import QUERY as GPU_QUERY
from sweep_core.slurm.parse import (
    SACCT_JOBS_FORMAT,
    SACCT_TERMINAL_STATES,
    SACCT_WINDOW_FORMAT,
    CommandResult,
    pending_format,
    squeue_format,
)
from sweep_core.slurm.past_window import PAST_RUNNING_FORMAT
from sweep_core.slurm.remote_scripts import (
    HeaderValue,
    compose,
    headroom_lines,
    heredoc_function,
    script_file,
    shell_function,
    shell_header,
)
from sweep_core.timing.window import past_window_grace_s

# Texts on stderr that mean the login node could not fork: try the next login node.
FORK_FAILURE_MARKERS = (
    "fork: Resource temporarily unavailable",
    "fork: retry",
    "Cannot fork",
    "fork failed",
    "Resource temporarily unavailable",
    "cannot allocate memory",
)


_LIMITS = GatherLimits()
# ONE `squeue -u U -t all -h -O` for the StdOut of every job the controller knows (22.05 prints
# it unexpanded: read_logs.py / gather_shell.sh expand it as scontrol does); every field is
# followed by the run's marker, the name last. read_logs.py reads them by position.
PATHS_FIELDS = (
    "JobArrayID",
    "JobID",
    "ArrayJobID",
    "ArrayTaskID",
    "UserName",
    "BatchFlag",
    "BatchHost",
    "WorkDir",
    "StdOut",
    "Name",
)


def paths_format(marker: str) -> str:
    """``squeue -O`` format: each PATHS_FIELDS field unpadded (``:0``) and followed by the marker."""
    if any(c in marker for c in ",:"):
        raise ValueError(f"marker {marker!r} cannot sit in a squeue -O format")
    return ",".join(f"{f}:0{marker}" for f in PATHS_FIELDS)


@dataclass(frozen=True)
class GatherRequest:
    """What to ask one SLURM cluster for."""

    user: str
    window_start: int  # epoch seconds, inclusive
    window_end: int  # epoch seconds, exclusive
    tail_bytes: int = _LIMITS.tail_bytes  # defaults: sweep.yaml gather:, in the schema
    max_jobs: int = _LIMITS.max_jobs
    # slurmdbd answers a windowed `sacct -S/-E -s` query for a just-ended job only some seconds
    # after `sacct -j` already shows it (measured: up to ~5 s on 22.05). The script waits until
    # the remote clock is settle_s past the window end before it asks, so a job that ended in the
    # last seconds of a window is not lost from that window's sweep.
    settle_s: int = _LIMITS.sacct_settle_s
    # RUNNING jobs whose name starts with one of these get their earlier chain links' logs
    # (same name, older files in the same log dir, depth-1 ls) tailed too: up to chain_logs.
    chain_prefixes: tuple[str, ...] = _LIMITS.chain_prefixes
    chain_logs: int = 2
    # Jobs that ended in the window: their log (scontrol StdOut while the controller still
    # knows the job, else log_pattern with %j %x %A %a %u expanded) is tailed: the traceback of
    # a failure, the final step of a completion, an eval's upload/register lines.
    log_pattern: str = ""
    max_finished_logs: int = 200
    # Array jobs seen: `sacct -j <array id>` once each for datagen chunk counts.
    max_arrays: int = 100
    array_lookback_s: int = 60 * 86400
    # The cluster's clone (ops.md repo_path): `git status` only, read-only; for each modified
    # file whether it equals the upstream version (identical = stale HEAD, a ff pull fixes it).
    repo_path: str = ""
    max_git_files: int = 100
    # The login node's python3 that reads every log in ONE process (ops.md login_python); "" =
    # none there: the batched shell path runs (records say which: reader:python / reader:shell).
    python: str = "python3"
    # INODE HEADROOM: `df -i -P` of these paths (the artifact roots) and the ops.md quota command
    # (operator config, run as written through bash -c). Empty = not checked (dormant, none).
    df_paths: tuple[str, ...] = ()
    quota_command: str = ""
    # The configured command steps' ``run`` lines (the eval canary, the Daytona snapshot list:
    # sweep_core.health.eval_canary / snapshot_cap), every value already shell-quoted; '' = none.
    step_lines: str = ""
    # Bound on the whole script (remote clock): `timeout` kills it and every process it started
    # (a tail blocked on a FIFO, a hung filesystem), so nothing of the sweep outlives it on the
    # login node. 0 = unbounded. Set it below the SSH command timeout.
    bound_s: int = 0
    # GPU probe (ops.md gpu_probe; sweep_core.gpu): "srun-overlap" probes at most gpu_max RUNNING
    # jobs whose name matches gpu_patterns (bash ERE: the GPU buckets' patterns), the oldest log
    # first, each bounded by gpu_timeout_s; "accounting" asks ONE sstat (bounded by gpu_timeout_s)
    # for the first gpu_max of them (gres/gpuutil, sweep_core.gpu.accounting); "none" runs nothing.
    gpu_probe: str = "none"
    gpu_max: int = 20
    gpu_timeout_s: int = 20
    gpu_patterns: tuple[str, ...] = ()
    # RL flavor facts: each job COMPLETED in the window whose name matches trace_patterns (bash
    # ERE: the RL bucket's) gets two stats: is <root>/<name> a dir under one of artifact_roots,
    # and does it hold trace_subdir/ (record traces:<id>:<root index>, rc 0 yes / 1 no).
    artifact_roots: tuple[str, ...] = ()
    trace_subdir: str = "trace_jobs"
    trace_patterns: tuple[str, ...] = ()
    # HF-only facts: each job COMPLETED in the window whose name matches sft_patterns (bash ERE:
    # the SFT bucket's) gets its log's first launch_bytes read for the launch YAML it names, and
    # that YAML's first launch_bytes (records lbanner/lpath/lyaml:<id>, sweep_core.handoffs.chain.hf_only).
    sft_patterns: tuple[str, ...] = ()
    launch_bytes: int = 65536
    # Incremental log reads (either reader): each RUNNING log is read from its ledger cursor
    # (job id -> (offset, inode, dev); from 0 on first sight, a new inode, or a file now shorter),
    # streaming; only the new bytes' lines holding one of ``literals`` (the metric patterns'
    # required literals, sweep_core.fanin.cursor) come back, the last ``keep_lines`` of each, then
    # the last tail_bytes of the new bytes. False = the bounded tail of each log (as before).
    # ``log_budget``: bytes the cursor reads of one sweep may take in all (0 = unbounded); the logs
    # already caught up first, then first sights; a log over what is left reads that much of its
    # history (the cursor advances by it) and its newest tail_bytes. A job ended in the window gets
    # its final read the same way (records ftail/fcursor): on from its RUNNING cursor, else from 0,
    # with what the running logs left of the budget.
    incremental: bool = False
    cursors: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    literals: tuple[str, ...] = ()
    keep_lines: int = 50
    log_budget: int = 0
    # Metric streams (programs/streams.py, python path only): RUNNING jobs whose name matches one of
    # stream_names (the RL and SFT buckets' patterns) get each of stream_dirs (ops.md metric_streams)
    # listed at depth 1 and its stream files read from stream_cursors (job id -> path -> (offset,
    # ino, dev, mtime, head, step)): stream_file_bytes a file, stream_budget in all (0 = unbounded),
    # tags holding one of stream_words kept, stream_points points a tag.
    stream_dirs: tuple[str, ...] = ()
    stream_names: tuple[str, ...] = ()
    stream_words: tuple[str, ...] = ()
    stream_cursors: dict[str, dict[str, tuple[int, ...]]] = field(default_factory=dict)
    stream_file_bytes: int = _LIMITS.stream_file_bytes
    stream_budget: int = _LIMITS.stream_budget_bytes
    stream_points: int = _LIMITS.stream_points


def stream_cursor_lines(cursors: dict[str, dict[str, tuple[int, ...]]]) -> str:
    """The streams' cursors as lines ``id offset ino dev mtime head step <base64 path>``."""
    lines = []
    for job_id, files in sorted(cursors.items()):
        if not job_id or not all(c.isdigit() or c in "_+" for c in job_id):
            raise ValueError(f"stream cursor of job {job_id!r}: not a job id")
        for path, cur in sorted(files.items()):
            if len(cur) != 6 or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in cur):
                raise ValueError(f"stream cursor of job {job_id}: {cur!r} is not six non-negative integers")
            b64 = base64.b64encode(os.fsencode(path)).decode()
            lines.append(f"{job_id} {' '.join(map(str, cur))} {b64}")
    return "\n".join(lines)


def cursor_lines(cursors: dict[str, tuple[int, int, int]]) -> str:
    """The request's cursors as lines ``id offset inode dev`` (ids checked, numbers non-negative)."""
    lines = []
    for job_id, cur in sorted(cursors.items()):
        if not job_id or not all(c.isdigit() or c in "_+" for c in job_id):
            raise ValueError(f"cursor of job {job_id!r}: not a job id")
        if len(cur) != 3 or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in cur):
            raise ValueError(f"cursor of job {job_id}: {cur!r} is not three non-negative integers")
        lines.append(f"{job_id} {cur[0]} {cur[1]} {cur[2]}")
    return "\n".join(lines)


def literal_lines(literals: tuple[str, ...]) -> str:
    """The literals one a line (a literal holding a line end cannot be searched line by line)."""
    if any("\n" in lit or "\r" in lit or not lit for lit in literals):
        raise ValueError("a literal is empty or holds a line end")
    return "\n".join(literals)


def bucket_patterns(buckets: Any, bucket: str) -> tuple[str, ...]:
    """A bucket's name patterns (sweep.yaml ``buckets:``, bash ERE) for the gather's facts of its
    completions: Bucket.RL's the flavor facts, Bucket.SFT's the HF-only facts."""
    return tuple(p.pattern for r in buckets if str(r.name) == bucket for p in r.patterns)


def new_marker() -> str:
    """A random record marker: a log line or file content cannot forge a record."""
    return f"@@SWEEP-{secrets.token_hex(6)}@@"


def gather_values(req: GatherRequest, marker: str) -> dict[str, HeaderValue]:
    """The header of the gather script: req's values checked (numbers non-negative integers)."""
    for name in (
        "window_start",
        "window_end",
        "tail_bytes",
        "max_jobs",
        "settle_s",
        "chain_logs",
        "max_finished_logs",
        "max_arrays",
        "array_lookback_s",
        "bound_s",
        "max_git_files",
        "gpu_max",
        "gpu_timeout_s",
        "keep_lines",
        "launch_bytes",
        "log_budget",
        "stream_file_bytes",
        "stream_budget",
        "stream_points",
    ):
        value = getattr(req, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if not req.user:
        raise ValueError("user is required")
    if not req.trace_subdir or "/" in req.trace_subdir or req.trace_subdir in (".", ".."):
        raise ValueError(f"trace_subdir must be one plain directory name, got {req.trace_subdir!r}")
    return {
        "U": req.user,
        "SQUEUE_FORMAT": squeue_format(marker),
        "PENDING_FORMAT": pending_format(marker),
        "PATHS_FORMAT": paths_format(marker),
        "SACCT_FORMAT": SACCT_WINDOW_FORMAT,
        "SACCT_STATES": SACCT_TERMINAL_STATES,
        "SACCT_JOBS_FORMAT": SACCT_JOBS_FORMAT,
        "PAST_RUNNING_FORMAT": PAST_RUNNING_FORMAT,
        "PAST_GRACE_S": past_window_grace_s(),
        "WINDOW_START": req.window_start,
        "WINDOW_END": req.window_end,
        "SETTLE_S": req.settle_s,
        "TAIL_BYTES": req.tail_bytes,
        "MAX_JOBS": req.max_jobs,
        "CHAIN_PREFIXES": [p for p in req.chain_prefixes if p],
        "CHAIN_LOGS": req.chain_logs,
        "LP": req.log_pattern,
        "MAX_FINISHED_LOGS": req.max_finished_logs,
        "CHUNKS_SINCE": max(0, req.window_start - req.array_lookback_s),
        "MAX_ARRAYS": req.max_arrays,
        "R": req.repo_path,
        "MAX_GIT_FILES": req.max_git_files,
        "PY": req.python,
        "GPU_PROBE": req.gpu_probe,
        "GPU_MAX": req.gpu_max,
        "GPU_TIMEOUT_S": max(1, req.gpu_timeout_s),
        "GPU_PATTERNS": list(req.gpu_patterns),
        "GPU_QUERY": GPU_QUERY,
        "ART_ROOTS": list(req.artifact_roots),
        "TRACE_SUB": req.trace_subdir,
        "TRACE_PATTERNS": list(req.trace_patterns),
        "SFT_PATTERNS": list(req.sft_patterns),
        "LAUNCH_BYTES": req.launch_bytes,
        "INCREMENTAL": int(req.incremental),
        "CURSORS": cursor_lines(req.cursors) if req.incremental else "",
        "LITERALS": literal_lines(req.literals) if req.incremental else "",
        "KEEP_LINES": req.keep_lines,
        "LOG_BUDGET": req.log_budget,
        "STREAM_DIRS": [d for d in req.stream_dirs if d and "\n" not in d],
        "STREAM_NAMES": [p for p in req.stream_names if p and "\n" not in p],
        "STREAM_WORDS": [w for w in req.stream_words if w and "\n" not in w],
        "SCURSORS": stream_cursor_lines(req.stream_cursors) if req.stream_dirs else "",
        "STREAM_LIMITS": f"{req.stream_file_bytes} {req.stream_budget} {req.stream_points}",
    }


def build_gather_script(req: GatherRequest, marker: str | None = None) -> tuple[str, str]:
    """The bash script for ``bash -s`` (sweep_core/programs/gather.sh under a header of req's values,
    read_logs.py and gather_shell.sh as its functions, read_on.awk as READ_ON_AWK) and the record
    marker it prints."""
    marker = marker or new_marker()
    values = gather_values(req, marker)
    trailer = headroom_lines(req.df_paths, req.quota_command) + req.step_lines
    functions = (
        heredoc_function("read_logs", "PY", "read_logs.py", "streams.py")
        + shell_function("gather_in_shell", "gather_shell.sh")
        + shell_header({"READ_ON_AWK": script_file("read_on.awk")})
    )
    files = ("log_helpers.sh", "gather.sh", "tree_status.sh", "gpu_probe.sh")
    script = compose(marker, values, files, trailer, req.bound_s, functions)
    return script, marker


@dataclass
class GatherOutput:
    """The records of one script run, by name (``squeue``, ``scontrol:123``, ...)."""

    records: dict[str, CommandResult] = field(default_factory=dict)
    complete: bool = False  # the end record arrived: the script ran to its last line
    problems: list[str] = field(default_factory=list)
    marker: str = ""  # the run's marker: also the field delimiter of its sacct/squeue text

    def get(self, name: str) -> CommandResult | None:
        return self.records.get(name)


def _b64(text: str) -> str:
    if text == "-":
        return ""
    return base64.b64decode(text, validate=True).decode("utf-8", "replace")


def parse_gather_output(stdout: str, marker: str) -> GatherOutput:
    """Read the script's records; lines that are not records (a login banner, motd) are ignored."""
    out = GatherOutput(marker=marker)
    for lineno, line in enumerate(stdout.splitlines(), start=1):
        if not line.startswith(marker + " "):
            continue
        parts = line.split(" ")
        if len(parts) >= 2 and parts[1] == "end":
            out.complete = True
            continue
        if len(parts) != 5:
            out.problems.append(f"record on line {lineno} is cut short ({len(parts)} fields)")
            continue
        _, name, rc, b64out, b64err = parts
        try:
            out.records[name] = CommandResult(int(rc), _b64(b64out), _b64(b64err))
        except (ValueError, binascii.Error) as exc:
            out.problems.append(f"record {name!r} on line {lineno} is corrupt: {exc}")
    return out


def looks_like_fork_failure(stderr: str) -> bool:
    """Whether a login node's stderr says it could not fork (fork saturation)."""
    low = stderr.lower()
    return any(m.lower() in low for m in FORK_FAILURE_MARKERS)


# A line that names a failed fork (bash's "fork: retry: Resource temporarily unavailable", "fork:
# Cannot allocate memory", "Cannot fork", "fork failed"); a bare "Resource temporarily unavailable"
# (slurmctld busy: EAGAIN over the wire) is not one.
_FORK_LINE = re.compile(
    r"\bcannot fork\b|\bfork(?:\(\))? failed\b|\bfork: (?:retry: )?(?:resource temporarily unavailable|cannot allocate memory)",
    re.IGNORECASE,
)
# Records whose stderr is a compute node's (the srun GPU probe): its fork trouble is not the login node's.
_REMOTE_STDERR = ("gpu:",)


def _fork_line(text: str, final: bool = False) -> str:
    """The last line of ``text`` naming a failed fork ('' = none); ``final``: not a ``fork: retry``
    line (bash retried, and may have started the command after all)."""
    lines = [ln.strip() for ln in text.splitlines() if _FORK_LINE.search(ln)]
    if final:
        lines = [ln for ln in lines if "fork: retry" not in ln.lower()]
    return lines[-1][:200] if lines else ""


def fork_lost_reads(output: GatherOutput, stderr: str) -> list[tuple[str, str]]:
    """What a run that reached its end record lost to its login node not forking, as (record, the
    fork failure's line): each command that exited non-zero with a fork failure on its stderr
    (squeue, sacct, scontrol, ...; an in-script wrapper or the command itself), and ``script``
    when the script's own shell could not start one (that command left no record). [] = none."""
    lost = [
        (name, line)
        for name, rec in output.records.items()
        if rec.rc != 0 and not name.startswith(_REMOTE_STDERR) and (line := _fork_line(rec.stderr))
    ]
    if line := _fork_line(stderr, final=True):
        lost.append(("script", line))
    return lost
