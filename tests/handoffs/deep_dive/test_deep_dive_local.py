"""sweep_rl_deep_dive end to end with dag.test() on the bundled Slurm cluster: two real RL jobs print
WANDB_MIRROR lines and write rollout files under the ops.md artifact root; run by hand, the DAG
says KILL with the evidence for the all-reward-0 run (empty rollouts too) and triggers sweep_cancel
with it (the run exists; the approval is not answered here), NO-KILL with a watch signal for the
healthy one; both verdicts land in the run log and the ledger."""

from __future__ import annotations

from pathlib import Path

import pytest
from lab import HOME, LAB_OPS
from sweep_runner import run_dag, run_sweep

from sweep_core.history.rows import JOB
from sweep_core.history.store import HistoryStore
from sweep_core.ledger.store import load_ledger

pytestmark = pytest.mark.cluster
ART = f"{HOME}/jobs/artifacts"


def _rl_job(c, name: str, reward: str, response: str, steps: int) -> str:
    """A job that writes its rollouts, prints one WANDB_MIRROR line per step, then keeps running."""
    d = f"{ART}/$SLURM_JOB_NAME/trace_jobs"
    script = (
        f'mkdir -p {d}; for i in $(seq 1 8); do echo \'{{"response": "{response}"}}\'; done > {d}/rollouts_0001.jsonl; '
        f'for s in $(seq 1 {steps}); do echo "Training Step Progress: $s/100"; '
        f'echo "WANDB_MIRROR {{\\"trainer/global_step\\": $s, \\"reward/mean\\": {reward}}}"; done; sleep 600'
    )
    return c.submit(name, script)


def test_by_hand_kill_reaches_sweep_cancel_and_no_kill_names_its_watch(local_cluster, tag, tmp_path) -> None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    c = local_cluster
    dead, good = f"rl__{tag}_dead", f"rl__{tag}_good"
    ids = {dead: _rl_job(c, dead, "0.0", "", 12), good: _rl_job(c, good, "0.$s", "The answer is 42.", 6)}
    c.wait_running(*ids.values())
    for jid in ids.values():
        c.wait_log(jid)
    jobs = [{"cluster": "local", "job_id": ids[n], "name": n} for n in (dead, good)]
    run = run_dag("sweep_rl_deep_dive", {"jobs": jobs, "dry_run": False}, tmp_path)
    assert run.state == "success", run.task_states
    verdicts = {v["name"]: v for v in run.values["probe"]["verdicts"]}

    k = verdicts[dead]
    assert k["verdict"] == "KILL", k
    assert k["evidence"][:2] == [
        "reward 0.0 on all 12 logged steps since step 1",
        "rollouts are empty strings (8/8 newest)",
    ]
    assert any(u.startswith("GPU utilisation unknown") for u in k["unknown"])  # not probed: said, not 0 %
    n = verdicts[good]
    assert n["verdict"] == "NO-KILL", n
    assert n["watch"][0] == "watch reward_mean < 0.05"
    assert "reward 0.6 at step 6 (6 steps logged)" in n["evidence"]
    assert "rollouts have text (8/8 newest non-empty)" in n["evidence"]

    # KILL -> a sweep_cancel run with the evidence (its approve step asks a human; not answered here)
    assert run.task_states["trigger_cancel"] == "success" and run.task_states["no_kill"] == "skipped"
    with create_session() as s:
        conf = (
            s.query(DagRun).filter(DagRun.dag_id == "sweep_cancel", DagRun.run_id == f"{run.run_id}__cancel").one().conf
        )
    assert conf["dry_run"] is False
    assert conf["jobs"] == [
        {
            "cluster": "local",
            "job_id": ids[dead],
            "name": dead,
            "rule": "deep_dive_kill",
            "severity": "critical",
            "action": "kill-approval",
            "evidence": f"[deep_dive_kill] KILL verdict on {k['basis']}: " + "; ".join(k["evidence"]),
        }
    ]

    # the verdicts in the run log and the ledger (the next sweep's row Note reads it)
    text = Path(run.values["record"]).read_text()
    print("\nRUN LOG of the deep-dive (pytest -s shows it):\n" + text)
    assert "Hand-off sweep_rl_deep_dive" in text and f"{dead}: KILL" in text and f"{good}: NO-KILL" in text
    ledger = load_ledger(tmp_path)
    assert ledger.jobs[f"local|{ids[dead]}"].deep_dive.endswith(
        "Z KILL: reward 0.0 on all 12 logged steps since step 1"
    )
    assert ledger.jobs[f"local|{ids[good]}"].deep_dive.endswith("Z NO-KILL, watch reward_mean < 0.05")

    # the next sweep: each verdict in its row's Note and in that sweep's Parquet history rows
    sweep = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    assert sweep.state == "success", sweep.task_states
    assert sweep.job(dead).metrics["deep_dive"].startswith(ledger.jobs[f"local|{ids[dead]}"].deep_dive)
    assert "deep-dive" in sweep.rendered["tables"]["RL"]
    rows = HistoryStore(tmp_path / "history").read(records=[JOB])
    said = dict(zip(rows["name"], rows["m.deep_dive"], strict=True))
    assert said[dead].endswith("Z KILL: reward 0.0 on all 12 logged steps since step 1")
    assert said[good].endswith("Z NO-KILL, watch reward_mean < 0.05")


def test_gpus_idle_while_the_log_advances_is_a_kill_with_the_real_srun_probe(local_cluster, tag, tmp_path) -> None:
    """ops.md gpu_probe: srun-overlap: the deep-dive's ONE session runs the REAL `srun --jobid --overlap
    nvidia-smi`; the node's STUB nvidia-smi prints a recorded idle 4×H100 (memory held, 0 %)."""
    import shutil

    if not shutil.which("nvidia-smi") or "STUB" not in Path(shutil.which("nvidia-smi")).read_text():
        pytest.skip("the stub nvidia-smi is not installed (scripts/local_cluster.sh gpu-stub)")
    c = local_cluster
    name = f"rl__{tag}_starved"
    jid = c.submit(name, 'for s in $(seq 1 600); do echo "Training Step Progress: $s/600"; sleep 2; done')
    stub = Path("/var/lib/sweep-gpu-stub/jobs") / jid
    stub.write_text("h100x4_hung\n")
    ops = tmp_path / "ops"
    shutil.copytree(LAB_OPS / "local", ops / "local")
    md = ops / "local" / "ops.md"
    md.write_text(md.read_text().replace("gpu_mem_ceiling: 0.9\n", "gpu_mem_ceiling: 0.9\ngpu_probe: srun-overlap\n"))
    try:
        c.wait_running(jid)
        c.wait_log(jid)
        run = run_dag("sweep_rl_deep_dive", {"jobs": [{"cluster": "local", "job_id": jid, "name": name}]}, tmp_path,
                      ops_dir=ops)  # fmt: skip
    finally:
        stub.unlink(missing_ok=True)
    assert run.state == "success", run.task_states
    (v,) = run.values["probe"]["verdicts"]
    assert v["verdict"] == "KILL", v
    assert any(e.startswith("GPU util 0 % on 4/4 GPUs while the log advances") for e in v["evidence"]), v
