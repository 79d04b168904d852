"""The GPU probe's reading (sweep_core.gpu.probe) on the stub's recorded nvidia-smi outputs, the
table cell, and the gpu_idle / gpu_mem_ceiling rules through the fan-in."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from rules.test_rules import run, sweep

from sweep_core.fanin.usage import gpu_cell, usage_notes
from sweep_core.gpu.probe import QUERY, gpu_patterns, parse_probe, parse_sample, readings
from sweep_core.records.remote_result import CommandResult

PROFILES = Path(__file__).resolve().parents[2] / "scripts" / "gpu_stub" / "profiles"


def srun_label(profile: str, tasks: int = 1) -> str:
    """What `srun --label` over ``tasks`` nodes prints when each node's nvidia-smi prints the profile."""
    text = (PROFILES / f"{profile}.out").read_text()
    return "".join(f"{t}: {line}\n" for t in range(tasks) for line in text.splitlines())


def test_busy_8_gpu_node_on_two_nodes() -> None:
    r = parse_probe(CommandResult(0, srun_label("h100x8_busy", 2), ""), 20, 0.9)
    assert r.why == "" and r.n_gpus == 16 and {g.task for g in r.gpus} == {0, 1}
    assert r.min_util == 86 and abs(r.mean_util - 96) < 1e-9
    assert abs(r.mem_frac - 79800 / 81559) < 1e-12
    assert gpu_cell(r.to_dict()) == "GPU 96% (min 86%, 16 GPUs) · mem 98% (ceiling 90%)"


def test_nvidia_smi_error_texts_read_unknown_never_zero() -> None:
    for profile, rc, said in (
        ("no_driver", 9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"),
        ("nvml_mismatch", 18, "Failed to initialize NVML: Driver/library version mismatch"),
        ("no_devices", 6, "No devices were found"),
    ):
        stderr = f"srun: error: n1: task 0: Exited with exit code {rc}\n"
        r = parse_probe(CommandResult(rc, srun_label(profile), stderr))
        assert r.mean_util is None and r.gpus == [] and r.why.startswith(f"probe exited {rc}: {said}")
        assert gpu_cell(r.to_dict()) == "GPU ?"


def test_one_node_failing_spoils_the_reading_and_a_timeout_says_so() -> None:
    mixed = srun_label("h100x8_busy") + "1: " + (PROFILES / "no_driver.out").read_text()
    assert parse_probe(CommandResult(9, mixed, "")).why.startswith("probe exited 9: NVIDIA-SMI has failed")
    assert parse_probe(CommandResult(124, "", ""), 20).why == "probe timed out after 20 s"
    assert parse_probe(CommandResult(0, "", "")).why == "nvidia-smi listed no GPU"
    assert parse_probe(CommandResult(0, "0: 0, [N/A], 1, 81559, 69.86\n", "")).why.startswith("probe exited 0")


def test_candidates_past_the_cap_are_unknown_with_why() -> None:
    got = readings(["7", "8"], {"7": CommandResult(0, srun_label("h100x2_idle"), "")}, 20, None)
    assert got["7"]["mean_util"] == 0 and got["8"]["why"].startswith(
        "not probed this sweep: 2 candidates, at most 1 probes"
    )
    cut = readings(["8"], {}, complete=False)
    assert "stopped before" in cut["8"]["why"]


@given(st.text(max_size=80))
def test_parse_sample_never_raises_and_keeps_util_in_range(line: str) -> None:
    s = parse_sample(line)
    assert s is None or (s.util is not None and 0 <= s.util <= 100)


def test_query_and_patterns() -> None:
    assert QUERY == "index,utilization.gpu,memory.used,memory.total,power.draw"
    from sweep_core.config.sweep import load_sweep_config

    cfg = load_sweep_config(Path(__file__).resolve().parents[2] / "include" / "sweep.yaml")
    pats = gpu_patterns(cfg.buckets)
    assert "^rl__" in pats and "^sft__" in pats and "^eval-" in pats and "^datagen__" not in pats


def _probed(name: str, profile: str, rc: int = 0, **kw):
    job = run(name, "Training Step Progress: 3/100\n", **kw)
    job.gpu = parse_probe(CommandResult(rc, srun_label(profile), ""), 20, 0.9).to_dict()
    return job


def test_rules_idle_hung_and_over_the_ceiling() -> None:
    jobs = [
        _probed("rl__busy", "h100x8_busy", job_id="1"),
        _probed("rl__hung", "h100x4_hung", job_id="2"),
        _probed("sft__idle_stale", "h100x2_idle", job_id="3", age_min=200),
        _probed("eval-nodriver", "no_driver", rc=9, job_id="4", age_min=200),
    ]
    result, flags = sweep(jobs)
    assert flags[("gpu_mem_ceiling", "rl__busy")].severity == "warn"
    assert (
        "98 % on the fullest GPU, above the ceiling 90 % (1 of 8 GPUs over)"
        in flags[("gpu_mem_ceiling", "rl__busy")].message
    )
    assert ("gpu_idle", "rl__busy") not in flags
    hung = flags[("gpu_idle", "rl__hung")]
    assert hung.severity == "warn" and "≤ 0 % on all 4 GPUs" in hung.message and "suspected hang" in hung.message
    stale = flags[("gpu_idle", "sft__idle_stale")]
    assert stale.severity == "critical" and "both say the job is hung" in stale.message
    assert ("gpu_idle", "eval-nodriver") not in flags  # unknown judges nothing
    rl = result.rendered.tables["RL"]
    assert "GPU 96% (min 86%, 8 GPUs)" in rl and "GPU 0% (min 0%, 4 GPUs)" in rl
    assert "GPU ?" in result.rendered.tables["Eval"]
    (note,) = usage_notes(jobs[3])
    assert note.startswith("GPU unknown: probe exited 9: NVIDIA-SMI has failed")
