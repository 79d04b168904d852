"""One CoreWeave (iris) gather's time against the REAL local iris controller (marin-iris local
backend, tests/iris_local.py): N jobs (default 20: RL printing metrics, SFT, eval, datagen, a
third of them ended), then `gather_iris` (the operator's whole poll: job list, tasks, the log
since the window start bounded in bytes) timed 5 times; prints min / median / max and the jobs seen.

    source scripts/env.sh && python benchmarks/iris_gather.py [20]
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from iris_local import iris_ops, start_controller, submit, wait_states  # noqa: E402

from sweep_core.config.ops import parse_ops_text  # noqa: E402
from sweep_operators.iris_gather import gather_iris  # noqa: E402

LOOP = 'for i in $(seq 1 900); do echo "Training Step Progress: $i/900"; sleep 1; done'


def main(n: int) -> None:
    run = Path(tempfile.mkdtemp(prefix="iris-bench-"))
    (run / "tmp").mkdir()
    proc, url = start_controller(run)
    try:
        kinds = ("rl__b{k}", "sft__b{k}", "eval-b{k}", "datagen__b{k}")
        want = {}
        for k in range(n):
            name = kinds[k % 4].format(k=k)
            ended = k % 3 == 2
            jid = submit(url, run, name, "echo '5/5 trials'; exit 0" if ended else LOOP)
            want[jid] = "SUCCEEDED" if ended else "RUNNING"
        wait_states(url, run, want)
        iris_ops(run / "ops", "cw", url, run)
        cfg = parse_ops_text((run / "ops" / "cw" / "ops.md").read_text(), run / "ops" / "cw" / "ops.md", "cw")
        walls, seen = [], 0
        for _ in range(5):
            end = dt.datetime.now(dt.UTC)
            t0 = time.perf_counter()
            snap = gather_iris(cfg, end - dt.timedelta(hours=1), end)
            walls.append(time.perf_counter() - t0)
            seen = len(snap.all_jobs())
        print(
            f"iris gather, {n} jobs on the real local controller ({seen} seen, {snap.status}): "
            f"min {min(walls):.2f} s, median {statistics.median(walls):.2f} s, max {max(walls):.2f} s"
        )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
