"""The deep-dive's batched script (sweep_core/programs/deep_dive.sh: ONE read-only SSH session per
cluster) and its reader. Per job: its squeue state, the bounded tail of its log and of up to
``chain_logs`` earlier chain-link logs (same name, same dir), the log's mtime, and the newest
rollout files (depth-1 ``ls -1t`` of its trace dir, each file's last ``file_bytes``), and the Ray
worker logs last written near the log's last write (ops.md ``ray_log_dir``, listed once at depth 1,
each file's last ``ray_file_bytes``; ray_logs.py finds their hang lines). Every value
is shlex-quoted; ids and names are checked first; paths stay inside the ops.md roots.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from sweep_core.config.deep_dive_schema import DeepDiveSection
from sweep_core.config.ops import ClusterConfig
from sweep_core.gpu.accounting import accounting_readings
from sweep_core.gpu.probe import QUERY as GPU_QUERY
from sweep_core.gpu.probe import parse_probe
from sweep_core.handoffs.cancel.plan import IRIS_JOB_ID_RE, check_slurm_job
from sweep_core.handoffs.deep_dive.inputs import ACCOUNTING_NODE, GpuUtil, SignatureHit
from sweep_core.handoffs.deep_dive.ray_logs import RayLog
from sweep_core.safe.names import plain_name
from sweep_core.slurm.gather import GatherOutput, paths_format
from sweep_core.slurm.remote_scripts import compose

RAY_OFF = (
    "off: ops.md ray_log_dir is unset (Ray writes worker logs to each node's /tmp/ray/session_*/logs, "
    "which the login node cannot read)"
)

STACK_OFF = (
    "off: ops.md faulthandler_signal is unset (only a launcher that registers faulthandler on the signal may "
    "get it: unregistered, SIGUSR1 terminates the process; ptrace is blocked, so no py-spy)"
)


@dataclass(frozen=True)
class ProbeJob:
    """One job to look at (a hand-off conf entry), checked before any script is built."""

    cluster: str
    job_id: str
    name: str

    def __post_init__(self) -> None:
        if self.iris:  # read through the iris client, never put in a shell
            if self.job_id.rsplit("/", 1)[-1] != self.name:
                raise ValueError(f"iris job {self.job_id!r} is not named {self.name!r}")
            return
        check_slurm_job(self.job_id, self.name)

    @property
    def iris(self) -> bool:
        """An iris job id (``/<user>/<job>``), not a Slurm one."""
        return bool(IRIS_JOB_ID_RE.match(self.job_id))


@dataclass
class Gathered:
    """What the script brought back for one job (raw text; the use-case reads it)."""

    state: str = ""
    log: str | None = None
    log_path: str = ""
    log_problem: str = ""
    chains: list[str] = field(default_factory=list)  # newest first
    log_age_s: float | None = None
    trace_dir: str = ""
    trace_problem: str = ""
    files: list[tuple[str, str, bool]] = field(default_factory=list)  # (name, tail, truncated), newest first
    gpus: list[GpuUtil] | None = None  # None = not probed (gpu_note says why)
    gpu_note: str = "not probed (ops.md gpu_probe is none)"
    signatures: list[SignatureHit] | None = None  # found over the whole log as it streamed (iris); None = search g.log
    log_note: str = ""  # how much of the log was read (iris: lines since submission)
    log_mtime: int | None = None  # the job log's last write (epoch s, remote clock): its last output
    ray: list[RayLog] | None = None  # Ray worker logs written near the last output; None = not read
    ray_note: str = RAY_OFF  # why they were not read, or what was looked at
    stack_sent: str = ""  # what the faulthandler signal reached (``0: sent 1234 python3`` lines)
    stack_text: str | None = None  # what the job's StdErr got after the signal; None = no signal sent
    stack_note: str = STACK_OFF  # why no signal was sent ("" = not asked: the log advances)


def trace_dirs(job: ProbeJob, roots: tuple[str, ...], cfg: DeepDiveSection) -> list[str]:
    """The candidate trace dirs of ``job``: sweep.yaml ``deep_dive.trace_dir`` under every artifact
    root ([] for a name that could climb out of a root: ``/``, ``..``)."""
    if not plain_name(job.name):
        return []
    out = []
    for root in roots:
        d = posixpath.normpath(cfg.trace_dir.format(root=root.rstrip("/"), name=job.name, job_id=job.job_id))
        if d.startswith(posixpath.normpath(root) + "/"):
            out.append(d)
    return out


def build_deep_dive_script(cfg_cluster: ClusterConfig, jobs: list[ProbeJob], cfg: DeepDiveSection, marker: str) -> str:
    """ONE script for every job of one cluster (read-only)."""
    tdirs: list[str] = []
    tjob: list[str] = []
    for k, job in enumerate(jobs):
        for d in trace_dirs(job, cfg_cluster.artifact_roots, cfg):
            tdirs.append(d)
            tjob.append(str(k))
    values = {
        "U": cfg_cluster.user,
        "IDS": [j.job_id for j in jobs],
        "NAMES": [j.name for j in jobs],
        "LP": cfg_cluster.log_pattern,
        "PATHS_FORMAT": paths_format(marker),
        "LOG_ROOTS": list(cfg_cluster.log_roots),
        "ART_ROOTS": list(cfg_cluster.artifact_roots),
        "TDIRS": tdirs,
        "TJOB": tjob,
        "TGLOBS": list(cfg.trace_files),
        "LOG_BYTES": cfg.log_bytes,
        "CHAIN_LOGS": cfg.chain_logs,
        "MAX_FILES": cfg.max_files,
        "FILE_BYTES": cfg.file_bytes,
        "GPU_PROBE": cfg_cluster.gpu_probe,
        "GPU_TIMEOUT_S": cfg_cluster.gpu_probe_timeout_s,
        "GPU_QUERY": GPU_QUERY,
        "RAY_DIR": cfg_cluster.ray_log_dir,
        "RAY_GLOBS": list(cfg.ray_files),
        "RAY_WINDOW_S": cfg.ray_window_minutes * 60,
        "RAY_MAX": cfg.ray_max_files,
        "RAY_BYTES": cfg.ray_file_bytes,
        "STACK_SIG": cfg_cluster.faulthandler_signal,
        "HANG_AFTER_S": cfg.advancing_minutes * 60,
        "STACK_WAIT_S": cfg.stack_wait_s,
        "STACK_TIMEOUT_S": cfg.stack_timeout_s,
    }
    # the faulthandler signal is the script's one act (never re-sent once sent)
    return compose(marker, values, ("log_helpers.sh", "deep_dive.sh"), act=bool(cfg_cluster.faulthandler_signal))


def _states(out: GatherOutput) -> dict[str, str]:
    r = out.get("states")
    if r is None or r.rc != 0:
        return {}
    states = {}
    for line in r.stdout.splitlines():
        parts = line.split(out.marker)
        if len(parts) >= 2:
            states[parts[0]] = parts[1]
    return states


def read_deep_dive(
    out: GatherOutput | None,
    jobs: list[ProbeJob],
    problem: str = "",
    timeout_s: int | None = None,
    ray_on: bool = False,
    stack_on: bool = False,
) -> list[Gathered]:
    """One Gathered per job; a cluster that did not answer leaves every input unknown (said why).
    ``ray_on``: ops.md ray_log_dir is set (else the Ray worker logs are off, said why); ``stack_on``:
    ops.md faulthandler_signal is set (else the stack dump is off, said why)."""
    got = [Gathered() for _ in jobs]
    if out is None:
        for g in got:
            g.log_problem = g.trace_problem = g.gpu_note = problem or "the cluster did not answer"
            if ray_on:
                g.ray_note = f"not read: {g.log_problem}"
            if stack_on:
                g.stack_note = f"no signal sent: {g.log_problem}"
        return got
    states = _states(out)
    now = out.get("now")
    now_s = float(now.stdout.strip()) if now is not None and now.stdout.strip().isdigit() else None
    for k, (job, g) in enumerate(zip(jobs, got, strict=True)):
        g.state = states.get(job.job_id, "")
        _read_log(out, k, g, now_s, problem)
        _read_ray(out, k, g, problem, ray_on)
        _read_trace(out, k, g, problem)
        _read_gpu(out, k, g, timeout_s)
        _read_stack(out, k, g, problem, stack_on)
    if (acct := out.get("gpuacct")) is not None:
        found = accounting_readings([(j.job_id, j.job_id) for j in jobs], acct, timeout_s)
        for job, g in zip(jobs, got, strict=True):
            _read_accounting(found.get(job.job_id, {}), g)
    return got


def _read_accounting(reading: dict, g: Gathered) -> None:
    """The job's accounting reading (gres/gpuutil of its busiest step) as one job-wide figure."""
    if reading.get("mean_util") is None:
        g.gpu_note = reading.get("why") or "accounting: no reading"
        return
    g.gpus = [GpuUtil(ACCOUNTING_NODE, 0, reading["max_util"], reading.get("mem_used_mib"))]
    g.gpu_note = "sstat gres/gpuutil (accounting): the busiest step's maximum, job-wide"


