"""The gather script's HF-only facts run by real bash against tmp logs and launch YAMLs: for each
SFT job COMPLETED in the window, the launch YAML its log banner names and that YAML's
enable_db_registration, read in the gather's own session (no extra SSH session per job); the
cleanup rule then routes by them. squeue/sacct are the stand-ins of tests/fixtures/slurm_stub."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from lab import USER
from stub_gather import run_stubbed

from sweep_core.config.sweep import load_sweep_config
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.vocab import Action, Bucket
from sweep_core.slurm.gather import GatherRequest, bucket_patterns
from sweep_core.slurm.snapshot import snapshot_from_output

ROOT = Path(__file__).resolve().parents[2]
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")


def _row(job_id: str, name: str, state: str = "COMPLETED") -> dict[str, str]:
    return {"JobID": job_id, "JobIDRaw": job_id, "State": state, "ExitCode": "0:0", "JobName": name}


@pytest.mark.parametrize("python", ["python3", ""], ids=["python", "shell"])
def test_sft_completions_are_routed_by_the_launch_yaml_their_log_names(tmp_path: Path, python: str) -> None:
    logs, conf = tmp_path / "logs", tmp_path / "conf"
    logs.mkdir()
    conf.mkdir()
    (conf / "hf.yaml").write_text("sft:\n  registry:\n    enable_db_registration: false\n")
    (conf / "db.yml").write_text("enable_db_registration: true\n")
    (conf / "nokey.yaml").write_text("model: q8b\n")
    banners = {
        "51": f"Loading config from {conf}/hf.yaml\nstep 1\n",
        "52": f"[launch] --config={conf}/db.yml\n",
        "53": "step 1/10\nno config named here\n",
        "54": f"config: {conf}/gone.yaml\n",
        "56": f"config: {conf}/nokey.yaml\n",
        "57": f"Loading config from {conf}/hf.yaml\n",  # FAILED: not looked at
        "58": f"Loading config from {conf}/hf.yaml\n",  # RL: not looked at
    }
    names = {"51": "sft__hf", "52": "sft__db", "53": "sft__plain", "54": "sft__gone", "55": "sft__nolog",
             "56": "sft__nokey", "57": "sft__failed", "58": "rl__x"}  # fmt: skip
    for jid, text in banners.items():
        (logs / f"{names[jid]}-{jid}.out").write_text(text)
    finished = [_row(j, n, "FAILED" if j == "57" else "COMPLETED") for j, n in names.items()]
    now = int(time.time())
    req = GatherRequest(
        user=USER,
        window_start=now - 3600,
        window_end=now - 60,
        settle_s=0,
        python=python,
        log_pattern=f"{logs}/%x-%j.out",
        sft_patterns=bucket_patterns(CONFIG.buckets, Bucket.SFT),
    )
    output = run_stubbed(tmp_path, req, finished=finished, timeout=30)
    looked = sorted(k.split(":")[1] for k in output.records if k.startswith("lbanner:"))
    assert looked == ["51", "52", "53", "54", "55", "56"]
    snap = snapshot_from_output("c", output, "login01", "s", "e")
    jobs = {j.job_id: j.metrics for j in snap.finished or []}
    assert jobs["51"] == {"launch_yaml": f"{conf}/hf.yaml", "db_registration": False}
    assert jobs["52"] == {"launch_yaml": f"{conf}/db.yml", "db_registration": True}
    assert jobs["53"] == {"launch_yaml": ""}
    assert "not readable" in str(jobs["54"]["launch_unknown"])
    assert "no log path" in str(jobs["55"]["launch_unknown"])
    assert "no enable_db_registration" in str(jobs["56"]["launch_unknown"])

    flags = {f.job_id: f for f in run_fan_in([snap], CONFIG).flags if f.rule == "completion_cleanup"}
    assert flags["51"].action == Action.HF_CHAIN and "HF-only" in flags["51"].message  # chained, listed or not
    assert flags["52"].action == flags["53"].action == "cleanup:sft-job-cleanup"
    for jid in ("54", "55", "56"):
        assert flags[jid].action == Action.CLEANUP_UNDECIDED and "held back" in flags[jid].message


def test_no_sft_patterns_means_no_launch_reads(tmp_path: Path) -> None:
    (tmp_path / "sft__hf-51.out").write_text(f"config: {tmp_path}/x.yaml\n")
    now = int(time.time())
    req = GatherRequest(user=USER, window_start=now - 3600, window_end=now - 60, settle_s=0,
                        log_pattern=f"{tmp_path}/%x-%j.out")  # fmt: skip
    output = run_stubbed(tmp_path, req, finished=[_row("51", "sft__hf")], timeout=30)
    assert "fpath:51" in output.records
    assert not [k for k in output.records if k.startswith(("lbanner:", "lpath:", "lyaml:"))]
