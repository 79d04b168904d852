"""Read one GPU probe: ``srun --jobid=<id> --overlap --nodes=N --ntasks-per-node=1 --label
nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits`` (one line per GPU, prefixed
``<task>: `` by --label: one task per node of the job). A probe that failed, timed out or printed
anything but GPU lines is UNKNOWN with the reason, never 0 %.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sweep_core.records.remote_result import CommandResult
from sweep_core.records.vocab import Bucket

QUERY_FIELDS: tuple[str, ...] = ("index", "utilization.gpu", "memory.used", "memory.total", "power.draw")
QUERY = ",".join(QUERY_FIELDS)
# Exit codes of `timeout` (the probe's bound hit: TERM, then KILL after the grace).
_TIMED_OUT = (124, 137)
_LINE = re.compile(r"(?:(\d+): )?(.*)")


@dataclass(frozen=True)
class GpuSample:
    """One GPU of one node: ``None`` where nvidia-smi printed ``[N/A]``/``[Not Supported]``."""

    task: int  # the srun task = the node's place in the job's node list
    index: int
    util: float | None  # percent
    mem_used: float | None  # MiB
    mem_total: float | None
    power: float | None  # W


@dataclass
class GpuReading:
    """The probe of one job: mean/min utilisation over all its GPUs, the highest memory fraction."""

    gpus: list[GpuSample] = field(default_factory=list)
    mean_util: float | None = None
    min_util: float | None = None
    n_gpus: int = 0
    mem_frac: float | None = None  # max over GPUs of memory.used / memory.total
    ceiling: float | None = None  # ops.md gpu_mem_ceiling, carried for the table and the rule
    why: str = ""  # why the reading is unknown ("" when it is known)
    max_util: float | None = None  # the busiest GPU (nvidia-smi) / the step's maximum (accounting)
    mem_used_mib: float | None = None  # accounting: gres/gpumem (no total known: no fraction)
    source: str = "nvidia-smi"  # or "accounting" (sstat's gres/gpuutil, sweep_core.gpu.accounting)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _num(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0][:200] if lines else ""


def parse_sample(line: str) -> GpuSample | None:
    """``0: 3, 87, 71320, 81559, 612.50`` -> a sample; None for any other line (an error text)."""
    m = _LINE.fullmatch(line.strip())
    parts = [p.strip() for p in (m.group(2) if m else "").split(",")]
    if not m or len(parts) != len(QUERY_FIELDS) or not parts[0].isdigit():
        return None
    util, used, total, power = (_num(p) for p in parts[1:])
    if util is None or not 0 <= util <= 100:
        return None
    return GpuSample(int(m.group(1) or 0), int(parts[0]), util, used, total, power)


def parse_probe(result: CommandResult, timeout_s: int | None = None, ceiling: float | None = None) -> GpuReading:
    """The reading of one probe record. Unknown (``why`` set, no figures) when the probe timed
    out, exited non-zero, printed a line that is not a GPU (nvidia-smi's own error texts), or no GPU."""
    reading = GpuReading(ceiling=ceiling)
    samples, odd = [], []
    for line in result.stdout.splitlines():
        if not line.strip():
            continue
        s = parse_sample(line)
        if s is None:
            odd.append(_LINE.fullmatch(line.strip()).group(2))  # type: ignore[union-attr]
        else:
            samples.append(s)
    if result.rc in _TIMED_OUT:
        reading.why = f"probe timed out after {timeout_s or '?'} s"
    elif result.rc != 0 or odd:
        said = _first_line("\n".join(odd)) or _first_line(result.stderr) or "(no output)"
        reading.why = f"probe exited {result.rc}: {said}"
    elif not samples:
        reading.why = "nvidia-smi listed no GPU"
    if reading.why:
        return reading
    reading.gpus = samples
    utils = [s.util for s in samples if s.util is not None]
    reading.n_gpus = len(samples)
    reading.mean_util, reading.min_util, reading.max_util = sum(utils) / len(utils), min(utils), max(utils)
    fracs = [s.mem_used / s.mem_total for s in samples if s.mem_used is not None and s.mem_total]
    reading.mem_frac = max(fracs) if fracs else None
    return reading


def not_probed(why: str, ceiling: float | None = None) -> dict[str, Any]:
    """The reading of a job the probe did not reach (cap hit, script cut short): unknown, why."""
    return GpuReading(ceiling=ceiling, why=why).to_dict()


def readings(
    candidates: list[str],
    probes: dict[str, CommandResult],
    timeout_s: int | None = None,
    ceiling: float | None = None,
    complete: bool = True,
    cap: int | None = None,
) -> dict[str, dict[str, Any]]:
    """{job id: GpuReading dict} for every candidate (in the gather's order, suspects first): its
    probe read, or unknown when it was not probed (the cap, or the script stopped first)."""
    out = {}
    for jid in candidates:
        if jid in probes:
            out[jid] = parse_probe(probes[jid], timeout_s, ceiling).to_dict()
        elif complete:
            limit = f"gpu_probe_max {cap}" if cap is not None else f"{len(probes)} probes"
            out[jid] = not_probed(f"not probed this sweep: {len(candidates)} candidates, at most {limit}", ceiling)
        else:
            out[jid] = not_probed("not probed: the gather script stopped before this probe", ceiling)
    return out


GPU_BUCKETS = (Bucket.RL, Bucket.SFT, Bucket.EVAL)  # the buckets whose RUNNING jobs are probed (issue 15 §1)


def gpu_patterns(rules: Any) -> tuple[str, ...]:
    """The name patterns of the GPU buckets (sweep.yaml ``buckets:``), for the gather's selection:
    run by bash ``[[ =~ ]]`` (ERE), which reads the anchors, groups and alternations they use."""
    return tuple(p.pattern for r in rules if str(r.name) in GPU_BUCKETS for p in r.patterns)


def probe_for_run(kind: str, *, watch: bool) -> str:
    """The GPU source one run of the gather uses (ops.md ``gpu_probe``). The runbook wants live GPU
    polls (``srun --overlap`` job steps; it warns of login-node fork saturation) in the RL deep-dive
    and the report sweep, each at most ``gpu_probe_max`` per run, never on the 5-minute watch: a
    watch run probes nothing there (``accounting``, ONE sstat, is kept)."""
    return "none" if watch and kind == "srun-overlap" else kind


POD_EXEC_COMMAND = ("nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits")


def running_pods(pod_list: dict[str, Any]) -> list[str]:
    """The names of the Running pods of a v1 PodList (dict form); [] for any other shape."""
    items = pod_list.get("items") if isinstance(pod_list, dict) else None
    out = []
    for p in items if isinstance(items, list) else []:
        if isinstance(p, dict) and (p.get("status") or {}).get("phase") == "Running":
            name = (p.get("metadata") or {}).get("name")
            if isinstance(name, str) and name:
                out.append(name)
    return out


_HANDSHAKE = re.compile(r"Handshake status (\d{3})")
_STATUS_MESSAGE = re.compile(r'"message":\s*"((?:[^"\\]|\\.)*)"')
EXEC_RBAC = "create on pods/exec (and get, list on pods)"


def exec_refusal(texts: Sequence[str], namespace: str) -> str:
    """Why a pod exec did not run, from the texts of its exception chain (the kubernetes client
    hides a refused websocket handshake behind an error of its own): the HTTP status and the API
    server's message; a 403 names the RBAC the sweep's identity needs. ``exec failed: <first text>``
    when no status is found."""
    status = next((int(m.group(1)) for t in texts if (m := _HANDSHAKE.search(t))), None)
    msg = next((m.group(1).replace('\\"', '"') for t in texts if (m := _STATUS_MESSAGE.search(t))), "")
    if status == 403:
        why = f"exec forbidden (HTTP 403): {msg[:200] or 'Forbidden'}"
        return f"{why}; the sweep's Kubernetes identity needs RBAC {EXEC_RBAC} in namespace {namespace!r}"
    if status is not None:
        return f"exec refused (HTTP {status}){': ' + msg[:200] if msg else ''}"
    return f"exec failed: {(texts[0] if texts else 'no reason given')[:200]}"


def pod_readings(
    per_pod: dict[str, CommandResult | str], n_pods: int
) -> tuple[list[tuple[str, GpuSample]] | None, dict[str, str], str]:
    """(every GPU of the pods whose exec read, by pod; each unread pod's reason; the note) from
    each Running pod's ``nvidia-smi`` exec (a CommandResult) or the reason it could not run (a
    str). None when no pod read: GPU utilisation unknown, with the first reason; never 0 %."""
    by_pod: dict[str, list[GpuSample]] = {}
    why: dict[str, str] = {}
    for pod, got in per_pod.items():
        if isinstance(got, str):
            why[pod] = got
            continue
        reading = parse_probe(got)
        if reading.why:
            why[pod] = reading.why
        else:
            by_pod[pod] = reading.gpus
    if not per_pod:
        return None, why, f"no Running pod of the job ({n_pods} pod(s) listed)"
    if not by_pod:
        first = next(iter(why.items()))
        return None, why, f"nvidia-smi exec in pod {first[0]}: {first[1]}"
    samples = [(pod, s) for pod, gpus in by_pod.items() for s in gpus]
    note = f"nvidia-smi exec in {len(by_pod)}/{len(per_pod)} Running pod(s), {len(samples)} GPU(s)"
    if why:
        note += f"; unread: {', '.join(f'{p} ({w[:80]})' for p, w in why.items())}"
    return samples, why, note