def _read_gpu(out: GatherOutput, k: int, g: Gathered, timeout_s: int | None) -> None:
    """The job's GPU readings from its probe record (sweep_core.gpu.probe reads it: unknown with
    the reason, never 0 %)."""
    if (no := out.get(f"nogpu:{k}")) is not None:
        g.gpu_note = no.stderr.strip() or "not probed"
    elif (rec := out.get(f"gpu:{k}")) is not None:
        reading = parse_probe(rec, timeout_s)
        if reading.why:
            g.gpu_note = reading.why
        else:
            g.gpus = [GpuUtil(str(s.task), s.index, s.util, s.mem_used, s.mem_total) for s in reading.gpus]
            g.gpu_note = f"srun --overlap nvidia-smi, {len(g.gpus)} GPU(s)"


def _read_log(out: GatherOutput, k: int, g: Gathered, now_s: float | None, problem: str) -> None:
    if (bad := out.get(f"nolog:{k}")) is not None:
        g.log_problem = f"log {bad.stdout or ''}: {bad.stderr}".replace("log : ", "log: ")
        return
    path, log = out.get(f"logpath:{k}"), out.get(f"log:{k}")
    if path is None or log is None:
        g.log_problem = problem or "log not read (script cut short)"
        return
    if log.rc != 0:
        g.log_problem = f"log {path.stdout} unreadable: {log.stderr.strip()[:160]}"
        return
    g.log_path, g.log = path.stdout, log.stdout
    mt = out.get(f"mtime:{k}")
    if mt is not None and mt.rc == 0 and mt.stdout.strip().isdigit():
        g.log_mtime = int(mt.stdout.strip())
        if now_s is not None:
            g.log_age_s = max(0.0, now_s - g.log_mtime)
    n = 1
    while (c := out.get(f"chain:{k}:{n}")) is not None:
        if c.rc == 0:
            g.chains.append(c.stdout)
        n += 1


