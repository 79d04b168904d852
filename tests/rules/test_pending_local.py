"""The Pending section, SFT divergence and campaign drift on the REAL local Slurm (issue 14), one sweep
through the DAG: a successor submitted with --dependency=afterok on a job that then fails is held
with DependencyNeverSatisfied and flagged; a held job (no expected start) is listed too; SFT logs
with a NaN loss and with a loss spike are flagged; a campaign's STATE.md in a real git repo that
calls the failed job running and misses a running one drifts, and is left as it was."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from helpers import table_rows
from lab import HOME, LAB_CONFIG, USER
from sweep_runner import ROOT, run_dag

pytestmark = pytest.mark.cluster


def _reason(job_id: str) -> str:
    res = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%r"], capture_output=True, text=True, check=False)
    return res.stdout.strip()


def test_a_broken_chain_a_held_job_and_sft_divergence_on_the_real_cluster(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    dst = Path(f"{HOME}/jobs/sftdiv-{tag}")
    dst.mkdir(parents=True)
    for name in ("sft_nan.out", "sft_spike.out"):
        shutil.copy(ROOT / "tests" / "fixtures" / "logs" / name, dst / name)
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(dst)], check=True)
    names = {k: f"sft__{tag}_{k}" for k in ("nan", "spike", "chain")} | {"held": f"eval-{tag}_held"}
    ids = {
        "nan": c.submit(names["nan"], f"cat {dst}/sft_nan.out; sleep 900"),
        "spike": c.submit(names["spike"], f"cat {dst}/sft_spike.out; sleep 900"),
        "pred": c.submit(names["chain"], "echo 'RuntimeError: boom' >&2; sleep 3; exit 1"),
        "held": c.submit(names["held"], "sleep 900", "-H"),
    }
    ids["next"] = c.submit(names["chain"], "sleep 900", f"--dependency=afterok:{ids['pred']}")
    c.wait_running(ids["nan"], ids["spike"])
    c.wait_finished(ids["pred"], "FAILED")
    deadline = time.time() + 60
    while _reason(ids["next"]) != "DependencyNeverSatisfied" and time.time() < deadline:
        time.sleep(1)
    assert _reason(ids["next"]) == "DependencyNeverSatisfied"

    repo = tmp_path / "truth"
    (repo / "c9").mkdir(parents=True)
    (repo / "c9" / "POLICY.md").write_text("# c9 policy: SFT arms, one chain each\n")
    state = (f"# c9\n\n## Summary\nThree arms; the chain arm restarts on failure.\n\n| arm | job | status |\n|-|-|-|\n"
             f"| nan | local:{ids['nan']} | running |\n| chain | {ids['pred']} | running |\n")  # fmt: skip
    (repo / "c9" / "STATE.md").write_text(state)
    for args in (["init", "-q"], ["add", "."], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c9"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    conf = yaml.safe_load(LAB_CONFIG.read_text())
    conf["campaigns"] = [{"name": "c9", "jobs": f"^sft__{tag}_", "policy": str(repo / "c9" / "POLICY.md"),
                          "state": str(repo / "c9" / "STATE.md")}]  # fmt: skip
    sweep_yaml = tmp_path / "sweep.yaml"
    sweep_yaml.write_text(yaml.safe_dump(conf))

    run = run_dag("monitor_cron_sweep", {"clusters": ["local"], "lookback_hours": 0.1}, tmp_path / "logs",
                  SWEEP_CONFIG=str(sweep_yaml))  # fmt: skip

    assert run.task_states["render"] == "success", run.task_states
    text = Path(run.values["render"]["run_log"]).read_text()
    report = re.sub(r"\\(.)", r"\1", text)
    assert (
        f"[chain_dependency_broken] WARN local {ids['next']} {names['chain']}: chain broken: held with"
        f" DependencyNeverSatisfied (afterok:{ids['pred']}(failed)):" in report
    )
    tables = run.values["render"]["tables"]
    pending = {r["Job ID"]: r for r in table_rows(tables["Pending"])}
    assert pending[ids["next"]]["Reason"] == "DependencyNeverSatisfied"
    assert pending[ids["held"]]["Reason"] == "JobHeldUser" and pending[ids["held"]]["Expected start"] == "N/A"
    assert re.fullmatch(r"\d+ min", pending[ids["held"]]["Pending for"])
    assert "## Pending" in text
    assert f"[sft_divergence] CRITICAL local SFT {ids['nan']} {names['nan']}: grad_norm inf, loss nan" in report
    assert f"[sft_divergence] WARN local SFT {ids['spike']} {names['spike']}: loss spike 2.873 > 3 x median" in report
    assert (
        f"[campaign_drift] WARN local SFT {ids['pred']} {names['chain']}: campaign c9: STATE.md calls {ids['pred']}"
        " running, the cluster says FAILED" in report
    )
    assert (
        f"[campaign_drift] WARN local SFT {ids['spike']} {names['spike']}: campaign c9: RUNNING campaign job not in"
        in report
    )
    assert not re.search(rf"\[campaign_drift\] WARN local SFT {ids['nan']} ", report)  # STATE.md has it running
    assert (
        "STATE.md (" in tables["Campaign c9"]
        and "Three arms; the chain arm restarts on failure." in tables["Campaign c9"]
    )
    assert (repo / "c9" / "STATE.md").read_text() == state  # read, never edited
    assert (
        subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True).stdout == ""
    )
