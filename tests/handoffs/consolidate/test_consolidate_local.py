"""Datagen consolidate end to end on the real local Slurm (real SSH, real sbatch --array, real
trees, a real git tracker clone): the sweep hands the finished array to sweep_cleanup, whose
consolidate step submits a REAL consolidate sbatch job once; that job fails once (a Python
traceback: reported, retried), then writes the consolidated dataset and uploads it to the HF hub
STUB (tests/hf_hub_stub.py) with huggingface_hub; the tracker row goes ⏳ -> ✅ in a commit, and only
then cleanup removes the chunk trees and verifies the reclaim. The name is reused: the hub already
holds an earlier dataset under it, which releases nothing; the commit the job printed does."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import huggingface_hub
import pytest
import yaml
from hf_hub_stub import hub_stub
from lab import ARTIFACTS, HOME, LAB_CONFIG, USER
from sweep_runner import run_dag

pytestmark = pytest.mark.cluster
ART = ARTIFACTS
JOBS = HOME / "jobs"
ORG = "sweep-local"
SITE = Path(huggingface_hub.__file__).resolve().parents[1]  # readable by the cluster user

CONSOLIDATE_SH = """#!/bin/bash
# a consolidate job: the chunks' rows into one dataset file, uploaded with huggingface_hub to
# HF_ENDPOINT (here: the STUB); the commit URL it prints is the upload's evidence
set -euo pipefail
dir=$1; repo=$2
if [ -e "$dir/.fail-once" ]; then
  rm -f -- "$dir/.fail-once"
  python3 -c 'raise ValueError("chunk c2 has a different schema")'
