"""Efficiency of ended jobs (seff parity) from the windowed sacct, steps included: the figures,
the per-bucket line, and "?" with a reason (never 0 %) for what accounting did not record."""

from __future__ import annotations

import json
import math

from hypothesis import example, given
from hypothesis import strategies as st

from sweep_core.fanin.usage import bucket_summary, efficiency_cell, usage_notes
from sweep_core.records.models import Job
from sweep_core.slurm.efficiency import USAGE_FIELDS, duration_s, gpu_count, job_efficiency, size_bytes
from sweep_core.slurm.parse import SACCT_WINDOW_FIELDS, CommandResult, parse_sacct_window

D = "@@M@@"
HEAD = D.join(SACCT_WINDOW_FIELDS)
# JobID JobIDRaw State ExitCode Start End Elapsed Partition NodeList | Timelimit TotalCPU AllocCPUS
# NNodes ReqMem MaxRSS TRESUsageInTot AllocTRES | JobName, in the shapes sacct 22.05 prints with
# jobacct_gather/cgroup: ReqMem the job's total (no n/c suffix), TotalCPU with milliseconds on
# short steps, the allocation line without MaxRSS/TRESUsageInTot.
ROWS = [
    # 2 nodes x 8 GPUs, 64 CPUs, 512G asked; the .0 step (one task per node) peaked at 160G in total
    "101|101|COMPLETED|0:0|2026-12-03T10:00:00|2026-12-03T12:00:00|02:00:00|gpu|n[1-2]|04:00:00|"
    "2-00:00:00|64|2|512G|||billing=64,cpu=64,gres/gpu=16,mem=512G,node=2|sft__a",
    "101.batch|101|COMPLETED|0:0|2026-12-03T10:00:00|2026-12-03T12:00:00|02:00:00||n1||00:00:02.512|"
    "32|1||10436K|cpu=00:00:03,energy=0,fs/disk=1234,mem=10436K,pages=0,vmem=20000K|"
    "cpu=32,mem=256G,node=1|batch",
    "101.extern|101|COMPLETED|0:0|2026-12-03T10:00:00|2026-12-03T12:00:00|02:00:00||n[1-2]||00:00.004|"
    "64|2||80K|cpu=00:00:00,mem=80K|billing=64,cpu=64,gres/gpu=16,mem=512G,node=2|extern",
    "101.0|101|COMPLETED|0:0|2026-12-03T10:00:01|2026-12-03T12:00:00|01:59:59||n[1-2]||1-23:59:57|"
    "64|2||83886080K|cpu=1-23:59:57,mem=167772160K|cpu=64,gres/gpu=16,mem=512G,node=2|python",
    # Slurm < 21.08 shape: ReqMem per CPU (c suffix), no GPU, hit its wall time
    "102|102|TIMEOUT|0:0|2026-12-03T11:00:00|2026-12-03T12:00:00|01:00:00|cpu|n3|01:00:00|"
    "00:30:00|4|1|1000Mc|||billing=4,cpu=4,mem=4000M,node=1|sft__b",
    "102.batch|102|CANCELLED|0:15|2026-12-03T11:00:00|2026-12-03T12:00:00|01:00:00||n3||00:30:00|4|1||2048000K|||batch",
    # accounting gather off (the bundled cluster): TotalCPU 0, no MaxRSS anywhere
    "103|103|COMPLETED|0:0|2026-12-03T11:50:00|2026-12-03T11:51:00|00:01:00|debug|localhost|00:05:00|"
    "00:00:00|2|1|200M|||billing=2,cpu=2,node=1|sft__c",
    "103.batch|103|COMPLETED|0:0|2026-12-03T11:50:00|2026-12-03T11:51:00|00:01:00||localhost||00:00:00|"
    "2|1||||cpu=2,mem=0,node=1|batch",
    # cancelled while pending: it never ran
    "104|104|CANCELLED by 1001|0:0|None|2026-12-03T11:59:00|00:00:00|gpu|None assigned|UNLIMITED|"
    "00:00:00|0|1|64G||||sft__d",
    "second line of its name",  # a newline in the name: the record goes on
]


def _rows() -> dict[str, object]:
    text = "\n".join([HEAD, *(r.replace("|", D) for r in ROWS)]) + "\n"
    return {r.job_id: r for r in parse_sacct_window(CommandResult(0, text, ""))}


def test_seff_figures_of_a_multi_node_gpu_job() -> None:
    rows = _rows()
    assert set(rows) == {"101", "102", "103", "104"}  # steps fold into their job
    e = rows["101"].efficiency
    assert e is not None
    # CPU: the steps' TotalCPU summed (2 s + 4 ms + 47:59:57) over 2 h x 64 CPUs
    assert abs(e.cpu_pct - 100 * (2.512 + 0.004 + 172797) / (7200 * 64)) < 1e-6
    assert abs(e.mem_pct - 100 * 160 / 512) < 1e-9  # the .0 step's tasks summed, as seff reads it
    assert e.time_pct == 50
    assert e.gpu_hours == 32
    assert efficiency_cell(e.to_dict()) == "CPU 37% · mem 31% · time 50% · 32 GPU-h"