def _read_trace(out: GatherOutput, k: int, g: Gathered, problem: str) -> None:
    if (bad := out.get(f"notrace:{k}")) is not None:
        g.trace_problem = f"trace dir {bad.stdout}: {bad.stderr}"
        return
    d = out.get(f"tdir:{k}")
    if d is None:
        g.trace_problem = problem or "no trace dir (sweep.yaml deep_dive.trace_dir) under the artifact roots"
        return
    g.trace_dir = d.stdout
    n = 1
    while (name := out.get(f"tname:{k}:{n}")) is not None:
        body = out.get(f"tfile:{k}:{n}")
        if body is not None and body.rc == 0:
            size = int(name.stderr) if name.stderr.isdigit() else 0
            g.files.append((name.stdout, body.stdout, size > len(body.stdout.encode("utf-8", "replace"))))
        n += 1
    if not g.files:
        g.trace_problem = f"no rollout file in {g.trace_dir}"


def _read_ray(out: GatherOutput, k: int, g: Gathered, problem: str, ray_on: bool) -> None:
    """The Ray worker logs the script read near the last output (none asked: RAY_OFF stays)."""
    if (bad := out.get(f"noray:{k}")) is not None:
        g.ray_note = f"ray_log_dir {bad.stdout}: {bad.stderr}"
        return
    d = out.get(f"raydir:{k}")
    if d is None:
        if ray_on:
            why = "script cut short" if g.log is not None else "no job log: no last output to look around"
            g.ray_note = f"not read: {problem or why}"
        return
    g.ray = []
    n = 1
    while (name := out.get(f"rayname:{k}:{n}")) is not None:
        body = out.get(f"rayfile:{k}:{n}")
        mt, _, size = name.stderr.partition(" ")
        if body is not None and body.rc == 0 and mt.isdigit():
            cut = size.isdigit() and int(size) > len(body.stdout.encode("utf-8", "replace"))
            g.ray.append(RayLog(name.stdout, int(mt), body.stdout, cut))
        n += 1
    g.ray_note = f"{d.stderr or 0} matching file(s) in {d.stdout} looked at, {len(g.ray)} written near the last output"


def _read_stack(out: GatherOutput, k: int, g: Gathered, problem: str, stack_on: bool) -> None:
    """What the faulthandler step did for the job: not asked (the log advances: nothing said), why no
    signal was sent, or what the signal reached and the StdErr text written after it."""
    if not stack_on:
        return
    if (no := out.get(f"nostack:{k}")) is not None:
        where = f" ({no.stdout})" if no.stdout else ""
        g.stack_note = "" if no.rc == 0 else f"no signal sent: {no.stderr.strip()}{where}"
        return
    sig = out.get(f"stacksig:{k}")
    if sig is None:
        g.stack_note = f"no signal sent: {problem or 'script cut short'}"
        return
    g.stack_sent = sig.stdout
    if (dump := out.get(f"stack:{k}")) is not None:
        g.stack_text, g.stack_note = dump.stdout, f"read from {dump.stderr}"
        return
    said = "; ".join(line.strip() for line in sig.stdout.splitlines() if line.strip())
    err = sig.stderr.strip()[:200]
    g.stack_note = "no signal sent: " + (said or err or f"no python process of the job found (rc {sig.rc})")
