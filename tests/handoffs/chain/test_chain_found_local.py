"""Any enable_db_registration: false series is chained (issue 41), end to end on the real local Slurm:
the sweep reads a completed SFT job's launch YAML (its log banner names it), hands the job, listed by
no series, to sweep_hf_chain (conf ``found``), and the chain submits its HF upload (hf_chain.found,
no DB registration) as a real sbatch job, once; the hub is the STUB (tests/hf_hub_stub.py)."""

from __future__ import annotations

import subprocess

import pytest
import yaml
from hf_hub_stub import hub_stub
from lab import HOME, LAB_CONFIG, USER
from sweep_runner import run_dag
from test_hf_chain_local import _sacct_names

pytestmark = pytest.mark.cluster


def test_an_unlisted_hf_only_completion_is_found_by_the_sweep_and_uploaded_by_the_chain(
    local_cluster, tag, tmp_path
) -> None:
    from airflow.models.variable import Variable

    c = local_cluster
    conf_dir = HOME / "launch" / tag
    subprocess.run(["runuser", "-u", USER, "--", "mkdir", "-p", str(conf_dir)], check=True)
    script = f"printf 'sft:\\n  enable_db_registration: false\\n' > {conf_dir}/hf.yaml"
    subprocess.run(["runuser", "-u", USER, "--", "bash", "-c", script], check=True)
    name = f"sft__{tag}_hfonly"
    sft = c.submit(name, f"echo 'Loading config from {conf_dir}/hf.yaml'; echo 'Step 10/10'")
    c.wait_finished(sft, "COMPLETED")
    c.wait_windowed(sft)
    cfg = yaml.safe_load(LAB_CONFIG.read_text())  # the lab's: no series names this job
    cfg["hf_chain"]["found"] = {
        "upload": ["sbatch", "--parsable", "-J", "hf_upload__{cell}", "--wrap", "echo uploading {hub_repo}"]
    }
    conf_path = tmp_path / "sweep.yaml"
    conf_path.write_text(yaml.safe_dump(cfg))
    env = {"SWEEP_CONFIG": str(conf_path)}
    logs = tmp_path / "logs"
    sweep = run_dag("monitor_cron_sweep", {"clusters": ["local"], "lookback_hours": 0.25}, logs, **env)
    assert sweep.state == "success", sweep.task_states
    found = (sweep.values["handoffs"].get("hf_chain") or {}).get("found") or []
    assert {"cluster": "local", "job_id": sft, "name": name} in found, sweep.values["handoffs"].get("hf_chain")
    Variable.delete("sweep_hf_chain")
    try:
        with hub_stub({}) as hub:
            env["HF_ENDPOINT"] = hub.url
            conf = {"dry_run": False, "found": found}
            one = run_dag("sweep_hf_chain", conf, logs, **env)
            assert one.state == "success", one.task_states
            step = next(s for s in one.values["advance"]["steps"] if s["cell"] == name)
            assert (step["series"], step["submit"]) == ("found@local", "upload")
            (upload,) = _sacct_names(f"hf_upload__{name}")
            two = run_dag("sweep_hf_chain", conf, logs, **env)  # the same hand-off again: adopted, not resubmitted
            step = next(s for s in two.values["advance"]["steps"] if s["cell"] == name)
            assert step["submit"] == "" and _sacct_names(f"hf_upload__{name}") == [upload]
    finally:
        Variable.delete("sweep_hf_chain")