def test_old_per_cpu_reqmem_and_no_gpu() -> None:
    e = _rows()["102"].efficiency
    assert e is not None
    assert e.mem_req == 4 * 1000 * 1024**2  # 1000Mc x 4 CPUs
    assert abs(e.mem_pct - 100 * 2048000 * 1024 / e.mem_req) < 1e-9  # MaxRSS where no TRESUsageInTot
    assert e.time_pct == 100 and e.cpu_pct == 12.5
    assert efficiency_cell(e.to_dict()).endswith("— GPU-h")  # no GPU allocated: nothing, not unknown


def test_unrecorded_usage_reads_unknown_with_the_reason_never_zero() -> None:
    rows = _rows()
    job = Job("c", "103", "sft__c", "COMPLETED", "sacct", efficiency=rows["103"].efficiency.to_dict())
    assert efficiency_cell(job.efficiency) == "CPU ? · mem ? · time 20% · — GPU-h"
    (note,) = usage_notes(job)
    assert "accounting gather off" in note and "MaxRSS" in note
    never = rows["104"].efficiency
    assert never is not None and never.cpu_pct is None and "did not run" in never.why["cpu"]
    assert rows["104"].name == "sft__d\nsecond line of its name"


def test_bucket_line_sums_what_is_known() -> None:
    rows = _rows()
    jobs = [Job("c", i, "sft", "COMPLETED", "sacct", efficiency=rows[i].efficiency.to_dict()) for i in rows]
    line = bucket_summary("SFT", jobs)
    mem = 100 * (160 * 1024**3 + 2048000 * 1024) / (512 * 1024**3 + 4000 * 1024**2)
    assert line.startswith(f"SFT jobs that ended this window used {mem:.0f} % of the memory they asked for (2 of 4")
    assert "32 GPU-hours (1 GPU jobs)" in line
    assert bucket_summary("SFT", [Job("c", "1", "x", "RUNNING", "squeue")]) == ""


def test_short_format_from_an_older_script_reads_without_efficiency() -> None:
    text = "JobID|JobIDRaw|State|ExitCode|Start|End|Elapsed|Partition|NodeList|JobName\n"
    text += "5|5|COMPLETED|0:0|a|b|00:00:01|debug|localhost|sft__x\n"
    (row,) = parse_sacct_window(CommandResult(0, text, ""))
    assert row.name == "sft__x" and row.efficiency is None


@given(st.integers(0, 99), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59), st.integers(0, 999))
def test_duration_round_trip(d: int, h: int, m: int, s: int, ms: int) -> None:
    text = (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"
    assert duration_s(text) == d * 86400 + h * 3600 + m * 60 + s
    assert abs(duration_s(f"{m:02d}:{s:02d}.{ms:03d}") - (m * 60 + s + ms / 1000)) < 1e-9


@given(st.text(max_size=12))
@example("9" * 400 + "-00:00:00")  # int + float of 400 digits overflowed; of 5,000 int() raised
@example("00:" + "9" * 5000)
@example("9" * 400 + "K")  # float() of it is inf
@example("gres/gpu=²")  # a digit to str.isdigit, not to int()
def test_size_and_duration_never_raise(text: str) -> None:
    size = size_bytes(text)
    assert size is None or (0 <= size[0] < math.inf and size[1] in ("", "n", "c"))  # a size, never inf
    secs = duration_s(text)
    assert secs is None or 0 <= secs < math.inf
    gpus = gpu_count(text)
    assert gpus is None or (isinstance(gpus, int) and gpus >= 0)
    for got in (size and size[0], secs, gpus):
        assert got is None or any(c.isdigit() for c in text)  # read from the text, never a default


FIELD = st.one_of(
    st.sampled_from(["", "0", "2", "01:00:00", "1-00:00:00", "00:00.004", "512G", "4000Mn", "2000Mc", "80K"]),
    st.sampled_from(["gres/gpu=8", "cpu=2,gres/gpu:h100=4", "mem=10436K", "UNLIMITED", "9" * 400, "²", "-1"]),
    st.text(max_size=12),
)


@given(
    st.dictionaries(st.sampled_from(USAGE_FIELDS + ("Elapsed",)), FIELD),
    st.lists(st.dictionaries(st.sampled_from(USAGE_FIELDS), FIELD), max_size=3),
)
def test_efficiency_figures_are_finite_percentages_or_unknown_with_a_reason(job: dict, steps: list[dict]) -> None:
    e = job_efficiency(job, steps)
    for key, value in (("cpu", e.cpu_pct), ("mem", e.mem_pct), ("time", e.time_pct), ("gpu", e.gpu_hours)):
        if value is None:
            assert e.why.get(key), (key, e.why)  # "?" with the reason, never 0 %
        else:
            assert 0 <= value < math.inf, (key, value)  # a real figure (a job may run over its request)
    json.dumps(e.to_dict(), allow_nan=False)


def test_gpu_count_typed_gres() -> None:
    assert gpu_count("cpu=8,gres/gpu:h100=4,gres/gpu:a100=2,node=1") == 6
    assert gpu_count("cpu=8,gres/gpu=8,gres/gpu:h100=8") == 8
    assert gpu_count("cpu=8,mem=1G") is None
