"""HF-only from the launch YAML on the real local Slurm, over real SSH: a job whose log banner
names its launch YAML (enable_db_registration: false) is HF-only; one whose YAML says true is
not; one that names none is "unknown: ..."; all in ONE session, bounded reads."""

from __future__ import annotations

import logging
import subprocess

import pytest
from lab import HOME, LAB_CONFIG, LAB_OPS, LOGS, USER

pytestmark = pytest.mark.cluster


def test_launch_yaml_decides_hf_only_over_one_session(local_cluster, tag) -> None:
    from sweep_core.config.ops import load_cluster
    from sweep_core.config.sweep import load_sweep_config
    from sweep_core.handoffs.chain.remote import build_launch_script, read_launch
    from sweep_core.slurm.gather import new_marker
    from sweep_operators.cluster_ssh import run_checked

    c = local_cluster
    conf = HOME / "launch" / tag
    subprocess.run(["runuser", "-u", USER, "--", "mkdir", "-p", str(conf)], check=True)
    for name, flag in (("hf.yaml", "false"), ("db.yaml", "true")):
        subprocess.run(
            [
                "runuser",
                "-u",
                USER,
                "--",
                "bash",
                "-c",
                f"printf 'sft:\\n  enable_db_registration: {flag}\\n' > {conf}/{name}",
            ],
            check=True,
        )
    hf = c.submit(f"sft__{tag}_hf", f"echo 'Loading config from {conf}/hf.yaml'")
    db = c.submit(f"sft__{tag}_db", f"echo 'config: {conf}/db.yaml'")
    none = c.submit(f"sft__{tag}_none", "echo 'Step 1/1'")
    for j in (hf, db, none):
        c.wait_finished(j, "COMPLETED")
    jobs = [(j, str(LOGS / f"sft__{tag}_{k}-{j}.out")) for j, k in ((hf, "hf"), (db, "db"), (none, "none"))]
    cfg = load_cluster(str(LAB_OPS), "local")
    limits = load_sweep_config(str(LAB_CONFIG)).gather
    marker = new_marker()
    out, problem = run_checked(cfg, limits, logging.getLogger("t"), build_launch_script(jobs, marker), marker, "launch")
    assert out is not None and not problem, problem
    got = read_launch(out, jobs, problem, {})
    assert got[hf].hf_only is True and f"{conf}/hf.yaml" in got[hf].why
    assert got[db].hf_only is False and "sft-job-cleanup" in got[db].why
    assert got[none].hf_only is None and got[none].why.startswith("unknown: ")
