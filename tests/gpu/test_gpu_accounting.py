"""ops.md ``gpu_probe: accounting``: ONE sstat for the candidates, read by sweep_core.gpu.accounting.
The sstat lines are in Slurm's -P format with the TRES names a site with gpu/nvml records
(gres/gpuutil percent, gres/gpumem bytes with a suffix); the bundled cluster records none."""

from __future__ import annotations

from rules.test_rules import NOW, ROOT, run, sweep

from sweep_core.config.sweep import parse_sweep_config
from sweep_core.fanin.usage import gpu_cell
from sweep_core.gpu.accounting import NOT_RECORDED, accounting_readings, tres_value
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus
from sweep_core.records.remote_result import CommandResult

D = "|"  # sstat -P
TRES = "cpu=00:41:05,energy=0,fs/disk=2271,gres/gpumem={mem},gres/gpuutil={util},mem=40G,pages=0,vmem=61G"


def line(step: str, ave: int, low: int, top: int, mem: str = "61440M") -> str:
    return D.join(
        [
            step,
            TRES.format(mem=mem, util=ave),
            TRES.format(mem="1024M", util=low),
            TRES.format(mem=mem, util=top),
        ]
    )


def test_the_busiest_step_is_read_and_a_job_without_gpu_tres_is_unknown_never_zero() -> None:
    out = "\n".join(
        [
            line("101.batch", 0, 0, 0, "0"),  # the batch step holds no GPU work
            line("101.0", 73, 60, 91),
            D.join(["102.batch", "cpu=00:00:01,mem=4K", "cpu=00:00:01,mem=4K", "cpu=00:00:01,mem=4K"]),
            line("103_4.0", 2, 0, 3),  # an array task: listed by its own id
            "sstat: error: couldn't get steps for job 104",
        ]
    )
    cands = [("101", "101"), ("102", "102"), ("103_4", "107"), ("104", "104"), ("105", "105")]
    found = accounting_readings(cands, CommandResult(0, out, ""), 20, 0.9, cap=4)
    busy = found["101"]
    assert busy["mean_util"] == 73 and busy["min_util"] == 60 and busy["max_util"] == 91 and busy["why"] == ""
    assert busy["mem_used_mib"] == 61440 and busy["source"] == "accounting"
    assert gpu_cell(busy) == "GPU 73% (min 60%, accounting) · mem 60 GiB"
    assert found["102"]["mean_util"] is None and found["102"]["why"] == NOT_RECORDED
    assert found["103_4"]["max_util"] == 3
    assert found["104"]["why"] == "sstat listed no running step of this job"
    assert found["105"]["why"].startswith("not asked this sweep: 5 candidates, at most gpu_probe_max 4")
    assert gpu_cell(found["102"]) == "GPU ?"


def test_a_failed_or_timed_out_sstat_leaves_every_candidate_unknown() -> None:
    cands = [("1", "1"), ("2", "2")]
    timed_out = accounting_readings(cands, CommandResult(124, "", ""), 20)
    assert {r["why"] for r in timed_out.values()} == {"sstat timed out after 20 s"}
    failed = accounting_readings(cands, CommandResult(1, "", "sstat: error: Invalid job id"), 20)
    assert failed["1"]["why"] == "sstat exited 1: sstat: error: Invalid job id"
    cut = accounting_readings(cands, None, 20)
    assert cut["2"]["why"] == "not asked: the gather script stopped before sstat"


def test_tres_value_reads_only_the_named_entry() -> None:
    assert tres_value("gres/gpu=8,gres/gpuutil=0,gres/gpumem=80G", "gres/gpuutil") == "0"
    assert tres_value("gres/gpu=8", "gres/gpuutil") is None


def test_gpu_idle_reads_accounting_and_its_threshold_from_sweep_yaml() -> None:
    idle = run("rl__acct_idle", "Training Step Progress: 3/100\n", job_id="1")
    busy = run("rl__acct_busy", "Training Step Progress: 3/100\n", job_id="2")
    out = "\n".join([line("1.0", 4, 1, 4), line("2.0", 55, 40, 70)])
    found = accounting_readings([("1", "1"), ("2", "2")], CommandResult(0, out, ""))
    idle.gpu, busy.gpu = found["1"], found["2"]
    _result, flags = sweep([idle, busy])
    assert "in accounting (sstat gres/gpuutil" in flags[("gpu_idle", "rl__acct_idle")].message
    assert ("gpu_idle", "rl__acct_busy") not in flags
    text = (ROOT / "include" / "sweep.yaml").read_text().replace("gpu_idle_util_pct: 5 ", "gpu_idle_util_pct: 1 ")
    assert "gpu_idle_util_pct: 1 " in text
    snap = ClusterSnapshot(
        "leo", "slurm", ClusterStatus.OK, remote_now=NOW, running=[idle, busy], finished=[], pending=[]
    )
    result = run_fan_in([snap], parse_sweep_config(text))
    assert not [f for f in result.flags if f.rule == "gpu_idle"]  # 4 % is above a 1 % threshold
