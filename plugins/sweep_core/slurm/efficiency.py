"""Efficiency of jobs that ended (seff / reportseff parity) from the gather's ONE windowed sacct,
steps included: CPU (TotalCPU / (Elapsed x AllocCPUS)), memory (peak of the steps / requested),
time (Elapsed / Timelimit) and GPU-hours (AllocTRES gres/gpu x Elapsed). A value that cannot be
read is None with the reason in ``why``: never 0 %.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# The usage fields the windowed sacct asks for (between SACCT_FIELDS and the name, which stays last).
USAGE_FIELDS: tuple[str, ...] = (
    "Timelimit",
    "TotalCPU",
    "AllocCPUS",
    "NNodes",
    "ReqMem",
    "MaxRSS",
    "TRESUsageInTot",
    "AllocTRES",
)

# Bounded digit runs: a longer one is no Slurm figure (and int()/float() of it raises or is inf).
_DURATION = re.compile(r"(?:(\d{1,9})-)?(?:(\d{1,9}):)?(\d{1,9}):(\d{1,9}(?:\.\d{1,9})?)")
_SIZE = re.compile(r"(\d{1,20}(?:\.\d{1,20})?)([KMGTP]?)([nc]?)", re.I)
_UNIT = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}


def duration_s(text: str) -> float | None:
    """Slurm ``[D-][HH:]MM:SS[.mmm]`` -> seconds (TotalCPU carries milliseconds); None otherwise
    (``UNLIMITED``, ``Partition_Limit``, ``INVALID``, empty)."""
    m = _DURATION.fullmatch(text.strip())
    if not m:
        return None
    d, h, mi, s = m.groups()
    return int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi) * 60 + float(s)


def size_bytes(text: str, default_unit: str = "") -> tuple[float, str] | None:
    """A Slurm size (``1234K``, ``4000Mn``, ``2Gc``, ``0``) -> (bytes, ``n``|``c``|``""``); None
    when empty or not a size. ``default_unit`` applies to a bare number (TRES ``mem=`` is in M)."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        return None
    number, unit, per = m.groups()
    return float(number) * _UNIT[(unit or default_unit).upper()], per.lower()


def tres(text: str) -> dict[str, str]:
    """``billing=2,cpu=2,gres/gpu=8,mem=200M,node=1`` -> {name: value}."""
    out = {}
    for part in text.split(","):
        name, eq, value = part.partition("=")
        if eq and name.strip():
            out[name.strip()] = value.strip()
    return out


def gpu_count(alloc_tres: str) -> int | None:
    """GPUs of an allocation: ``gres/gpu=N``, else the sum of typed ``gres/gpu:<type>=N``; None
    when AllocTRES names no GPU."""
    t = tres(alloc_tres)
    if (n := _int(t.get("gres/gpu", ""))) is not None:
        return n
    typed = [n for k, v in t.items() if k.startswith("gres/gpu:") and (n := _int(v)) is not None]
    return sum(typed) if typed else None


@dataclass
class Efficiency:
    """seff's figures of one ended job; a None figure has its reason in ``why``."""

    cpu_pct: float | None = None
    mem_pct: float | None = None
    time_pct: float | None = None
    gpu_hours: float | None = None
    cpu_used_s: float | None = None  # numerators and denominators, for the per-bucket sums
    core_s: float | None = None
    mem_used: float | None = None  # bytes
    mem_req: float | None = None
    elapsed_s: float | None = None
    limit_s: float | None = None
    nnodes: int | None = None
    why: dict[str, str] = field(default_factory=dict)  # figure -> why it is "?"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _requested_mem(req_mem: str, alloc_cpus: int | None, nnodes: int | None) -> tuple[float | None, str]:
    """The job's whole memory request in bytes. Slurm >= 21.08 (22.05 here) prints ReqMem as the
    job's mem TRES, the total (``--mem-per-cpu=100M -c 2`` reads ``200M``) with no suffix; older
    versions print ``4000Mn`` (per node) / ``2000Mc`` (per CPU), multiplied out here."""
    size = size_bytes(req_mem, "M")
    if size is None or size[0] <= 0:
        return None, f"ReqMem {req_mem!r}: no memory request recorded"
    value, per = size
    if per == "n":
        if not nnodes:
            return None, f"ReqMem {req_mem!r} is per node but NNodes is unknown"
        return value * nnodes, ""
    if per == "c":
        if not alloc_cpus:
            return None, f"ReqMem {req_mem!r} is per CPU but AllocCPUS is unknown"
        return value * alloc_cpus, ""
    return value, ""


def _used_mem(steps: Sequence[Mapping[str, str]]) -> tuple[float | None, str]:
    """The memory peak of the job: the largest step, each step's peak summed over its tasks
    (TRESUsageInTot mem=, as seff reads it), else the step's largest task (MaxRSS)."""
    peaks = []
    for s in steps:
        tot = size_bytes(tres(s.get("TRESUsageInTot", "")).get("mem", ""))
        rss = size_bytes(s.get("MaxRSS", ""))
        if tot is not None:
            peaks.append(tot[0])
        elif rss is not None:
            peaks.append(rss[0])
    if not peaks:
        return None, "no step recorded MaxRSS (job accounting gather off, or no step ran)"
    return max(peaks), ""


