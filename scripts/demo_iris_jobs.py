"""DEMO: put a few example jobs on the bundled local iris controller (scripts/local_iris.sh) and wait
until they run: stops the user's earlier jobs first, then submits an RL run printing steps and
rewards, an SFT run printing its loss, and an eval that dies with a traceback.
Run by the iris venv's python. Usage: demo_iris_jobs.py URL USER"""

import sys
import time

from iris.client.client import IrisClient
from iris.cluster.types import Entrypoint, JobName, ResourceSpec
from iris.rpc import job_pb2

RL = (
    'for i in $(seq 1 900); do echo "Training Step Progress: $i/900"; '
    'echo "WANDB_MIRROR {\\"trainer/global_step\\": $i, \\"trainer/max_steps\\": 900, \\"reward/mean\\": 0.5$((i % 10))}"; '
    "sleep 2; done"
)
SFT = (
    'echo "  Total optimization steps = 1,875"; for i in $(seq 1 900); do echo " $i/1875 [00:10<03:40, 2.7s/it]"; '
    "echo \"{'loss': 0.7$((i % 10)), 'grad_norm': 1.4, 'epoch': 0.1}\"; sleep 2; done"
)
EVAL = (
    'echo "trial 1: started"; echo "Traceback (most recent call last):"; '
    'echo "  File \\"run_eval.py\\", line 9, in <module>"; echo "KeyError: model_name"; exit 1'
)
JOBS = {"rl__demo_cw_grpo_llama8b": RL, "sft__demo_cw_cell7": SFT, "eval-demo_cw_aime": EVAL}


def main() -> int:
    url, user = sys.argv[1:3]
    client = IrisClient.remote(url, timeout_ms=5000)
    for j in client.list_jobs(prefix=f"/{user}/"):
        try:
            client.terminate(JobName.from_wire(j.job_id))
        except Exception:  # already ended
            pass
    for name, command in JOBS.items():
        client.submit(Entrypoint.from_command("bash", "-c", command), name, ResourceSpec(cpu=0.5, memory="256m"),
                      user=user)  # fmt: skip
    want = {f"/{user}/{n}" for n in JOBS}
    deadline, seen = time.time() + 120, {}
    while time.time() < deadline:
        seen = {j.job_id: job_pb2.JobState.Name(j.state) for j in client.list_jobs(prefix=f"/{user}/")}
        started = {k for k in want if seen.get(k) not in (None, "JOB_STATE_PENDING", "JOB_STATE_UNSCHEDULABLE")}
        if started == want:
            print("[demo] iris jobs: " + ", ".join(f"{k} {seen[k]}" for k in sorted(want)))
            return 0
        time.sleep(1)
    print(f"[demo] iris jobs did not start in 120 s: {seen}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
