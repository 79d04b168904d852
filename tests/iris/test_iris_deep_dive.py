"""The RL deep-dive on CoreWeave (iris) against a REAL local iris controller (marin-iris local
backend on 127.0.0.1): the job's WHOLE log since submission (paged through FetchLogs, far past any
tail), its rollouts where ops.md rollout_url reaches them (a local dir here), its pods through the
real KubernetesHook against the STUB pod-list endpoint (tests/k8s_stub.py: no Kubernetes runs here,
so the nvidia-smi exec in a pod is refused by the stub and GPU utilisation is unknown, with why)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from iris_local import iris_ops, needs_iris, stop_all, submit, wait_states
from k8s_stub import PodListStub, kubeconfig, pod

from sweep_core.config.ops import load_cluster
from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.handoffs.deep_dive.plan import KILL, NO_KILL
from sweep_core.handoffs.deep_dive.usecase import deep_dive

pytestmark = needs_iris
ROOT = Path(__file__).resolve().parents[2]

HEALTHY_TEXTS = [
    "We need the sum of the first 10 positive integers. Using n(n+1)/2 with n = 10 gives 55. The answer is 55.",
    "The function should return the reversed list. I will iterate from the end and append each item to a new list.",
    "First, compute the derivative of x^2 + 3x, which is 2x + 3. Setting it to zero gives x = -1.5, the minimum.",
    "To solve the task I list the files in the repository, open the failing test and read the assertion it makes.",
    "The probability of drawing two red balls is (5/10) * (4/9) = 2/9, since the first ball is not replaced.",
    "Let me check the edge case of an empty input: the loop never runs, so the function returns zero as expected.",
]


def _steps(reward: str, n: int = 12) -> str:
    """Shell that prints n training steps with the given reward (a shell expression of $i)."""
    return (
        f'for i in $(seq 1 {n}); do echo "Training Step Progress: $i/50"; '
        f'echo "WANDB_MIRROR {{\\"trainer/global_step\\": $i, \\"reward/mean\\": {reward}}}"; done; '
    )


FILLER = 'for i in $(seq 1 2500); do echo "rollout worker heartbeat $i"; done; '
# then alive: the local worker reads one buffered line per pipe event (select + readline), so a burst's
# last lines reach the log store only with the job's next write; a beat every 2 s ships them (a job
# that printed nothing after its burst held them until its end: the test waited out a `sleep 300`)
BEAT = 'while true; do sleep 2; echo "rollout worker heartbeat"; done'


def _wait_logged(url: str, run: Path, job_id: str, lines: int, timeout: float = 300) -> None:
    """Until the controller's log store holds ``lines`` lines of the job (BEAT above). A condition
    wait: 300 s only bounds it (the worker ships slowly while the other test runs share the cores)."""
    from iris_local import IRIS_PY

    from sweep_operators.iris_hook import IrisHook

    hook = IrisHook(url=url, user="sweep", python=IRIS_PY, home=str(run), timeout_s=30)
    end = time.time() + timeout
    while time.time() < end:
        if sum(1 for ev in hook.stream_logs([job_id], 30) if "l" in ev) >= lines:
            return
        time.sleep(1)
    raise AssertionError(f"{job_id} never logged {lines} lines")


def _rollouts(root: Path, name: str) -> None:
    d = root / name
    d.mkdir(parents=True)
    (d / "rollouts_000.jsonl").write_text("".join(json.dumps({"response": t}) + "\n" for t in HEALTHY_TEXTS))


def _probe(ops: Path, cluster: str, jobs: list[dict[str, str]]) -> dict[str, dict]:
    from sweep_operators.deep_dive_iris import iris_probe

    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    mcfg = metrics_config(config.metrics)
    dd = config.deep_dive.model_copy(update={"log_bytes": 4096})  # a tail of ~150 lines: the rest is streamed past

    def no_ssh(*_: object) -> None:
        raise AssertionError("an iris job must not be probed over SSH")

    got = deep_dive(
        jobs,
        dd,
        mcfg,
        load_cluster=lambda name: load_cluster(ops, name),
        run_script=no_ssh,  # type: ignore[arg-type]
        iris_probe=lambda cfg, todo: iris_probe(cfg, todo, dd, mcfg, log_timeout_s=120),
    )
    return {v["name"]: v for v in got["verdicts"]}


def test_coreweave_rl_gets_real_verdicts_from_the_whole_log(controller, tag, tmp_path) -> None:
    url, run = controller
    dead, ok = f"rl__{tag}_reward0", f"rl__{tag}_healthy"
    # the reward-0 collapse is logged FIRST, then 2500 lines (two pages of FetchLogs): far past any tail
    dead_id = submit(url, run, dead, _steps("0.0") + FILLER + BEAT)
    ok_id = submit(url, run, ok, _steps("0.$((30 + i))") + FILLER.replace("2500", "200") + BEAT)
    try:
        wait_states(url, run, {dead_id: "RUNNING", ok_id: "RUNNING"})
        ro = tmp_path / "rollouts"
        _rollouts(ro, ok)
        _rollouts(ro, dead)
        with PodListStub({"iris": [pod(f"sweep.{dead}", "dead-p0"), pod(f"sweep.{ok}", "ok-p0")]}) as k8s:
            kc = kubeconfig(tmp_path / "kc", {"cw": k8s.url}, current="cw")
            extra = f"rollout_url: {ro}/{{name}}\ngpu_exec: true\nkubeconfig: {kc}\nkube_context: cw\n"
            iris_ops(tmp_path / "ops", "cw", url, run, extra)
            _wait_logged(url, run, dead_id, 2200)
            _wait_logged(url, run, ok_id, 100)
            verdicts = _probe(
                tmp_path / "ops",
                "cw",
                [{"cluster": "cw", "job_id": dead_id, "name": dead}, {"cluster": "cw", "job_id": ok_id, "name": ok}],
            )
        exec_asked = [r for r in k8s.requests if "/exec" in r]
    finally:
        stop_all(url, run)

    v = verdicts[dead]
    assert v["verdict"] == KILL and v["basis"] == "one strong signal (all-reward-0)", v
    assert "reward 0.0 on all 12 logged steps since step 1" in v["evidence"][0]
    whole = next(e for e in v["evidence"] if e.startswith("log read whole:"))
    assert int(whole.split()[3]) >= 2200  # every line since submission (two FetchLogs pages), not a tail
    assert exec_asked  # the pod's GPUs were asked through an exec, the stub refused it
    assert any(
        u.startswith("GPU utilisation unknown (nvidia-smi exec in pod dead-p0: exec refused") for u in v["unknown"]
    )

    h = verdicts[ok]
    assert h["verdict"] == NO_KILL, h
    assert any(e.startswith("reward 0.42 at step 12") for e in h["evidence"]), h["evidence"]
    assert any(e.startswith("rollouts have text (6/6 newest non-empty)") for e in h["evidence"])
    assert h["watch"][0].startswith("watch reward_mean <") and any("garbage rollout" in w for w in h["watch"])


def test_unreachable_rollouts_and_no_exec_are_unknown_not_healthy(controller, tag, tmp_path) -> None:
    url, run = controller
    name = f"rl__{tag}_bare"
    jid = submit(url, run, name, _steps("0.5", 3) + BEAT)
    try:
        wait_states(url, run, {jid: "RUNNING"})
        iris_ops(tmp_path / "ops", "cw", url, run)  # shipped defaults: no rollout_url, gpu_exec false
        v = _probe(tmp_path / "ops", "cw", [{"cluster": "cw", "job_id": jid, "name": name}])[name]
    finally:
        stop_all(url, run)
    assert v["verdict"] == NO_KILL
    assert any("rollout_url is unset" in u for u in v["unknown"])
    assert any("gpu_exec is false" in u for u in v["unknown"])
