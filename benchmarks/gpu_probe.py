"""What the GPU probe (ops.md gpu_probe: srun-overlap, issue 15 §1) adds to one sweep's gather on
the bundled cluster: N RUNNING jobs (benchmarks/gather.py's mix: rl__/sft__/eval-/datagen__, +N/5
ended), the same gather script with gpu_probe none, srun-overlap and accounting (ONE sstat) at
gpu_probe_max = P.
Every job's stub nvidia-smi (scripts/gpu_stub/) answers the busy 8-GPU profile. Prints wall
(median), login-node CPU, processes (strace -f), slurmctld RPCs by user (sdiag -r, then sdiag),
SSH sessions; the difference is the probe's cost.

Holds the cluster: run ONLY under the lock, it cancels every job of user sweep:
    source scripts/env.sh && flock /tmp/sweep-cluster.lock python benchmarks/gpu_probe.py [200] [20]
The N + N/5 jobs it ends sit in every sweep window of the next ~15 min (tests with a 0.25 h
lookback may pass max_finished_logs then): run it when nobody else tests.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gather import LOGS, USER, cancel_all, count, ended, measure, sh, submit, wait_until  # noqa: E402

from sweep_core.config.sweep import load_sweep_config  # noqa: E402
from sweep_core.gpu.probe import gpu_patterns  # noqa: E402
from sweep_core.slurm.gather import GatherRequest, build_gather_script, parse_gather_output  # noqa: E402

STUB_JOBS = Path("/var/lib/sweep-gpu-stub/jobs")
ROOT = Path(__file__).resolve().parents[1]


def main(n: int, probes: int) -> None:
    if "STUB" not in Path("/usr/local/bin/nvidia-smi").read_text(errors="replace"):
        raise SystemExit("the stub nvidia-smi is not installed: scripts/local_cluster.sh gpu-stub")
    pats = gpu_patterns(load_sweep_config(ROOT / "include" / "sweep.yaml").buckets)
    tag = f"g{n}"
    lines = [
        f"| N={n} RUNNING | gpu_probe | wall s (median of 3) | login-node CPU s | processes | RPCs | SSH sessions | probes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    try:
        cancel_all()
        t_start = int(time.time()) - 60
        submit(n, tag)
        wait_until(f"{n} RUNNING", lambda: count("squeue", "-h", "-u", USER, "-t", "RUNNING") >= n)
        for jid in sh("squeue", "-h", "-u", USER, "-t", "RUNNING", "-o", "%i").split():
            (STUB_JOBS / jid).write_text("h100x8_busy\n")
        time.sleep(5)
        end = int(time.time()) - 1
        wait_until("ended jobs in the windowed sacct", lambda: ended(tag) >= max(1, n // 5))
        req = GatherRequest(user=USER, window_start=t_start, window_end=end, settle_s=0, max_jobs=5000,
                            max_finished_logs=5000, max_arrays=5000, log_pattern=str(LOGS / "%x-%j.out"),
                            gpu_patterns=pats, gpu_max=probes, gpu_timeout_s=20)  # fmt: skip
        for mode in ("none", "srun-overlap", "accounting"):
            script, marker = build_gather_script(dataclasses.replace(req, gpu_probe=mode))
            r = measure(script, marker, 3)
            from gather_reference import run_on_login01  # the same login01 runner measure() uses

            out = parse_gather_output(run_on_login01(script).stdout, marker)
            ok = sum(1 for k, v in out.records.items() if k.startswith("gpu:") and v.rc == 0)
            done = sum(1 for k in out.records if k.startswith("gpu:"))
            if (acct := out.get("gpuacct")) is not None:  # ONE sstat for all candidates
                done, ok = min(probes, len(out.get("gpucand").stdout.splitlines())), int(acct.rc == 0)
            lines.append(f"| {n} | {mode} | {statistics.median(r.walls):.2f} | {r.cpu:.2f} | {r.processes} | "
                         f"{r.rpcs} | {r.sessions} | {done} ({ok} read) |")  # fmt: skip
            print(lines[-1], flush=True)
    finally:
        cancel_all()
        for f in STUB_JOBS.iterdir():
            f.unlink()
        for f in LOGS.glob(f"*{tag}_*"):
            f.unlink()
    print("\n".join(lines))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200, int(sys.argv[2]) if len(sys.argv) > 2 else 20)
