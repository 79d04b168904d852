"""CoreWeave gather on a REAL iris controller (marin-iris local backend on 127.0.0.1): jobs land
in the sweep's buckets with the right states; a dead controller is UNKNOWN, SLURM still renders.
Pod counts go through the real KubernetesHook against the STUB pod-list endpoint (k8s_stub)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import time
from pathlib import Path

import pytest
from iris_local import IRIS_PY, free_port, iris_ops, needs_iris, submit, wait_states
from k8s_stub import PodListStub, kubeconfig, pod
from lab import LAB_OPS, USER
from sweep_runner import ROOT, run_sweep

from sweep_core.config.ops import parse_ops_text
from sweep_core.records.models import ClusterStatus

pytestmark = needs_iris


@pytest.mark.cluster  # it uses the local Slurm (local_cluster cancels ALL the sweep user's jobs): under the lock only
def test_iris_jobs_in_buckets_and_a_dead_controller_is_unknown(local_cluster, controller, tag, tmp_path) -> None:
    url, run = controller
    rl = submit(url, run, f"rl__{tag}_sleep", "echo 'Training Step Progress: 3/50'; sleep 300")
    sft = submit(url, run, f"sft__{tag}_fail", "echo 'RuntimeError: loader died' >&2; exit 1")
    ev = submit(url, run, f"eval-{tag}_ok", "echo '50/50 trials, pass_rate=0.5'; exit 0")
    wait_states(url, run, {rl: "RUNNING", sft: "FAILED", ev: "SUCCEEDED"})
    slurm_job = local_cluster.submit(f"rl__{tag}_slurm", "sleep 300")
    local_cluster.wait_running(slurm_job)

    ops = tmp_path / "ops"
    shutil.copytree(LAB_OPS / "local", ops / "local")
    shutil.copytree(ROOT / "include" / "ops" / "coreweave", ops / "coreweave")  # shipped: fields unset
    iris_ops(ops, "cwlocal", url, run)
    iris_ops(ops, "cwdown", f"http://127.0.0.1:{free_port()}", run)
    t0 = time.time()
    result = run_sweep({"lookback_hours": 0.25}, tmp_path, ops_dir=ops)
    assert result.state == "success", result.task_states
    assert time.time() - t0 < 240

    cw = result.snapshots["cwlocal"]
    assert cw.status == ClusterStatus.OK and cw.scheduler == "iris" and cw.login_node == "iris client"
    running = result.job(f"rl__{tag}_sleep")
    assert running.bucket == "RL" and running.state == "RUNNING" and running.source == "squeue"
    assert running.metrics["step"] == 3 and running.minutes_since_output is not None
    failed = result.job(f"sft__{tag}_fail")
    assert failed.bucket == "SFT" and failed.state == "FAILED" and failed.exit_code == "1:0"
    assert result.job(f"eval-{tag}_ok").state == "COMPLETED"
    assert "pod counts not configured" in " ".join(cw.notes)
    assert f"[genuine_failure] CRITICAL cwlocal SFT /sweep/sft__{tag}_fail" in result.report

    down = result.snapshots["cwdown"]
    assert down.status == ClusterStatus.UNKNOWN and down.running is None
    assert "UNAVAILABLE" in down.notes[0] or "Connection refused" in down.notes[0]
    shipped = result.snapshots["coreweave"]  # per-cluster, not a failed run (issue 17)
    assert shipped.status == ClusterStatus.UNCONFIGURED
    assert f"[cluster-unconfigured] coreweave: {ops}/coreweave/ops.md: field 'iris_python' is unset" in (result.report)
    assert result.snapshots["local"].status == ClusterStatus.OK
    assert result.job(f"rl__{tag}_slurm").state == "RUNNING"
    # said once, in the overview, not as a row in every bucket table (issue 18)
    assert "cwdown" in result.rendered["overview"] and "cwdown" not in result.rendered["tables"]["RL"]


@pytest.mark.parametrize("source", ["kubeconfig file", "kubernetes Connection"])
def test_running_with_zero_pods_is_terminal(controller, tag, tmp_path, monkeypatch, source) -> None:
    """The pods' cluster named by a kubeconfig file + context, or (Helm: a Secret, no mounted file)
    by ops.md kube_conn_id alone: a ``kubernetes`` Connection (AIRFLOW_CONN_<ID>) holding the
    kubeconfig inline and the context."""
    from sweep_operators.iris_gather import gather_iris

    url, run = controller
    alive = submit(url, run, f"rl__{tag}_alive", "sleep 300")
    wedged = submit(url, run, f"rl__{tag}_wedge", "sleep 300")
    wait_states(url, run, {alive: "RUNNING", wedged: "RUNNING"})
    with (
        PodListStub({"iris": [pod(f"sweep.rl__{tag}_alive", "p0", gated=True)]}) as cw,
        PodListStub({"iris": [pod(f"sweep.rl__{tag}_wedge", "x")]}) as other,
    ):
        kc = kubeconfig(tmp_path / "kc", {"cw": cw.url, "laptop": other.url}, current="laptop")
        if source == "kubeconfig file":
            keys = f"kubeconfig: {kc}\nkube_context: cw\n"
        else:
            conn = {"conn_type": "kubernetes", "extra": {"kube_config": kc.read_text(), "cluster_context": "cw"}}
            monkeypatch.setenv(f"AIRFLOW_CONN_CW_KUBE_{tag.upper()}", json.dumps(conn))
            keys = f"kube_conn_id: cw_kube_{tag}\n"
        iris_ops(tmp_path, "cw", url, run, keys + "kube_namespace: iris\n")
        cfg = parse_ops_text((tmp_path / "cw" / "ops.md").read_text(), tmp_path / "cw" / "ops.md", "cw")
        end = dt.datetime.now(dt.UTC)
        snap = gather_iris(cfg, end - dt.timedelta(hours=1), end)
    assert not other.requests  # the default context (another cluster) was never asked
    by_name = {j.name: j for j in snap.all_jobs()}
    assert by_name[f"rl__{tag}_alive"].state == "RUNNING"
    assert "Kueue gang admission" in by_name[f"rl__{tag}_alive"].reason
    gone = by_name[f"rl__{tag}_wedge"]
    assert gone.state == "WEDGED" and gone.source == "sacct" and "iris RUNNING, 0 pods" in gone.reason


def test_cli_fallback_reads_the_same_jobs(controller, tag) -> None:
    from sweep_operators.iris_hook import IrisHook

    url, run = controller
    job = submit(url, run, f"sft__{tag}_cli", "sleep 120")
    wait_states(url, run, {job: "RUNNING"})
    binary = str(Path(IRIS_PY).with_name("iris"))
    hook = IrisHook(url=url, user=USER, binary=binary, home=str(run), timeout_s=60)
    jobs, _ = hook.poll()
    assert hook.source == "iris CLI"
    found = {j.job_id: j for j in jobs}
    assert found[job].state == "RUNNING" and found[job].tasks and found[job].tasks[0].task_id.endswith("/0")


def test_a_past_window_reads_the_controllers_times_and_asks_no_pods_or_logs(
    controller, tag, tmp_path, monkeypatch
) -> None:
    """A backfill on the real controller: a window that ended before the jobs started lists none
    of them; one that ended while the long job ran lists it RUNNING as it was then, its later
    pod count (0: would be a wedge today) and its log never asked for."""
    from sweep_operators.iris_gather import gather_iris

    url, run = controller
    before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=2)
    long = submit(url, run, f"rl__{tag}_past", "echo 'Training Step Progress: 7/50'; sleep 300")
    short = submit(url, run, f"eval-{tag}_past", "echo '5/5 trials'; exit 0")
    wait_states(url, run, {long: "RUNNING", short: "SUCCEEDED"})
    time.sleep(1.5)
    after = dt.datetime.now(dt.UTC)
    monkeypatch.setenv("SWEEP_PAST_WINDOW_GRACE_S", "0")  # both windows ended before now
    with PodListStub({"iris": []}) as cw:  # today: 0 pods everywhere
        kc = kubeconfig(tmp_path / "kc", {"cw": cw.url}, current="cw")
        iris_ops(tmp_path, "cw", url, run, f"kubeconfig: {kc}\nkube_context: cw\nkube_namespace: iris\n")
        cfg = parse_ops_text((tmp_path / "cw" / "ops.md").read_text(), tmp_path / "cw" / "ops.md", "cw")
        earlier = gather_iris(cfg, before - dt.timedelta(hours=1), before)
        later = gather_iris(cfg, before, after)
    assert not cw.requests  # a past window asks Kubernetes nothing
    assert earlier.status == ClusterStatus.OK
    assert not {j.job_id for j in earlier.all_jobs()} & {long, short}  # they started after that window
    by_id = {j.job_id: j for j in later.all_jobs()}
    assert by_id[long].state == "RUNNING" and "now iris RUNNING" in by_id[long].note
    assert by_id[long].log_tail == "" and "past window" in by_id[long].log_note
    assert by_id[short].state == "COMPLETED" and by_id[short].exit_code == "0:0"
    assert any("past window: read from the controller's job times" in n for n in later.notes)
