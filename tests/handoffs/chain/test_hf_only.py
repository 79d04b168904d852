"""HF-only from facts (sweep_core.handoffs.chain.hf_only): listed in sweep.yaml, or the launch YAML
the job names says enable_db_registration: false; anything not read is "unknown: <why>". The
script runs under a real bash here with a stand-in scontrol (never the machine's cluster)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sweep_core.handoffs.chain.hf_only import db_registration, judge
from sweep_core.handoffs.chain.remote import build_launch_script, read_launch
from sweep_core.slurm.gather import new_marker, parse_gather_output


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("model: x\nenable_db_registration: false\n", False),
        ("train:\n  registry:\n    enable_db_registration: true\n", True),
        ("enable_db_registration: 'false'\n: [unclosed", False),  # truncated read: line fallback
        ("model: x\n", None),
        ("enable_db_registration: maybe\n", None),
    ],
)
def test_db_registration_read_from_the_yaml(text: str, want: bool | None) -> None:
    assert db_registration(text) is want


def test_the_verdict_says_why_and_unknown_is_never_a_guess() -> None:
    assert judge(["delphi"], "", None, "").hf_only is True
    assert judge([], "/c.yaml", "enable_db_registration: false\n", "").hf_only is True
    assert judge([], "/c.yaml", "enable_db_registration: true\n", "").hf_only is False
    for got in (judge([], "", None, ""), judge([], "/c.yaml", None, ""), judge([], "", None, "ssh: timeout")):
        assert got.hf_only is None and got.why.startswith("unknown: ")
    assert "ssh: timeout" in judge([], "", None, "ssh: timeout").why


def _run(script: str, marker: str, bin_dir: Path):
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    res = subprocess.run(["bash", "-s"], input=script, capture_output=True, text=True, env=env, timeout=30)
    return parse_gather_output(res.stdout, marker)


def test_the_script_follows_the_banner_and_the_command_to_the_yaml(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cfg_b = tmp_path / "b.yml"
    cfg_b.write_text("enable_db_registration: true\n")
    # job 11 names its YAML in the Command, job 12 only in its log banner, job 13 nowhere
    (bin_dir / "scontrol").write_text(
        f'#!/bin/bash\ncase "$4" in 11) echo "JobId=11 Command=/x/train.sh --config {cfg_b} x";; '
        '*) echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1;; esac\n'
    )
    (bin_dir / "scontrol").chmod(0o755)
    log12, log13 = tmp_path / "12.out", tmp_path / "13.out"
    log12.write_text(f"Loading config from {tmp_path}/nothere.yaml\n")
    log13.write_text("step 1\n")
    jobs = [("11", ""), ("12", str(log12)), ("13", str(log13))]
    marker = new_marker()
    got = read_launch(_run(build_launch_script(jobs, marker), marker, bin_dir), jobs, "", {})
    assert got["11"].hf_only is False and str(cfg_b) in got["11"].why
    assert got["12"].hf_only is None and "not readable" in got["12"].why
    assert got["13"].hf_only is None and "names a launch YAML" in got["13"].why
    listed = read_launch(None, jobs, "ssh: connection refused", {"13": ["delphi"]})
    assert listed["13"].hf_only is True and listed["11"].why == "unknown: ssh: connection refused"


def test_the_script_refuses_what_would_reach_a_shell() -> None:
    with pytest.raises(ValueError, match="not a Slurm job id"):
        build_launch_script([("1;reboot", "")], "M")
    with pytest.raises(ValueError, match="absolute single-line"):
        build_launch_script([("1", "rel/x.out")], "M")
