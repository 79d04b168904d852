"""Typed records the sweep passes between gather, fan-in and report.

Everything here is plain data that round-trips through JSON (XCom), so the Airflow shell can
hand it from task to task without pickling. XCom JSON has no NaN/Infinity: a non-finite float
(a metric that logged nan/inf) travels as ``{"__float__": "nan"}`` and comes back as the float.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any

from sweep_core.records.vocab import Action, Bucket, Severity, as_member

_FLOAT_TAG = "__float__"


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``{"__float__": "nan"|"inf"|"-inf"}``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else {_FLOAT_TAG: str(value)}
    if isinstance(value, dict):
        if len(value) == 1 and _FLOAT_TAG in value:  # a dict that looks like the tag: escape it
            return {_FLOAT_TAG + "dict": {k: json_safe(v) for k, v in value.items()}}
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def from_json_safe(value: Any) -> Any:
    """The inverse of json_safe."""
    if isinstance(value, dict):
        if len(value) == 1:
            if _FLOAT_TAG in value and value[_FLOAT_TAG] in ("nan", "inf", "-inf"):
                return float(value[_FLOAT_TAG])
            if _FLOAT_TAG + "dict" in value and isinstance(value[_FLOAT_TAG + "dict"], dict):
                return {k: from_json_safe(v) for k, v in value[_FLOAT_TAG + "dict"].items()}
        return {k: from_json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json_safe(v) for v in value]
    return value


class ClusterStatus(StrEnum):
    """How far a cluster's gather got in this sweep."""

    OK = "OK"  # running set and finished set both validated
    PARTIAL = "PARTIAL"  # running set validated, finished set (sacct) UNKNOWN
    UNKNOWN = "UNKNOWN"  # reached, but the running set (squeue) cannot be trusted
    UNREACHABLE = "UNREACHABLE"  # no login node answered
    SKIPPED = "SKIPPED"  # ops.md says skipped (until a date), or not selected in params
    DROPPED = "DROPPED"  # ops.md says dropped: never contacted
    ERROR = "ERROR"  # configuration error (malformed ops.md, missing connection)
    UNCONFIGURED = "UNCONFIGURED"  # active, but fields a user must fill are unset: never contacted
    NOT_GATHERED = "NOT_GATHERED"  # scheduler kind whose gather is not implemented yet


def base_state_of(state: str) -> str:
    """A job state without its ``by <uid>`` suffix or the ``+`` of a requeue: ``CANCELLED by 1001`` -> ``CANCELLED``."""
    return state.split(" ", 1)[0].rstrip("+")


# Facts the gather reads on the cluster and puts in Job.metrics (kept when the fan-in fills the
# metric columns): an RL completion's artifact dir and whether it holds trace_jobs/ (its flavor);
# an SFT completion's launch YAML and its enable_db_registration, or why unknown (HF-only or not).
GATHER_FACTS: tuple[str, ...] = ("artifact_dir", "trace_jobs", "launch_yaml", "db_registration", "launch_unknown")


@dataclass
class Job:
    """One job as the sweep sees it, from squeue (running) or sacct (finished in window)."""

    cluster: str
    job_id: str
    name: str
    state: str
    source: str  # "squeue" | "sacct"
    elapsed: str = ""
    start: str = ""  # a PENDING job: its expected start (epoch seconds, squeue --start), or N/A
    end: str = ""
    submit: str = ""  # a PENDING job: its submit time (epoch seconds); time pending = remote_now - submit
    dependency: str = ""  # a PENDING job: what is left of its --dependency (squeue %E), "" when none
    exit_code: str = ""
    partition: str = ""
    nodes: str = ""  # node list (or pending reason)
    num_nodes: int | None = None
    reason: str = ""
    stdout_path: str = ""
    log_mtime: float | None = None  # epoch seconds, remote clock
    log_tail: str = ""  # the raw tail until digested, then its excerpt (sweep_core.fanin.digest)
    log_note: str = ""  # why the log could not be read, if it could not
    # A RUNNING log read from its cursor (sweep_core.fanin.cursor): offset (the new cursor), ino, dev,
    # start (where this read began), size, read (bytes read), why (first | cont | truncated | replaced)
    log_cursor: dict[str, Any] = field(default_factory=dict)
    note: str = ""  # what is odd about the row itself (a newline in the job name)
    bucket: Bucket | str = ""  # "" until bucketed
    minutes_since_output: float | None = None
    stale: bool = False
    chain_tails: list[str] = field(default_factory=list)  # earlier chain links' log tails, newest first
    chunks: list[list[str]] | None = None  # array jobs: [JobID, State] rows of `sacct -j <array>`
    metrics: dict[str, Any] = field(default_factory=dict)
    # An ended job: seff's figures (sweep_core.slurm.efficiency.Efficiency.to_dict), {} when not read
    efficiency: dict[str, Any] = field(default_factory=dict)
    # A RUNNING job: its GPU probe (sweep_core.gpu.probe.GpuReading.to_dict), {} when not probed
    gpu: dict[str, Any] = field(default_factory=dict)
    metric_problems: list[str] = field(default_factory=list)
    # Its metric streams read this sweep (sweep_core.slurm.streams): per file kind, path, cursor,
    # the points read ([tag, step, value]; dropped once digested) or the error; "" / [] = none asked
    streams: list[dict[str, Any]] = field(default_factory=list)
    stream_dirs: str = ""  # what the depth-1 listing of ops.md metric_streams found ("dir: N stream file(s)")
    # The (step, value) points per column read this sweep (streams first, else the console's series),
    # bounded (sweep_core.fanin.streams): the history keeps them as its ``point`` rows
    points: dict[str, list[list[float]]] = field(default_factory=dict)
    # What the rules read from the raw tail, each part capped (sweep_core.fanin.digest); {} = not digested
    evidence: dict[str, Any] = field(default_factory=dict)
    flags: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # a fan-in step that failed on this job, and why

    @property
    def base_state(self) -> str:
        """The state without its reason suffix or a requeue's ``+`` (``CANCELLED by 1`` -> ``CANCELLED``)."""
        return base_state_of(self.state)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        names = {f.name for f in fields(cls)}
        job = cls(**{k: v for k, v in data.items() if k in names})
        job.metrics = from_json_safe(job.metrics)
        job.points, job.streams = from_json_safe(job.points), from_json_safe(job.streams)
        job.bucket = as_member(Bucket, job.bucket)
        return job


