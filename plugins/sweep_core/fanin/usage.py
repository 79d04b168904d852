"""The "GPU / Efficiency" cell of a bucket row and the per-bucket efficiency line: a RUNNING job's
GPU probe (util mean/min, memory vs the ops.md gpu_mem_ceiling), an ended job's seff figures; a
figure that could not be read is "?" and the Note says why (never 0 %).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sweep_core.records.models import Job
from sweep_core.slurm.efficiency import NO_GPU

USAGE_HEADER = "GPU / Efficiency"
_FIGURES = (("cpu", "CPU", "cpu_pct"), ("mem", "mem", "mem_pct"), ("time", "time", "time_pct"))


def _pct(value: Any) -> str:
    return "?" if value is None else f"{value:.0f}%"


def gpu_cell(gpu: dict[str, Any]) -> str:
    """``GPU 87% (min 80%) · mem 62/80 GiB`` from a GpuReading dict; ``GPU ?`` when the probe failed."""
    if not gpu:
        return ""
    if gpu.get("mean_util") is None:
        return "GPU ?"
    mem = ""
    if gpu.get("mem_frac") is not None:
        mem = f" · mem {100 * gpu['mem_frac']:.0f}%"
        if gpu.get("ceiling") is not None:
            mem += f" (ceiling {100 * gpu['ceiling']:.0f}%)"
    if gpu.get("source") == "accounting":  # sstat: no per-GPU list, memory in MiB without a total
        used = gpu.get("mem_used_mib")
        mem = f" · mem {used / 1024:.0f} GiB" if used is not None else ""
        return f"GPU {gpu['mean_util']:.0f}% (min {gpu['min_util']:.0f}%, accounting){mem}"
    return f"GPU {gpu['mean_util']:.0f}% (min {gpu['min_util']:.0f}%, {gpu.get('n_gpus', '?')} GPUs){mem}"


def efficiency_cell(eff: dict[str, Any]) -> str:
    """``CPU 45% · mem 31% · time 80% · 3.2 GPU-h`` (``—`` GPU-h when no GPU was allocated)."""
    if not eff:
        return ""
    parts = [f"{label} {_pct(eff.get(key))}" for _, label, key in _FIGURES]
    gh = eff.get("gpu_hours")
    if gh is not None:
        parts.append(f"{gh:.3g} GPU-h")
    elif eff.get("why", {}).get("gpu", "").startswith(NO_GPU):
        parts.append("— GPU-h")  # no GPU allocated: nothing to count, not unknown
    else:
        parts.append("? GPU-h")
    return " · ".join(parts)


def usage_cell(job: Job) -> str:
    """The row's cell: the GPU probe of a RUNNING job, the efficiency of an ended one, else ``—``."""
    text = gpu_cell(job.gpu) if job.source == "squeue" else efficiency_cell(job.efficiency)
    return text or "—"


def usage_notes(job: Job) -> list[str]:
    """Why a figure of the cell is "?" (the probe's reason, each unread efficiency figure's)."""
    if job.source == "squeue":
        why = job.gpu.get("why", "") if job.gpu else ""
        return [f"GPU unknown: {why}"] if why else []
    why = job.efficiency.get("why", {}) if job.efficiency else {}
    seen: list[str] = []
    for key, text in why.items():
        if key == "gpu" and text.startswith(NO_GPU):
            continue
        if text not in seen:
            seen.append(text)
    return [f"efficiency ?: {'; '.join(seen)}"] if seen else []


def _ratio(jobs: Sequence[Job], num: str, den: str) -> tuple[float | None, int]:
    pairs = [(j.efficiency.get(num), j.efficiency.get(den)) for j in jobs]
    known = [(a, b) for a, b in pairs if a is not None and b]
    if not known:
        return None, 0
    return 100 * sum(a for a, _ in known) / sum(b for _, b in known), len(known)


def bucket_summary(bucket: str, jobs: Sequence[Job]) -> str:
    """One line for the jobs of a bucket that ended in the window, sums over the jobs whose figure
    is known (``SFT jobs this window used 31 % of the memory they asked for (3 of 4 jobs)``);
    "" when none of them has efficiency."""
    ended = [j for j in jobs if j.source != "squeue" and j.efficiency]
    if not ended:
        return ""
    n = len(ended)
    parts = []
    for label, num, den in (
        ("of the memory they asked for", "mem_used", "mem_req"),
        ("of their allocated CPU time", "cpu_used_s", "core_s"),
        ("of their time limits", "elapsed_s", "limit_s"),
    ):
        pct, k = _ratio(ended, num, den)
        parts.append(f"{'?' if pct is None else f'{pct:.0f} %'} {label} ({k} of {n} jobs known)")
    gpu_h = [j.efficiency["gpu_hours"] for j in ended if j.efficiency.get("gpu_hours") is not None]
    tail = f"; {sum(gpu_h):.3g} GPU-hours ({len(gpu_h)} GPU jobs)" if gpu_h else ""
    return f"{bucket} jobs that ended this window used " + ", ".join(parts) + tail