fi
mkdir -p "$dir/consolidated"
cat "$dir"/chunks/*/rows.jsonl > "$dir/consolidated/train-00000-of-00001.parquet"
/usr/bin/python3 - "$dir/consolidated/train-00000-of-00001.parquet" "$repo" <<'PY'
import sys
from huggingface_hub import HfApi
api = HfApi()
api.create_repo(sys.argv[2], repo_type="dataset", exist_ok=True)
print(api.upload_file(path_or_fileobj=sys.argv[1], path_in_repo="data/train-00000-of-00001.parquet",
                      repo_id=sys.argv[2], repo_type="dataset"), flush=True)
PY
echo "consolidated $(wc -l < "$dir/consolidated/train-00000-of-00001.parquet") rows"
"""


def _config(tmp_path: Path, script: Path, hub_url: str) -> Path:
    cfg = yaml.safe_load(LAB_CONFIG.read_text())
    cfg["consolidate"] = {
        "flavors": {
            "datagen-job-cleanup": {
                "argv": [
                    "sbatch",
                    "--parsable",
                    "-J",
                    "{job_name}",
                    "-o",
                    f"{HOME}/jobs/logs/%x-%j.out",
                    f"--export=ALL,HF_ENDPOINT={hub_url},PYTHONPATH={SITE},HF_HUB_DISABLE_TELEMETRY=1",
                    str(script),
                    "{root}/{name}",
                    "{org}/{name}",
                ],  # fmt: skip
                "max_retries": 1,
            }
        },
        "tracker": "datagen/TRACKER.md",
    }
    cfg["cleanup"]["verify_timeout_s"] = 60
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    return path


def _tracker(tmp_path: Path, array: str, name: str) -> Path:
    repo = tmp_path / "clone"
    (repo / "datagen").mkdir(parents=True)
    (repo / "datagen" / "TRACKER.md").write_text(
        "# Datagen arrays\n\n| Dataset | Cluster | Array job | Consolidate job | Status | Note |\n"
        f"|---|---|---|---|---|---|\n| {name} | local | {array} |  | ⏳ | launched by the test |\n"
    )
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True)
    return repo


def _consolidate_jobs(name: str) -> list[str]:
    """Every consolidate job of the array the cluster accounts for (slurmdbd, all users)."""
    res = subprocess.run(
        ["sacct", "-a", "-n", "-X", "-P", "--name", f"consolidate__{name}", "-S", "now-1hours", "-o", "JobID"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return res.stdout.split()


def _accounted(name: str, at_least: int, timeout: float = 90) -> list[str]:
    """The array's consolidate jobs once the windowed sacct lists ``at_least`` of them: slurmdbd's
    windowed (-S) answer lags `sacct -j` by seconds, more while the cluster is busy (CI)."""
    end = time.time() + timeout
    while len(found := _consolidate_jobs(name)) < at_least and time.time() < end:
        time.sleep(1)
    return found


def _step(run) -> dict:
    steps = run.values["consolidate"]["steps"]
    assert len(steps) == 1, steps
    return steps[0]


def _files(path: Path) -> int:
    return sum(1 for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def test_a_real_array_is_consolidated_once_uploaded_tracked_then_its_chunks_removed(local_cluster, tag, tmp_path):
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    c = local_cluster
    name = f"datagen__{tag}_mix"
    base = ART / name
    chunk = f'd={base}/chunks/c$SLURM_ARRAY_TASK_ID; mkdir -p "$d" {base}/tasks; echo "{{\\"row\\": $SLURM_ARRAY_TASK_ID}}" > "$d/rows.jsonl"'
    array = c.submit(name, chunk, "--array=1-3", output=f"{HOME}/jobs/logs/%x-%A_%a.out")
    for k in (1, 2, 3):
        c.wait_finished(f"{array}_{k}", "COMPLETED")
    assert _files(base / "chunks") == 3
    script = JOBS / f"consolidate_{tag}.sbatch"
    script.write_text(CONSOLIDATE_SH)
    (base / ".fail-once").write_text("")
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(base), str(script)], check=True)
    script.chmod(0o755)
    repo = _tracker(tmp_path, array, name)
    tracker = repo / "datagen" / "TRACKER.md"

    earlier = {("dataset", f"{ORG}/{name}"): ["data/train-00000-of-00001.parquet"]}  # a reused name
    with hub_stub(earlier) as hub:
        env = {"HF_ENDPOINT": hub.url, "SWEEP_CONFIG": str(_config(tmp_path, script, hub.url)),
               "SWEEP_TRACKER_REPO": str(repo)}  # fmt: skip

        # the sweep hands the finished array to sweep_cleanup (with ALL its chunks COMPLETED)
        c.wait_windowed(f"{array}_3")
        sweep = run_dag("monitor_cron_sweep", {"clusters": ["local"], "lookback_hours": 0.25}, tmp_path, **env)
        assert sweep.task_states["trigger_cleanup"] == "success", sweep.task_states
        with create_session() as s:
            conf = s.query(DagRun).filter(DagRun.run_id == f"{sweep.run_id}__cleanup").one().conf
        jobs = [j for j in conf["jobs"] if j["name"] == name]
        assert jobs and jobs[0]["flavor"] == "datagen-job-cleanup" and jobs[0]["job_id"].startswith(array)

        # dry run: says what it would submit, submits nothing
        dry = run_dag("sweep_cleanup", {"jobs": jobs, "dry_run": True}, tmp_path, **env)
        assert dry.state == "success", dry.task_states
        assert _step(dry)["action"] == "would submit" and str(script) in _step(dry)["argv"]
        assert _consolidate_jobs(name) == []

        # real: submitted once; the chunk trees are held (no consolidated dataset yet)
        first = run_dag("sweep_cleanup", {"jobs": jobs, "dry_run": False}, tmp_path, **env)
        assert first.state == "success", first.task_states
        j1 = _step(first)["job"]
        assert _step(first)["action"] == "submitted"
        held = first.values["plan"]["decisions"][0]
        assert held["action"] == "blocked" and held["paths"] == []  # not consolidated by this array yet
        assert _files(base / "chunks") == 3
        c.wait_finished(j1, "FAILED", timeout=90)
        assert _accounted(name, 1) == [j1]

        # a later sweep knows the consolidation in flight: it triggers cleanup with no new job
        later = run_dag("monitor_cron_sweep", {"clusters": ["local"], "lookback_hours": 0.25}, tmp_path, **env)
        with create_session() as s:
            runs = s.query(DagRun).filter(
                DagRun.dag_id == "sweep_cleanup", DagRun.run_id.like(f"{later.run_id}__cleanup%")
            )
            confs = [r.conf for r in runs]
        # triggered with no new job when nothing else completed (the array is not handed off twice)
        assert confs and all(j["name"] != name for conf in confs for j in conf["jobs"]), confs

        # FAILED: reported with its first real traceback, retried once
        retry = run_dag("sweep_cleanup", {"jobs": [], "dry_run": False}, tmp_path, **env)
        s2 = _step(retry)
        assert s2["action"] == "submitted" and s2["job"] != j1
        assert "ValueError: chunk c2 has a different schema" in s2["reasons"][0]
        c.wait_finished(s2["job"], "COMPLETED", timeout=90)
        assert hub.uploads and hub.uploads[-1][1] == f"{ORG}/{name}"  # the job uploaded to the STUB

        # COMPLETED + on the hub: the tracker row advances (a commit), then the chunk trees go
        done = run_dag("sweep_cleanup", {"jobs": [], "dry_run": False}, tmp_path, **env)
        assert done.state == "success", done.task_states
        assert _step(done)["action"] == "advance" and "at its commit" in _step(done)["hub"]
        deleted = done.values["plan"]["decisions"][0]
        assert deleted["action"] == "delete", deleted
        # re-run: nothing submitted or written twice
        again = run_dag("sweep_cleanup", {"jobs": jobs, "dry_run": False}, tmp_path, **env)

    assert f"| {name} | local | {array} | {s2['job']} | ✅ |" in tracker.read_text()
    log = subprocess.run(["git", "-C", str(repo), "log", "--format=%s"], capture_output=True, text=True).stdout
    assert log.splitlines()[0] == f"datagen consolidate: {name} ✅" and len(log.splitlines()) == 2
    assert not (base / "chunks").exists() and not (base / "tasks").exists()
    assert (base / "consolidated" / "train-00000-of-00001.parquet").read_text().count("row") == 3
    verified = done.values["verify"]["local"]
    assert verified["left"] == [] and len(verified["removed"]) == 2
    assert _step(again)["action"] == "done" and len(_accounted(name, 2)) == 2
    run_log = Path(done.values["record"]).read_text()
    assert "advance" in run_log and "deleted" in run_log