@dataclass
class ClusterSnapshot:
    """What one cluster said in one sweep. ``running``/``finished`` are None when UNKNOWN."""

    cluster: str
    scheduler: str
    status: ClusterStatus
    login_node: str = ""
    running: list[Job] | None = None
    finished: list[Job] | None = None
    pending: list[Job] | None = None  # PENDING jobs: chain successors; not tabled
    tree: dict[str, Any] | None = None  # working-tree hygiene of the cluster's clone (tree_hygiene)
    quota: dict[str, Any] | None = None  # INODE HEADROOM verdict (sweep_core.health.headroom); None = not checked
    checks: dict[str, Any] = field(default_factory=dict)  # configured command steps: canary, snapshots (health)
    notes: list[str] = field(default_factory=list)
    remote_now: float | None = None
    window_start: str = ""
    window_end: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-compliant (XCom): non-finite metric floats are tagged (see json_safe)."""
        data = asdict(self)
        data["status"] = str(self.status)
        for key in ("running", "finished", "pending"):
            for job in data[key] or []:
                job["metrics"] = json_safe(job["metrics"])
                job["points"], job["streams"] = json_safe(job["points"]), json_safe(job["streams"])
                job["bucket"] = str(job["bucket"])  # the plain name (Job.from_dict makes it a Bucket again)
        data["quota"], data["tree"] = json_safe(data["quota"]), json_safe(data["tree"])
        data["checks"] = json_safe(data["checks"])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterSnapshot:
        def jobs(key: str) -> list[Job] | None:
            raw = data.get(key)
            return None if raw is None else [Job.from_dict(j) for j in raw]

        return cls(
            pending=jobs("pending"),
            tree=from_json_safe(data.get("tree")),
            quota=from_json_safe(data.get("quota")),
            checks=from_json_safe(data.get("checks")) or {},
            cluster=data["cluster"],
            scheduler=data.get("scheduler", ""),
            status=ClusterStatus(data["status"]),
            login_node=data.get("login_node", ""),
            running=jobs("running"),
            finished=jobs("finished"),
            notes=list(data.get("notes", [])),
            remote_now=data.get("remote_now"),
            window_start=data.get("window_start", ""),
            window_end=data.get("window_end", ""),
        )

    def all_jobs(self) -> list[Job]:
        """Running then finished jobs; empty for the unknown parts."""
        return [*(self.running or []), *(self.finished or [])]


@dataclass(frozen=True, kw_only=True)
class Flag:
    """One finding of one rule (plugins/sweep_core/rules/), with the hand-off it asks for."""

    rule: str
    severity: Severity | str
    cluster: str
    job_id: str = ""  # job_id, job_name, bucket: "" for a flag about a whole cluster (or sweep)
    job_name: str = ""
    bucket: Bucket | str = ""
    message: str
    action: Action | str = ""  # an Action, a vocab.cleanup_action(flavor), or "" (none)

    def to_dict(self) -> dict[str, Any]:
        """Exactly the fields, in order, as plain strings (vocabulary members become their names)."""
        return {k: str(v) for k, v in self.__dict__.items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Flag:
        kw = {k: data[k] for k in (f.name for f in fields(cls)) if k in data}
        for key, vocab in (("severity", Severity), ("bucket", Bucket), ("action", Action)):
            if key in kw:
                kw[key] = as_member(vocab, kw[key])
        return cls(**kw)

    def line(self, esc: Callable[[str], str] = str) -> str:
        """``[rule] SEVERITY cluster bucket id name: message → action``; ``esc`` is applied to the
        parts that come from the cluster (id, name, message), e.g. ``safe_text.md_text``."""
        where = " ".join(p for p in [self.cluster, self.bucket, esc(self.job_id), esc(self.job_name)] if p)
        act = f" → {self.action}" if self.action else ""
        return f"[{self.rule}] {self.severity.upper()} {where}: {esc(self.message)}{act}"
