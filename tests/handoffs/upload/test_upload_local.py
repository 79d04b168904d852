"""Upload when missing and salvage, end to end with dag.test() on the real local Slurm: the upload
is a real sbatch job (tests/fixtures/upload/hf_upload_job.py, huggingface_hub's upload_folder)
that uploads to the HF hub STUB (tests/hf_hub_stub.py, reached through HF_ENDPOINT in the job's
environment); the next sweep_cleanup run sees it on the stub, deletes the trees and verifies the
reclaim. A failing upload is reported with its traceback, retried, then given up. A collapse
cancelled through the real approval is salvaged at the step before the collapse: an earlier upload
under the same name does not release the rm, the commit its own upload job printed does. A standard
GRPO run's collapse is salvaged by rl-standard-job-cleanup, the shipped hub check (model + metric
CSVs, no trace dataset) unchanged, and completes."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import huggingface_hub
import pytest
import yaml
from cancel_handoff import hand_off
from conftest import sh
from helpers import act_said
from hf_hub_stub import hub_stub
from hitl_responder import CANCEL, HITLResponder
from lab import ARTIFACTS, LAB_CONFIG, USER
from sweep_runner import ROOT, run_dag

from sweep_core.ledger.store import load_ledger

pytestmark = pytest.mark.cluster
ART = ARTIFACTS
ORG = "sweep-local"
JOB_PY = ROOT / "tests" / "fixtures" / "upload" / "hf_upload_job.py"
SITE = Path(huggingface_hub.__file__).resolve().parents[1]  # readable by the cluster user


def _tree(name: str, step: int | None = None) -> Path:
    """An SFT/RL artifact dir: exports/ (the model), checkpoints/ (step_<n>/ dirs), 40 files each."""
    base = ART / name
    for sub in ("exports", "checkpoints/step_10" if step is None else f"checkpoints/step_{step}"):
        d = base / sub
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text("{}")
        (d / "model-00001-of-00001.safetensors").write_text("weights")
        for i in range(38):
            (d / f"extra_{i}.json").write_text("{}")
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(ART)], check=True)
    return base


def _config(tmp_path: Path, hub_url: str, flavor: str, folder_arg: str = "{artifact_dir}", retries: int = 2,
            shipped_hub: bool = False) -> str:  # fmt: skip
    """include/sweep.yaml with ``flavor``'s hub = the model repo (``shipped_hub``: the shipped
    flavor's own hub check) and an upload job to the stub."""
    cfg = yaml.safe_load(LAB_CONFIG.read_text())
    cfg["cleanup"]["upload_retries"] = retries
    model = [{"repo": "{org}/{name}", "type": "model", "expected": ["config.json", "*.safetensors"]}]
    cfg["cleanup"]["flavors"][flavor] = {
        "hub": cfg["cleanup"]["flavors"][flavor]["hub"] if shipped_hub else model,
        "delete": ["checkpoints", "exports"],
        "upload": [
            "sbatch",
            "-J",
            "upload__{name}",
            f"--export=ALL,HF_ENDPOINT={hub_url},PYTHONPATH={SITE},HF_HUB_DISABLE_TELEMETRY=1",
            str(JOB_PY),
            folder_arg,
            "{hub_repo}",
            "{step}",
        ],
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _uploads(name: str, expect: int = 0, settle: float = 20) -> list[str]:
    """Ids of every upload job of that name sacct knows, oldest first. A windowed sacct lags a job
    that just ended by ~5 s (slurmdbd), so it is asked again until ``expect`` ids show or ``settle``
    seconds passed."""
    end = time.time() + settle
    while True:
        out = sh("sacct", "-n", "-X", "-P", "-S", "now-1hours", "--name", f"upload__{name}", "-o", "JobID").stdout
        got = out.split()
        if len(got) >= expect or time.time() > end:
            return got
        time.sleep(1)


def _acts(logs: Path, job_id: str) -> list[dict]:
    return load_ledger(logs).to_dict()["jobs"][f"local|{job_id}"]["acts"]


def _row(run, job_id: str) -> list[str]:
    return next(r for r in run.values["upload"]["rows"] if r[1] == job_id)


def _cleanup(logs: Path, jobs: list[dict], cfg: str, hub_url: str, dry_run: bool = False):
    run = run_dag("sweep_cleanup", {"jobs": jobs, "dry_run": dry_run}, logs, SWEEP_CONFIG=cfg, HF_ENDPOINT=hub_url)
    assert run.state == "success", run.task_states
    return run


def test_a_missing_upload_is_submitted_once_then_cleaned(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    name = f"sft__{tag}_up"
    jid = c.submit(name, "echo done")
    c.wait_finished(jid, "COMPLETED")
    tree = _tree(name)
    logs = tmp_path / "logs"
    job = [{"cluster": "local", "job_id": jid, "name": name, "flavor": "sft-job-cleanup"}]
    with hub_stub({}) as hub:
        cfg = _config(tmp_path, hub.url, "sft-job-cleanup", "{artifact_dir}")
        dry = _cleanup(logs, job, cfg, hub.url, dry_run=True)
        assert "dry run: would submit sbatch --parsable" in _row(dry, jid)[6]
        assert _uploads(name, settle=0) == []  # a dry run submits nothing

        one = _cleanup(logs, job, cfg, hub.url)
        assert one.task_states["delete"] == "skipped"  # not on the hub: nothing deleted
        row = _row(one, jid)
        assert row[3] == "completion" and row[5] == "submitted" and "not on the hub: upload submitted" in row[6]
        up = row[4]
        check, upload = _acts(logs, jid)  # the hub check the upload was submitted on, then the upload
        assert (check["kind"], check["outcome"], upload["kind"], upload["upload_job"]) == (
            "hub_check",
            "failed",
            "upload",
            up,
        )
        c.wait_finished(up, "COMPLETED", timeout=120)
        assert hub.uploads and hub.uploads[0][1] == f"{ORG}/{name}"

        # a run by hand with no jobs: the ledger's open upload is planned by itself; its log's
        # commit is read after the plan asked the hub, so the hub is asked for it next run
        wait = _cleanup(logs, [], cfg, hub.url)
        assert wait.task_states["delete"] == "skipped" and "COMPLETED with commit" in _row(wait, jid)[6]
        two = _cleanup(logs, [], cfg, hub.url)
        assert two.task_states["delete"] == "success" and two.task_states["verify"] == "success"
        assert _row(two, jid)[5] == "VERIFIED" and "landed" in _row(two, jid)[6]
        assert not (tree / "exports").exists() and not (tree / "checkpoints").exists()
        checks = [a for a in _acts(logs, jid) if a["kind"] == "hub_check"]  # the rm stood on its own commit
        assert [a["outcome"] for a in checks] == ["failed", "ok"] and "revision main" not in checks[1]["evidence"]
        # the reclaim is read before and after; other lanes write on the same filesystem, so
        # the figure may be "no measurable reclaim", but it is a reading, never UNKNOWN
        reclaim = two.values["verify"]["local"]["reclaim"]
        assert reclaim and all("IUsed" in x and "UNKNOWN" not in x for x in reclaim), reclaim
        log = Path(two.values["record"]).read_text()
        assert "Uploads (hub lacked the artifact" in log and up in log

        three = _cleanup(logs, job, cfg, hub.url)
        assert three.values["upload"]["rows"] == []  # closed: followed no more
    assert _uploads(name, expect=1) == [up]  # submitted once


def test_a_failed_upload_is_reported_with_its_traceback_retried_then_given_up(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    name = f"sft__{tag}_bad"
    jid = c.submit(name, "echo done")
    c.wait_finished(jid, "COMPLETED")
    _tree(name)
    logs = tmp_path / "logs"
    job = [{"cluster": "local", "job_id": jid, "name": name, "flavor": "sft-job-cleanup"}]
    with hub_stub({}) as hub:
        cfg = _config(tmp_path, hub.url, "sft-job-cleanup", "{artifact_dir}/no-such-export", retries=1)
        first = _row(_cleanup(logs, job, cfg, hub.url), jid)[4]
        c.wait_finished(first, "FAILED", timeout=120)
        retry = _cleanup(logs, job, cfg, hub.url)
        row = _row(retry, jid)
        assert f"upload job {first} FAILED" in row[6] and "is not a directory" in row[6] and "retry 1 of 1" in row[6]
        second = row[4]
        assert second != first
        c.wait_finished(second, "FAILED", timeout=120)
        gave = _cleanup(logs, job, cfg, hub.url)
        assert "given up after 2 attempt(s)" in _row(gave, jid)[6]
        log = Path(gave.values["record"]).read_text()  # the table wraps the Outcome at 80 columns
        assert "ValueError: Provided path:" in log and "given up after 2 attempt(s)" in log
        again = _cleanup(logs, job, cfg, hub.url)
        assert _row(again, jid)[6].startswith("upload given up")  # told again, never submitted again
    assert _uploads(name, expect=2) == [first, second]
    assert [a["kind"] for a in _acts(logs, jid)].count("upload_gave_up") == 1
    assert (ART / name / "exports").exists()  # never deleted: not on the hub


def test_a_collapse_cancel_is_salvaged_at_the_step_before_the_collapse(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    name = f"rl__{tag}_harbor_collapse"  # an agentic (Harbor) run: salvaged by rl-agentic-job-cleanup
    jid = c.submit(name, "echo 'step 41'; sleep 600")
    c.wait_running(jid)
    tree = _tree(name, step=41)
    logs = tmp_path / "logs"
    ev = f"[rl_collapse] CRITICAL local RL {jid} {name}: step 42: reward drop 0.61→0.02, entropy 0.1 → cancel+salvage"
    flavor = "rl-agentic-job-cleanup"
    earlier = {("model", f"{ORG}/{name}"): ["config.json", "model-old.safetensors"]}  # another run, same name
    with hub_stub(earlier) as hub:
        cfg = _config(tmp_path, hub.url, flavor)
        flagged = {"cluster": "local", "job_id": jid, "name": name, "action": "cancel+salvage", "rule": "rl_collapse",
                   "message": ev.split(": ", 1)[1]}  # fmt: skip
        run_id, jobs = hand_off(logs, [flagged])  # the sweep's hand-off: the step comes from ITS flag line
        conf = {"jobs": jobs}
        with HITLResponder("sweep_cancel", "approve", CANCEL) as responder:
            cancel = run_dag("sweep_cancel", {**conf, "dry_run": False, "approval_timeout_minutes": 5}, logs,
                             run_id=run_id, SWEEP_CONFIG=cfg)  # fmt: skip
        assert responder.errors == [] and act_said(cancel.values, "scancel")["local"][jid] == "cancelled"
        salvage = [a for a in _acts(logs, jid) if a["kind"] == "salvage"]
        assert len(salvage) == 1 and salvage[0]["step"] == "41" and salvage[0]["flavor"] == flavor

        one = _cleanup(logs, [], cfg, hub.url)  # nothing handed: the ledger's salvage is planned
        assert one.task_states["delete"] == "skipped" and (tree / "checkpoints" / "step_41").exists()
        row = _row(one, jid)
        assert row[3] == "salvage step 41" and row[5] == "submitted"
        up = row[4]
        c.wait_finished(up, "COMPLETED", timeout=120)
        assert hub.repos[("model", f"{ORG}/{name}")] and any(
            f == "config.json" for f in hub.repos[("model", f"{ORG}/{name}")]
        )
        wait = _cleanup(logs, [], cfg, hub.url)  # its commit read: asked of the hub next run
        assert wait.task_states["delete"] == "skipped" and "COMPLETED with commit" in _row(wait, jid)[6]
        two = _cleanup(logs, [], cfg, hub.url)
        assert _row(two, jid)[5] == "VERIFIED" and "/revision/" in str(hub.requests)
        assert two.values["verify"]["local"]["left"] == [] and not (tree / "checkpoints").exists()
        log = Path(two.values["record"]).read_text()
        assert "salvage step 41" in log and "deleted" in log
    assert _uploads(name, expect=1) == [up]


def test_a_standard_rl_collapse_is_salvaged_by_its_own_flavor_and_completes(local_cluster, tag, tmp_path) -> None:
    """The collapse flag of a standard GRPO run (no agentic tag, no trace_jobs/) names
    rl-standard-job-cleanup; the approved cancel records the salvage in that flavor; the shipped hub
    check (model + metric CSVs, no -traces dataset) is met by the upload and the trees are deleted."""
    from sweep_core.config.sweep import load_sweep_config
    from sweep_core.pipeline.steps import run_fan_in
    from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

    c = local_cluster
    name = f"rl__{tag}_dapo_qwen8b"
    jid = c.submit(name, "echo 'step 41'; sleep 600")
    c.wait_running(jid)
    tree = _tree(name, step=41)
    (tree / "metrics").mkdir()
    (tree / "metrics" / "train_metrics.csv").write_text("step,reward\n41,0.61\n42,0.02\n")
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(tree)], check=True)
    tail = (ROOT / "tests" / "fixtures" / "logs" / "rl_collapsed.out").read_text()
    job = Job("local", jid, name, "RUNNING", "squeue", log_tail=tail, log_mtime=time.time() - 60)
    snap = ClusterSnapshot("local", "slurm", ClusterStatus.OK, remote_now=time.time(), running=[job], finished=[],
                           pending=[])  # fmt: skip
    (flag,) = [f for f in run_fan_in([snap], load_sweep_config(LAB_CONFIG)).flags if f.rule == "rl_collapse"]
    assert flag.action == "cancel+salvage" and flag.message.endswith("salvage by rl-standard-job-cleanup")
    logs = tmp_path / "logs"
    flavor = "rl-standard-job-cleanup"
    with hub_stub({}) as hub:
        cfg = _config(tmp_path, hub.url, flavor, shipped_hub=True)
        hub_check = yaml.safe_load(Path(cfg).read_text())["cleanup"]["flavors"][flavor]["hub"]
        assert [h["repo"] for h in hub_check] == ["{org}/{name}"] and "**/*.csv" in hub_check[0]["expected"]
        flagged = {"cluster": "local", "job_id": jid, "name": name, "action": "cancel+salvage", "rule": "rl_collapse",
                   "message": flag.message}  # fmt: skip
        run_id, jobs = hand_off(logs, [flagged])
        with HITLResponder("sweep_cancel", "approve", CANCEL) as responder:
            cancel = run_dag("sweep_cancel", {"jobs": jobs, "dry_run": False, "approval_timeout_minutes": 5}, logs,
                             run_id=run_id, SWEEP_CONFIG=cfg)  # fmt: skip
        assert responder.errors == [] and act_said(cancel.values, "scancel")["local"][jid] == "cancelled"
        (salvage,) = [a for a in _acts(logs, jid) if a["kind"] == "salvage"]
        assert (salvage["flavor"], salvage["step"]) == (flavor, "41")

        one = _cleanup(logs, [], cfg, hub.url)
        row = _row(one, jid)
        assert row[3] == "salvage step 41" and row[5] == "submitted"
        c.wait_finished(row[4], "COMPLETED", timeout=120)
        files = hub.repos[("model", f"{ORG}/{name}")]
        assert "config.json" in files and "metrics/train_metrics.csv" in files
        assert not any(kind == "dataset" for kind, _ in hub.repos)  # no trace dataset asked or made
        _cleanup(logs, [], cfg, hub.url)  # its commit read: asked of the hub next run
        two = _cleanup(logs, [], cfg, hub.url)
        assert _row(two, jid)[5] == "VERIFIED", _row(two, jid)
        assert not (tree / "checkpoints").exists() and not (tree / "exports").exists()
