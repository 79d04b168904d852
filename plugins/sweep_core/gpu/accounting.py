"""Read the ``accounting`` GPU source (ops.md ``gpu_probe: accounting``): ONE ``sstat -a -n -P
-j <raw ids> -o JobID,TRESUsageInAve,TRESUsageInMin,TRESUsageInMax`` for the candidates (fields
split by ``|``: sstat 22.05 has no ``--delimiter``; none of these fields can hold one), where
the site's accounting records ``gres/gpuutil`` (percent) and ``gres/gpumem`` (bytes, with a
suffix) per step (Slurm's AccountingStorageTRES with GPU autodetect through NVML). Per job the step
with the highest average utilisation is the one doing GPU work; its average is the mean, its
minimum the min, its maximum the top. A job whose steps record no ``gres/gpuutil`` is unknown,
with the reason (never 0 %); so is every candidate when sstat failed or timed out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sweep_core.gpu.probe import GpuReading
from sweep_core.records.remote_result import CommandResult

SEP = "|"  # sstat -P
ACCOUNTING_FIELDS = ("JobID", "TRESUsageInAve", "TRESUsageInMin", "TRESUsageInMax")
_TIMED_OUT = (124, 137)
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)", re.I)
_MIB = {"": 1 / 2**20, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}
NOT_RECORDED = (
    "accounting records no gres/gpuutil for this job (the site's AccountingStorageTRES lacks "
    "gres/gpuutil, or GPUs are not autodetected through NVML)"
)


@dataclass(frozen=True)
class StepUsage:
    """gres/gpuutil (percent) and gres/gpumem (MiB) of one step: average, minimum, maximum."""

    avg: float | None
    low: float | None
    top: float | None
    mem_mib: float | None


def tres_value(tres: str, name: str) -> str | None:
    """The value of ``name`` in a TRES list ``cpu=00:01:02,gres/gpuutil=73,...``; None if absent."""
    for part in tres.split(","):
        key, _, value = part.partition("=")
        if key.strip() == name:
            return value.strip()
    return None


def _pct(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        return None
    return value if 0 <= value <= 100 * 64 else None  # a site may sum over a node's GPUs


def _mib(text: str | None) -> float | None:
    m = _SIZE.fullmatch(text or "")
    return float(m.group(1)) * _MIB[m.group(2).upper()] if m else None


def step_usage(ave: str, low: str, top: str) -> StepUsage:
    """One sstat line's GPU figures (None where the TRES list does not carry them)."""
    return StepUsage(
        _pct(tres_value(ave, "gres/gpuutil")),
        _pct(tres_value(low, "gres/gpuutil")),
        _pct(tres_value(top, "gres/gpuutil")),
        _mib(tres_value(top, "gres/gpumem")),
    )


def _job_of(step_id: str) -> str:
    """``123.batch`` / ``123_4.0`` / ``123+1.0`` -> the job part ``123`` / ``123_4`` / ``123+1``."""
    return step_id.split(".", 1)[0].strip()


def accounting_readings(
    candidates: list[tuple[str, str]],
    result: CommandResult | None,
    timeout_s: int | None = None,
    ceiling: float | None = None,
    cap: int | None = None,
) -> dict[str, dict]:
    """{job id: GpuReading dict} for every candidate ``(id, raw id)`` (suspects first); those past
    ``cap`` were not asked. ``result`` None: the script stopped before sstat ran."""
    out: dict[str, dict] = {}
    asked = candidates[:cap] if cap is not None else candidates
    for jid, _raw in candidates[len(asked) :]:
        out[jid] = _unknown(f"not asked this sweep: {len(candidates)} candidates, at most gpu_probe_max {cap}", ceiling)
    if result is None:
        for jid, _raw in asked:
            out[jid] = _unknown("not asked: the gather script stopped before sstat", ceiling)
        return out
    if result.rc in _TIMED_OUT or result.rc != 0:
        said = (result.stderr.strip().splitlines() or ["(no output)"])[-1][:200]
        why = (
            f"sstat timed out after {timeout_s or '?'} s"
            if result.rc in _TIMED_OUT
            else f"sstat exited {result.rc}: {said}"
        )
        for jid, _raw in asked:
            out[jid] = _unknown(why, ceiling)
        return out
    steps: dict[str, list[StepUsage]] = {}
    for line in result.stdout.splitlines():
        fields = line.split(SEP)
        if len(fields) != len(ACCOUNTING_FIELDS):
            continue  # not a record (an error text): the job it would name stays "not listed"
        steps.setdefault(_job_of(fields[0]), []).append(step_usage(*fields[1:]))
    for jid, raw in asked:
        listed = steps.get(jid, []) + (steps.get(raw, []) if raw != jid else [])
        out[jid] = _reading(listed, ceiling).to_dict()
    return out


def _unknown(why: str, ceiling: float | None) -> dict:
    return GpuReading(ceiling=ceiling, why=why, source="accounting").to_dict()


def _reading(listed: list[StepUsage], ceiling: float | None) -> GpuReading:
    if not listed:
        return GpuReading(ceiling=ceiling, why="sstat listed no running step of this job", source="accounting")
    known = [s for s in listed if s.avg is not None]
    if not known:
        return GpuReading(ceiling=ceiling, why=NOT_RECORDED, source="accounting")
    busiest = max(known, key=lambda s: s.avg or 0.0)
    mean = busiest.avg or 0.0
    return GpuReading(
        mean_util=mean,
        min_util=busiest.low if busiest.low is not None else mean,
        max_util=busiest.top if busiest.top is not None else mean,
        mem_used_mib=max((s.mem_mib for s in known if s.mem_mib is not None), default=None),
        ceiling=ceiling,
        source="accounting",
    )
