"""GPU-hours and memory % on a cluster that allocates whole nodes, GPUs not a gres and RealMemory
misreported (the runbook's TACC; ops.md ``whole_nodes``): from what a node of the partition has,
never AllocTRES/ReqMem; a partition or memory not named is ``?`` with the reason (issue 41)."""

from __future__ import annotations

from pathlib import Path

from sweep_core.config.ops import load_cluster
from sweep_core.fanin.usage import efficiency_cell, usage_notes
from sweep_core.records.models import Job
from sweep_core.slurm.efficiency import on_whole_nodes
from sweep_core.slurm.parse import SACCT_WINDOW_FIELDS, CommandResult, parse_sacct_window

ROOT = Path(__file__).resolve().parents[2]
D = "@@M@@"
# In the shapes of test_efficiency.py (sacct -P, steps included). A whole-node GH job: no gres/gpu
# in AllocTRES, ReqMem is the node's RealMemory as slurm.conf gives it (the misreported figure).
ROWS = [
    "201|201|COMPLETED|0:0|2026-12-03T10:00:00|2026-12-03T13:00:00|03:00:00|gh|c[601-602]|04:00:00|"
    "1-00:00:00|144|2|460000M|||billing=144,cpu=144,mem=460000M,node=2|sft__gh",
    "201.0|201|COMPLETED|0:0|2026-12-03T10:00:01|2026-12-03T13:00:00|02:59:59||c[601-602]||1-00:00:00|"
    "144|2||50331648K|cpu=1-00:00:00,mem=100663296K|cpu=144,mem=460000M,node=2|python",
    "202|202|COMPLETED|0:0|2026-12-03T12:00:00|2026-12-03T12:30:00|00:30:00|gg|c100|01:00:00|"
    "00:10:00|144|1|230000M|||billing=144,cpu=144,mem=230000M,node=1|pretokenize_x",
    "203|203|COMPLETED|0:0|2026-12-03T12:00:00|2026-12-03T12:30:00|00:30:00|h100|c900|01:00:00|"
    "00:10:00|72|1|230000M|||billing=72,cpu=72,mem=230000M,node=1|sft__other",
]


def _eff() -> dict[str, dict]:
    tacc = load_cluster(ROOT / "include" / "ops", "tacc")  # the shipped figures
    nodes = {p: (n.gpus, n.memory) for p, n in tacc.whole_nodes.items()}
    text = "\n".join([D.join(SACCT_WINDOW_FIELDS), *(r.replace("|", D) for r in ROWS)]) + "\n"
    rows = parse_sacct_window(CommandResult(0, text, ""))
    return {r.job_id: on_whole_nodes(r.efficiency.to_dict(), r.partition, nodes) for r in rows if r.efficiency}


def _job(eff: dict) -> Job:
    return Job("tacc", "1", "x", "COMPLETED", "sacct", efficiency=eff)


def test_a_gh_job_counts_its_nodes_gpus_and_its_nodes_memory() -> None:
    e = _eff()["201"]
    assert e["gpu_hours"] == 1 * 2 * 3.0  # 1 GPU a GH node x 2 nodes x 3 h; accounting says no GPU at all
    assert e["mem_req"] == 2 * 120 * 1024**3  # not ReqMem's 460000M (RealMemory, misreported)
    assert round(e["mem_pct"]) == round(100 * 100663296 * 1024 / (2 * 120 * 1024**3))  # the step's 96 GiB peak
    assert efficiency_cell(e).endswith("· 6 GPU-h") and "mem 40%" in efficiency_cell(e)
    assert usage_notes(_job(e)) == []


def test_a_gg_job_has_no_gpu_and_its_memory_is_unknown_with_the_reason() -> None:
    e = _eff()["202"]
    assert e["gpu_hours"] is None and efficiency_cell(e).endswith("· — GPU-h")  # no GPU: nothing to count
    assert e["mem_pct"] is None and "mem ?" in efficiency_cell(e)
    (note,) = usage_notes(_job(e))
    assert "no memory of a gg node in ops.md whole_nodes" in note and "RealMemory is misreported" in note


def test_a_partition_not_named_is_unknown_never_zero_or_no_gpu() -> None:
    e = _eff()["203"]
    assert e["gpu_hours"] is None and e["mem_pct"] is None
    assert efficiency_cell(e).endswith("· ? GPU-h")
    assert "partition h100 not in ops.md whole_nodes" in usage_notes(_job(e))[0]


def test_without_whole_nodes_accounting_is_trusted_as_before() -> None:
    eff = {"gpu_hours": 2.0, "mem_pct": 50.0, "mem_req": 10.0, "why": {}}
    assert on_whole_nodes(eff, "gpu", {}) is eff