def _int(text: str) -> int | None:
    """A count Slurm prints (ASCII digits, at most 9); None otherwise (``²`` is a digit to isdigit)."""
    t = text.strip()
    return int(t) if t.isascii() and t.isdigit() and len(t) <= 9 else None


def job_efficiency(job: Mapping[str, str], steps: Sequence[Mapping[str, str]]) -> Efficiency:
    """seff's figures from the job's allocation line and its step lines (``.batch``, ``.extern``,
    ``.0``...), each a {sacct field: text} of USAGE_FIELDS + Elapsed."""
    e = Efficiency(elapsed_s=duration_s(job.get("Elapsed", "")))
    cpus, nnodes = _int(job.get("AllocCPUS", "")), _int(job.get("NNodes", ""))
    e.nnodes = nnodes
    if not e.elapsed_s:
        for k in ("cpu", "time", "gpu"):
            e.why[k] = f"Elapsed {job.get('Elapsed', '')!r}: the job did not run"
    else:
        _cpu(e, job, steps, cpus)
        e.limit_s = duration_s(job.get("Timelimit", ""))
        if e.limit_s:
            e.time_pct = 100 * e.elapsed_s / e.limit_s
        else:
            e.why["time"] = f"Timelimit {job.get('Timelimit', '')!r}: no limit to compare with"
        gpus = gpu_count(job.get("AllocTRES", ""))
        if gpus is None:
            e.why["gpu"] = "no gres/gpu in AllocTRES"
        else:
            e.gpu_hours = gpus * e.elapsed_s / 3600
    e.mem_req, why_req = _requested_mem(job.get("ReqMem", ""), cpus, nnodes)
    e.mem_used, why_used = _used_mem(steps)
    if e.mem_req and e.mem_used is not None:
        e.mem_pct = 100 * e.mem_used / e.mem_req
    else:
        e.why["mem"] = why_req or why_used
    return e


def _cpu(e: Efficiency, job: Mapping[str, str], steps: Sequence[Mapping[str, str]], cpus: int | None) -> None:
    if not cpus:
        e.why["cpu"] = f"AllocCPUS {job.get('AllocCPUS', '')!r}: unknown"
        return
    e.core_s = (e.elapsed_s or 0) * cpus
    times = [t for s in steps if (t := duration_s(s.get("TotalCPU", ""))) is not None]
    used = sum(times) if times else duration_s(job.get("TotalCPU", ""))
    if used is None:
        e.why["cpu"] = f"TotalCPU {job.get('TotalCPU', '')!r}: unreadable"
    elif used == 0 and not any(s.get("TRESUsageInTot") or s.get("MaxRSS") for s in steps):
        # 0 CPU-seconds next to no usage at all: nothing was measured (JobAcctGatherType none)
        e.why["cpu"] = "TotalCPU 0 and no step usage recorded (job accounting gather off?)"
    else:
        e.cpu_used_s = used
        e.cpu_pct = 100 * used / e.core_s


NO_GPU = ("no gres/gpu", "no GPU on ")  # a "gpu" why that means none was allocated: "—", not "?"


def on_whole_nodes(eff: dict[str, Any], partition: str, nodes: Mapping[str, tuple[int, str]]) -> dict[str, Any]:
    """An ended job's figures (Efficiency.to_dict) on a cluster that allocates whole nodes, GPUs not
    a gres and RealMemory misreported (ops.md ``whole_nodes``: partition -> (GPUs, memory) of one
    node): GPU-hours from the node's GPUs × NNodes × Elapsed, memory % against its memory × NNodes,
    never AllocTRES's gres or ReqMem (RealMemory); a partition not named, or a memory not given,
    is ``?`` with the reason. ``nodes`` empty: the figures as accounting gave them."""
    if not nodes or not eff:
        return eff
    out, why = dict(eff), dict(eff.get("why") or {})
    part, n, ran = partition.split(",")[0].strip(), eff.get("nnodes"), eff.get("elapsed_s")
    out["mem_req"] = out["mem_pct"] = None
    out["gpu_hours"] = None
    here = "ops.md whole_nodes: GPUs are not a gres and RealMemory is misreported on this cluster"
    if part not in nodes:
        why["gpu"] = why["mem"] = f"partition {part or '?'} not in {here}"
    elif not n:
        why["gpu"] = why["mem"] = f"NNodes unknown ({here})"
    else:
        gpus, memory = nodes[part]
        if gpus == 0:
            why["gpu"] = f"no GPU on a {part} node (ops.md whole_nodes)"
        elif ran:
            out["gpu_hours"], _ = gpus * n * ran / 3600, why.pop("gpu", None)
        size = size_bytes(memory) if memory else None
        if size is None:
            why["mem"] = f"no memory of a {part} node in {here}"
        else:
            out["mem_req"] = size[0] * n
            if out.get("mem_used") is not None:
                out["mem_pct"] = 100 * out["mem_used"] / out["mem_req"]
                why.pop("mem", None)
    out["why"] = why
    return out
