"""sweep_hf_chain end to end: real SFT/upload/eval jobs on the real cluster, the hub STUB
(tests/hf_hub_stub.py), a real git repo holding the tracker, then the real harvest for leg 3."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from hf_hub_stub import hub_stub
from huggingface_hub import HfApi
from lab import HOME, LAB_CONFIG, USER
from sweep_runner import run_dag

from sweep_core.handoffs.chain.plan import CellState
from sweep_core.handoffs.kernel.attempt import Attempt
from sweep_core.handoffs.kernel.hub import hub_act
from sweep_core.handoffs.kernel.result import Outcome
from sweep_core.state.cells import load_cells
from sweep_operators import state_cli

pytestmark = pytest.mark.cluster
TRACKER = "experiments/active/delphi/base_sft_evals/grid.md"
RESULTS = json.dumps(
    {
        "results": {
            "math500": {"exact_match,none": 0.5},
            "aime24": {"exact_match,none": 0.1, "exact_match_stderr,none": 0.02},
            "gsm8k": {"exact_match,none": 0.7},
        }
    }
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _sacct_names(name: str, settle: float = 15) -> list[str]:
    """Job ids of that name in squeue or sacct. A windowed sacct lags a job that just left squeue
    by ~5 s (slurmdbd), so an empty answer is asked again until ``settle`` seconds passed."""
    end = time.time() + settle
    while True:
        got = _named_once(name)
        if got or time.time() > end:
            return got
        time.sleep(1)


def _named_once(name: str) -> list[str]:
    sq = subprocess.run(["squeue", "-h", "-u", USER, "-n", name, "-o", "%i"], capture_output=True, text=True).stdout
    sa = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-S", "now-1days", "-u", USER, "--name", name, "-o", "JobID"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(set(sq.split()) | set(sa.split()))


def _kept_hub_check(logs: Path, key: str) -> Attempt:
    kept = CellState.from_dict(load_cells(logs)[key]).hub
    assert kept is not None, key
    return kept


def test_chain_moves_one_leg_at_a_time_and_never_twice(local_cluster, tag, tmp_path, monkeypatch) -> None:
    from airflow.models.variable import Variable

    c = local_cluster
    cell = f"{tag}_qwen__tulu3"
    sft = c.submit(f"sft__{cell}", "echo 'Step 10/10'")
    c.wait_finished(sft, "COMPLETED")
    assert _sacct_names(f"sft__{cell}") == [sft]  # the windowed sacct the chain asks lags ~5 s
    repo = tmp_path / "clone"
    tracker = repo / TRACKER
    tracker.parent.mkdir(parents=True)
    tracker.write_text(
        "# grid\n\n| base | run | eval job | MATH500 | AIME24 | gsm8k | status |\n|---|---|---|---|---|---|---|\n"
        f"| Qwen | {cell} | — | | | | · |\n| Other | untouched__cell | — | | | | · |\n"
    )
    _git(repo.parent, "init", "-q", str(repo))
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tracker")
    cfg = yaml.safe_load(LAB_CONFIG.read_text())
    cfg["hf_chain"] = {
        "series": [
            {
                "name": f"delphi-{tag}",
                "cluster": "local",
                "match": rf"^sft__(?P<cell>{tag}_[A-Za-z0-9_]+)$",
                "db_registration": False,
                "hub_repo": "{org}/{cell}",
                "upload": [
                    "sbatch",
                    "--parsable",
                    "-J",
                    "hf_upload__{cell}",
                    "--wrap",
                    "echo uploading {hub_repo} from job {sft_job}",
                ],
                "eval": [
                    "sbatch",
                    "--parsable",
                    "-J",
                    "eval-{cell}",
                    "--wrap",
                    f"d={HOME}/jobs/eval/$SLURM_JOB_ID; mkdir -p $d; printf '%s' '"
                    + RESULTS
                    + "' > $d/results_2026-12-02T11-00-00.json",
                ],
                "tracker": TRACKER,
            }
        ]
    }
    conf_path = tmp_path / "sweep.yaml"
    conf_path.write_text(yaml.safe_dump(cfg))
    env = {"SWEEP_CONFIG": str(conf_path), "SWEEP_TRACKER_REPO": str(repo)}
    logs = tmp_path / "logs"
    # the chain's state as an earlier version kept it (an Airflow Variable): the chain refuses to start
    # from scratch until `sweep-state upgrade` moves it into the rows, once
    Variable.set("sweep_hf_chain", json.dumps({"other/earlier__cell": {"leg": "done", "sft_job": "7"}}))
    model = ("model", f"sweep-local/{cell}")

    with hub_stub({}) as hub:
        env["HF_ENDPOINT"] = hub.url
        refused = run_dag("sweep_hf_chain", {"dry_run": False}, logs, **env)
        assert refused.task_states["advance"] == "failed" and load_cells(logs) == {}
        for k, v in {**env, "SWEEP_RUN_LOG_DIR": str(logs)}.items():
            monkeypatch.setenv(k, v)
        assert state_cli.main(["upgrade", "--run-log-dir", str(logs)]) == 0
        assert Variable.get("sweep_hf_chain", None) is None
        dry = run_dag("sweep_hf_chain", {"dry_run": True}, logs, **env)
        assert dry.state == "success" and _sacct_names(f"hf_upload__{cell}", settle=0) == []
        one = run_dag("sweep_hf_chain", {"dry_run": False}, logs, **env)
        assert one.state == "success", one.task_states
        step = next(s for s in one.values["advance"]["steps"] if s["cell"] == cell)
        assert (step["before"], step["after"], step["submit"]) == ("sft", "upload", "upload")
        c.wait_finished(_sacct_names(f"hf_upload__{cell}")[0], "COMPLETED")
        two = run_dag("sweep_hf_chain", {"dry_run": False}, logs, **env)  # upload not on the hub yet
        step = next(s for s in two.values["advance"]["steps"] if s["cell"] == cell)
        assert step["after"] == "upload" and step["submit"] == "" and "waiting for the upload" in step["note"]
        assert len(_sacct_names(f"hf_upload__{cell}")) == 1  # never submitted twice
        waiting = _kept_hub_check(logs, f"delphi-{tag}/{cell}")  # the cell keeps the check, as a kernel attempt
        assert waiting.act == hub_act(f"sweep-local/{cell}") and waiting.outcome is Outcome.FAILED
    with hub_stub({model: ["config.json", "model.safetensors"]}) as hub:  # the upload landed
        env["HF_ENDPOINT"] = hub.url
        three = run_dag("sweep_hf_chain", {"dry_run": False}, logs, **env)
        step = next(s for s in three.values["advance"]["steps"] if s["cell"] == cell)
        assert (step["after"], step["submit"]) == ("eval", "eval")
        landed = _kept_hub_check(logs, f"delphi-{tag}/{cell}")  # the check the eval was submitted on
        assert landed.outcome is Outcome.OK and landed.run != waiting.run
        assert f"commit {HfApi(endpoint=hub.url).repo_info(f'sweep-local/{cell}').sha}" in landed.get("evidence")
        evals = _sacct_names(f"eval-{cell}")
        assert len(evals) == 1
        text = tracker.read_text()
        assert f"local:{evals[0]}" in text and "⏳" in text
        assert "| Other | untouched__cell | — | | | | · |" in text
        c.wait_finished(evals[0], "COMPLETED")
        harvest = run_dag("sweep_tracker_harvest", {"dry_run": False}, logs, **env)
        assert harvest.state == "success"
        assert "✅" in tracker.read_text() and "50.0" in tracker.read_text()
        four = run_dag("sweep_hf_chain", {"dry_run": False}, logs, **env)
        step = next(s for s in four.values["advance"]["steps"] if s["cell"] == cell)
        assert step["after"] == "done"
        five = run_dag("sweep_hf_chain", {"dry_run": False}, logs, **env)
        step = next(s for s in five.values["advance"]["steps"] if s["cell"] == cell)
        assert step["before"] == "done" and step["submit"] == ""
    assert len(_sacct_names(f"hf_upload__{cell}")) == 1 and len(_sacct_names(f"eval-{cell}")) == 1
    state = load_cells(logs)
    assert state[f"delphi-{tag}/{cell}"]["leg"] == "done"
    assert (
        state["other/earlier__cell"] == {"leg": "done", "sft_job": "7"} and Variable.get("sweep_hf_chain", None) is None
    )
    assert _git(repo, "status", "--porcelain") == ""
