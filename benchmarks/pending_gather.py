"""The gather's cost of the PENDING listing with expected starts (issue 14): 200 RUNNING + 200
PENDING jobs on the bundled local cluster, the real gather with the old pending line (squeue -t
PENDING, the RUNNING format) and the new one (squeue --start, the pending format), alternated.
Prints SSH sessions and gather wall seconds of each. Usage: source scripts/env.sh && python
benchmarks/pending_gather.py [rounds]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from ssh_sessions import USER, accepted, running_count, setup

OLD = 'run pending squeue -u "$U" -t PENDING -o "$SQUEUE_FORMAT"'
NEW = 'run pending env SLURM_TIME_FORMAT=%s squeue --start -u "$U" -t PENDING -o "$PENDING_FORMAT"'


def sbatch(*args: str) -> None:
    subprocess.run(["runuser", "-u", USER, "--", "sbatch", *args], check=True, capture_output=True)


def main(rounds: int) -> None:
    import sweep_operators.slurm_gather as sg

    build = sg.build_gather_script
    cfg, limits, start, end = setup()
    log = f"/home/{USER}/jobs/logs/bench-%A_%a.out"
    loop = "while true; do echo Training Step Progress: 1/9; sleep 5; done"
    sbatch("-J", "rl__bench", "--array=1-200", "-t", "15", "-o", log, "--wrap", loop)
    for i in range(200):  # one row each (a pending array would be one squeue row)
        sbatch("-J", f"rl__bench_next{i}", "-H", "-t", "15", "-o", log, "--wrap", "true")
    deadline = time.time() + 180
    while running_count() < 200 and time.time() < deadline:
        time.sleep(1)
    walls: dict[str, list[float]] = {"old": [], "new": []}
    print("variant  ssh_sessions  gather_s  running  pending")
    try:
        for _ in range(rounds):
            for variant, line in (("old", OLD), ("new", NEW)):

                def patched(req, marker=None, line=line):
                    script, m = build(req, marker)
                    assert NEW in script
                    return script.replace(NEW, line), m

                sg.build_gather_script = patched
                b1, b2 = accepted("login01"), accepted("login02")
                t0 = time.perf_counter()
                snap = sg.gather_slurm(cfg, limits, start, end)
                took = time.perf_counter() - t0
                sessions = accepted("login01") - b1 + accepted("login02") - b2
                walls[variant].append(took)
                pend = "UNKNOWN" if snap.pending is None else len(snap.pending)
                print(f"{variant:>7}  {sessions:>12}  {took:>8.2f}  {len(snap.running or []):>7}  {pend!s:>7}")
    finally:
        sg.build_gather_script = build
        subprocess.run(["runuser", "-u", USER, "--", "scancel", "-u", USER], check=False)
    for variant, w in walls.items():
        print(f"{variant}: median {statistics.median(w):.2f} s over {len(w)} gathers")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
