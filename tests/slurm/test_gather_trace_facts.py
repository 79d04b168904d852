"""The gather script's RL flavor facts run by real bash against a tmp artifact tree: for each RL job
COMPLETED in the window, is <root>/<name> a dir, and does it hold trace_jobs/ (two stats each, no
listing). squeue/sacct are the stand-ins of tests/fixtures/slurm_stub (real 22.05 formats); the
files are real. The same on the real cluster: tests/slurm/test_gather_hostile_local.py's harness."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from stub_gather import run_stubbed

from sweep_core.config.sweep import load_sweep_config
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.vocab import Bucket
from sweep_core.slurm.gather import GatherRequest, bucket_patterns
from sweep_core.slurm.snapshot import snapshot_from_output

ROOT = Path(__file__).resolve().parents[2]
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")


def _row(job_id: str, name: str, state: str = "COMPLETED") -> dict[str, str]:
    return {"JobID": job_id, "JobIDRaw": job_id, "State": state, "ExitCode": "0:0", "JobName": name}


def _gather(tmp: Path, finished: list[dict[str, str]], roots: tuple[str, ...], python: str):
    now = int(time.time())
    req = GatherRequest(
        user="sweep",
        window_start=now - 3600,
        window_end=now - 60,
        settle_s=0,
        python=python,
        artifact_roots=roots,
        trace_patterns=bucket_patterns(CONFIG.buckets, Bucket.RL),
    )
    output = run_stubbed(tmp, req, finished=finished, timeout=30)
    return output, snapshot_from_output("c", output, "login01", "s", "e", artifact_roots=roots)


@pytest.mark.parametrize("python", ["python3", ""], ids=["python", "shell"])
def test_completed_rl_jobs_get_their_artifact_dir_and_trace_jobs_fact(tmp_path, python) -> None:
    a, b = tmp_path / "art_a", tmp_path / "art_b"
    (a / "rl__swe_q8b" / "trace_jobs").mkdir(parents=True)  # agentic by fact, not by name
    (b / "rl__harbor_math").mkdir(parents=True)  # "harbor" in the name, no trace_jobs/
    (b / "rl__harbor_math" / "checkpoints").mkdir()
    (a / "rl__file_not_dir").mkdir()
    (a / "rl__file_not_dir" / "trace_jobs").write_text("a file, not a dir")
    (a / "sft__x" / "trace_jobs").mkdir(parents=True)  # not RL: not looked at
    (a / "rl__failed" / "trace_jobs").mkdir(parents=True)  # not COMPLETED: not looked at
    finished = [
        _row("31", "rl__swe_q8b"),
        _row("32", "rl__harbor_math"),
        _row("33", "rl__file_not_dir"),
        _row("34", "rl__nodir"),
        _row("35", "sft__x"),
        _row("36", "rl__failed", "FAILED"),
    ]
    output, snap = _gather(tmp_path, finished, (str(a), str(b) + "/"), python)
    assert sorted(k for k in output.records if k.startswith("traces:")) == [
        "traces:31:0",
        "traces:32:1",
        "traces:33:0",
    ]
    jobs = {j.name: j for j in snap.finished or []}
    assert jobs["rl__swe_q8b"].metrics == {"artifact_dir": f"{a}/rl__swe_q8b", "trace_jobs": True}
    assert jobs["rl__harbor_math"].metrics == {"artifact_dir": f"{b}/rl__harbor_math", "trace_jobs": False}
    assert jobs["rl__file_not_dir"].metrics["trace_jobs"] is False
    assert "trace_jobs" not in jobs["rl__nodir"].metrics and "trace_jobs" not in jobs["sft__x"].metrics

    flags = {f.job_name: f for f in run_fan_in([snap], CONFIG).flags if f.rule == "completion_cleanup"}
    assert flags["rl__swe_q8b"].action == "cleanup:rl-agentic-job-cleanup"
    assert flags["rl__harbor_math"].action == "cleanup:rl-standard-job-cleanup"
    assert "by name" in flags["rl__nodir"].message


def test_no_artifact_roots_means_no_probe_and_the_name_decides(tmp_path) -> None:
    (tmp_path / "art" / "rl__swe_q8b" / "trace_jobs").mkdir(parents=True)
    output, snap = _gather(tmp_path, [_row("31", "rl__swe_q8b")], (), "python3")
    assert not [k for k in output.records if k.startswith("traces:")]
    flags = [f for f in run_fan_in([snap], CONFIG).flags if f.rule == "completion_cleanup"]
    assert flags[0].action == "cleanup:rl-standard-job-cleanup" and "by name" in flags[0].message


def test_a_name_that_could_climb_out_of_a_root_is_not_probed(tmp_path) -> None:
    art = tmp_path / "art"
    art.mkdir()
    (tmp_path / "trace_jobs").mkdir()  # <art>/.. holds trace_jobs/: never looked at
    output, _ = _gather(tmp_path, [_row("41", "rl__../.."), _row("42", "..")], (str(art),), "")
    assert not [k for k in output.records if k.startswith("traces:")]
