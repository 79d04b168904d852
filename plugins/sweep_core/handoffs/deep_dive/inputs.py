"""What the deep-dive verdict reads about one job (``DeepDiveInput``); ``None`` everywhere means
UNKNOWN (not read), never healthy and never zero. GPU utilisation is an optional input: the
per-GPU readings of a probe (``GpuUtil``), None when no probe ran.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sweep_core.handoffs.deep_dive.ray_logs import HangHit

ACCOUNTING_NODE = "accounting"  # a GpuUtil that is the job-wide sstat figure (ops.md gpu_probe: accounting)


@dataclass(frozen=True)
class GpuUtil:
    """One GPU of one node of the job, as nvidia-smi read it; None where it printed ``[N/A]``."""

    node: str  # the node's name or its srun task number
    index: int
    util: float | None  # percent
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None


@dataclass(frozen=True)
class SignatureHit:
    """A log line that matched a weight-sync or engine-starvation pattern."""

    kind: str  # "weight-sync" | "engine-starvation"
    where: str  # "this log" | "earlier chain log #1" ...
    line_no: int  # 1-based, within the part of that log that was read
    line: str


@dataclass
class DeepDiveInput:
    """Everything gathered about one job. ``series`` oldest first across chain links."""

    cluster: str
    job_id: str
    name: str
    state: str = ""  # squeue state now; "" = unknown
    series: list[dict[str, float]] | None = None  # None = no log read
    step: int | None = None
    max_steps: int | None = None
    log_age_s: float | None = None  # seconds since the log was last written (remote clock)
    signatures: list[SignatureHit] | None = None  # None = no log read
    rollouts: list[str] | None = None  # newest first; None = none read (rollout_note says why)
    rollout_note: str = ""
    starvation_log: str | None = None  # this log's text for the starvation detector; None = not read
    traps: list[str] | None = None  # named trap lines (EDQUOT, sig53) of this log; None = not read
    gpus: list[GpuUtil] | None = None  # None = not probed (gpu_note says why)
    gpu_note: str = "not probed"
    problems: list[str] = field(default_factory=list)  # why an input is unknown
    expected: tuple[float, float, str] | None = None  # the serving LUT's (util_min, util_max, where from)
    expected_note: str = ""  # why there is no expected range (unknown, never healthy)
    log_note: str = ""  # how much of the log was read ("812 line(s) since submission"), said as evidence
    last_output: int | None = None  # the log's last write (epoch s, remote clock)
    hang_hits: list[HangHit] | None = None  # hang lines of the Ray worker logs near it; None = not read
    hang_note: str = ""  # what was looked at, or why not (ops.md ray_log_dir off)
    stacks: list[str] | None = None  # the faulthandler dump's lines (threads, top frames); None = no dump
    stack_note: str = ""  # why there is no dump ("" = none asked: the log advances), or where it was read

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
