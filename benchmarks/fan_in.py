"""Fan-in (bucket + liveness + metrics + rules + render) for 1,000 and 10,000 synthetic jobs.

Jobs are spread over 3 clusters and all buckets, RUNNING and ended, with the fixture log tails
(tests/fixtures/logs, 0.1-1.7 KB each). Prints wall time, per-stage time (run_fan_in's own
timings) and peak traced memory per size, and the 10k/1k ratios (linear growth = time ratio near
10). Measured on the 2-core machine (2026-12-03): ~0.4 s at 1,000 and 4-6 s at 10,000, most of it
render (tabulate); the old "1 s at 10,000" target does not hold (docs/benchmarks.md).
Usage: source scripts/env.sh && python benchmarks/fan_in.py
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))

from sweep_core.config.sweep import load_sweep_config  # noqa: E402
from sweep_core.pipeline.steps import run_fan_in  # noqa: E402
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job  # noqa: E402

LOGS = {p.stem: p.read_text() for p in (ROOT / "tests" / "fixtures" / "logs").glob("*.out")}
KINDS = [
    ("rl__a2_qwen_{i}", "rl_healthy"),
    ("rl__a2_zclip_{i}", "rl_collapsed"),
    ("sft__cell_{i}", "sft_healthy"),
    ("datagen__mm_{i}", "datagen_healthy"),
    ("eval-tb2_{i}", "eval_passthrough"),
    ("pretokenize_{i}", "rl_malformed"),
]
NOW = 1_764_680_000.0


def snapshots(n: int) -> list[ClusterSnapshot]:
    snaps = [
        ClusterSnapshot(c, "slurm", ClusterStatus.OK, remote_now=NOW, running=[], finished=[], pending=[])
        for c in ("leonardo", "tacc", "jupiter")
    ]
    for i in range(n):
        name_t, log = KINDS[i % len(KINDS)]
        s = snaps[i % 3]
        if i % 4 == 3:
            state = ("COMPLETED", "FAILED", "TIMEOUT")[i % 3]
            s.finished.append(
                Job(
                    s.cluster,
                    str(100000 + i),
                    name_t.format(i=i),
                    state,
                    "sacct",
                    elapsed="01:00:00",
                    exit_code="1:0",
                    log_tail=LOGS["sft_masked_traceback"],
                )
            )
        else:
            s.running.append(
                Job(
                    s.cluster,
                    str(100000 + i),
                    name_t.format(i=i),
                    "RUNNING",
                    "squeue",
                    log_tail=LOGS[log],
                    log_mtime=NOW - (i % 300) * 60,
                    num_nodes=1 + i % 4,
                )
            )
    return snaps


STAGES = ("bucket", "liveness", "metrics", "rules", "render")


def measure(n: int, config) -> tuple[float, float, dict[str, float]]:
    snaps = snapshots(n)
    gc.collect()
    tracemalloc.start()
    result = run_fan_in(snaps, config, caps={"leonardo": 4})
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert sum(result.counts().values()) == n
    # time again without tracemalloc (it slows allocation-heavy code)
    snaps = snapshots(n)
    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    run_fan_in(snaps, config, caps={"leonardo": 4}, timings=stages)
    return time.perf_counter() - t0, peak / 2**20, stages


def main() -> None:
    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    rows = {n: measure(n, config) for n in (1_000, 10_000)}
    print("jobs     seconds   peak_MiB  " + "  ".join(f"{s:>8}" for s in STAGES))
    for n, (secs, mib, stages) in rows.items():
        print(f"{n:>6}  {secs:>8.3f}  {mib:>9.1f}  " + "  ".join(f"{stages[s]:>8.3f}" for s in STAGES))
    t1, m1, _ = rows[1_000]
    t10, m10, _ = rows[10_000]
    print(f"ratio 10k/1k: time {t10 / t1:.1f}x, peak memory {m10 / m1:.1f}x (10x = linear)")


if __name__ == "__main__":
    main()
