"""The GPU probe end to end: a real sweep (dag.test) over real SSH runs the REAL `srun --jobid
--overlap nvidia-smi` against the local Slurm, whose node has the STUB nvidia-smi (recorded real
outputs, scripts/gpu_stub/); each job picks its profile. ONE SSH session still, the busy job's
utilisation in the RL table, the hung/idle jobs flagged, the error job and the hung probe unknown."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from lab import LAB_OPS
from sweep_runner import run_sweep

pytestmark = pytest.mark.cluster
STUB_JOBS = Path("/var/lib/sweep-gpu-stub/jobs")
LOOP = 'for i in $(seq 1 600); do echo "Training Step Progress: $i/600"; sleep 2; done'


def _ops(tmp_path: Path, timeout_s: int = 4) -> Path:
    ops = tmp_path / "ops"
    shutil.copytree(LAB_OPS / "local", ops / "local")
    md = ops / "local" / "ops.md"
    text = md.read_text()
    extra = f"gpu_probe: srun-overlap\ngpu_probe_max: 20\ngpu_probe_timeout_s: {timeout_s}\n"
    md.write_text(text.replace("gpu_mem_ceiling: 0.9\n", "gpu_mem_ceiling: 0.9\n" + extra, 1))
    return ops


def test_real_srun_overlap_probe_reads_utilisation_flags_idle_and_says_unknown(local_cluster, tag, tmp_path) -> None:
    if not shutil.which("nvidia-smi") or "STUB" not in Path(shutil.which("nvidia-smi")).read_text():
        pytest.skip("the stub nvidia-smi is not installed (scripts/local_cluster.sh gpu-stub)")
    c = local_cluster
    profiles = {"busy": "h100x8_busy", "hung": "h100x4_hung", "stale": "h100x2_idle", "err": "no_driver"}
    names = {
        "busy": f"rl__{tag}_busy",
        "hung": f"rl__{tag}_hung",
        "stale": f"sft__{tag}_idle",
        "err": f"eval-{tag}_nodriver",
        "slow": f"sft__{tag}_smihang",
        "cpu": f"pretokenize_{tag}",  # Catch-all: never probed
    }
    ids = {k: c.submit(n, LOOP if k != "stale" else "echo started; sleep 900") for k, n in names.items()}
    for k, p in {**profiles, "slow": "hang"}.items():
        (STUB_JOBS / ids[k]).write_text(p + "\n")
    try:
        c.wait_running(*ids.values())
        stale_log = c.wait_log(ids["stale"])
        subprocess.run(["touch", "-d", "3 hours ago", str(stale_log)], check=True)
        before = c.sshd_accepts("login01")

        run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path, ops_dir=_ops(tmp_path))
    finally:
        for i in ids.values():
            (STUB_JOBS / i).unlink(missing_ok=True)

    assert run.state == "success", run.task_states
    assert c.sshd_accepts("login01") - before == 1  # the probes ran inside the ONE gather session
    busy, hung, stale = run.job(names["busy"]), run.job(names["hung"]), run.job(names["stale"])
    assert busy.gpu["n_gpus"] == 8 and busy.gpu["min_util"] == 86 and busy.gpu["why"] == ""
    assert hung.gpu["n_gpus"] == 4 and hung.gpu["mean_util"] == 0 and not hung.stale
    rl = run.rendered["tables"]["RL"]
    busy_row = next(line for line in rl.splitlines() if names["busy"] in line)
    assert "GPU 96% (min 86%, 8" in busy_row
    text = run.report
    assert f"[gpu_mem_ceiling] WARN local RL {ids['busy']}" in text
    assert f"[gpu_idle] WARN local RL {ids['hung']}" in text and "suspected hang" in text
    assert stale.stale and f"[gpu_idle] CRITICAL local SFT {ids['stale']}" in text
    err, slow = run.job(names["err"]), run.job(names["slow"])
    assert err.gpu["mean_util"] is None and err.gpu["why"].startswith("probe exited 9: NVIDIA-SMI has failed")
    assert "GPU ?" in run.rendered["tables"]["Eval"]
    assert slow.gpu["why"] == "probe timed out after 4 s"
    assert run.job(names["cpu"]).gpu == {}
    assert f"[gpu_idle] WARN local Eval {ids['err']}" not in text


def test_accounting_source_asks_one_sstat_and_says_what_accounting_does_not_record(
    local_cluster, tag, tmp_path
) -> None:
    """ops.md gpu_probe: accounting on the bundled cluster (jobacct_gather/none: no gres/gpuutil
    recorded): the REAL sstat answers for every candidate in the same ONE session, each reads
    "GPU ?" with the reason, no srun step is started, and nothing is flagged idle."""
    c = local_cluster
    names = [f"rl__{tag}_acct{k}" for k in range(3)] + [f"pretokenize_{tag}_acct"]
    ids = [c.submit(n, LOOP) for n in names]
    c.wait_running(*ids)
    ops = _ops(tmp_path)
    md = ops / "local" / "ops.md"
    md.write_text(md.read_text().replace("gpu_probe: srun-overlap\n", "gpu_probe: accounting\n"))
    before = c.sshd_accepts("login01")
    run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path, ops_dir=ops)
    assert run.state == "success", run.task_states
    assert c.sshd_accepts("login01") - before == 1
    for name in names[:3]:
        gpu = run.job(name).gpu
        assert gpu["mean_util"] is None and gpu["why"].startswith("accounting records no gres/gpuutil"), gpu
    assert run.job(names[3]).gpu == {}  # Catch-all: not a candidate
    steps = subprocess.run(["squeue", "-h", "-s", "-o", "%i", "-j", ",".join(ids)], capture_output=True, text=True)
    assert not [s for s in steps.stdout.split() if s.split(".")[-1].isdigit()]  # no srun step was started
    assert "[gpu_idle]" not in run.report
    assert "GPU ?" in run.rendered["tables"]["RL"]
