"""XCom bytes one cluster's gather pushes per sweep, at 10 / 1,000 / 10,000 RUNNING jobs: BEFORE (the
snapshot with every raw log tail and chain tail, the shape main's gather returned) and AFTER (the
same snapshot after the gather's digest: metric columns, capped evidence, 20-line excerpts under
gather.xcom_excerpt_bytes). Both from one run, each serialized as Airflow stores XCom (serde, then JSON).

Jobs: RL (with one earlier chain link tailed: gather.chain_prefixes), SFT, Datagen, Eval and
Catch-all, the fixture logs of tests/fixtures/logs; "fixture" tails are those files (0.1-3 KB),
"full" tails each file repeated up to gather.tail_bytes (a long-running job's log, 16 KiB). Only
gather.max_jobs jobs get a tail (the gather reads no more); the rest are rows without a log.
Usage: source scripts/env.sh && python benchmarks/xcom_bytes.py [10,1000,10000]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))

from sweep_core.config.sweep import SweepConfig, load_sweep_config  # noqa: E402
from sweep_core.pipeline.steps import digest_step  # noqa: E402
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job  # noqa: E402

LOGS = {p.stem: p.read_text() for p in (ROOT / "tests" / "fixtures" / "logs").glob("*.out")}
KINDS = [  # (name, own log, earlier chain link's log or None)
    ("rl__a2_qwen8b_{i}", "rl_healthy", "rl_chain_earlier"),
    ("rl__a2_zclip_{i}", "rl_collapsed", "rl_launch_banner"),
    ("rl__b1_{i}_resume2", "rl_nan", "rl_chain_earlier"),
    ("sft__cell_{i}", "sft_healthy", None),
    ("sft__spike_{i}", "sft_spike", None),
    ("datagen__mm_{i}", "datagen_healthy", None),
    ("eval-tb2_{i}", "eval_passthrough", None),
    ("pretokenize_{i}", "sft_masked_traceback", None),
]
NOW = 1_764_680_000.0
SIZES = (10, 1_000, 10_000)


def fill(text: str, size: int | None) -> str:
    """``text`` as read by a bounded ``tail -c size`` of a log that kept printing it (None: as is)."""
    return text if size is None else (text * (1 + size // len(text)))[-size:]


def snapshot(n: int, config: SweepConfig, tail_bytes: int | None) -> ClusterSnapshot:
    """One cluster with ``n`` RUNNING jobs; the first gather.max_jobs of them with their tails."""
    snap = ClusterSnapshot("leonardo", "slurm", ClusterStatus.OK, "login01", [], [], [], remote_now=NOW)
    tails = {k: fill(v, tail_bytes) for k, v in LOGS.items()}
    for i in range(n):
        name, own, chain = KINDS[i % len(KINDS)]
        read = i < config.gather.max_jobs
        snap.running.append(  # type: ignore[union-attr]
            Job(
                "leonardo",
                str(4_100_000 + i),
                name.format(i=i),
                "RUNNING",
                "squeue",
                elapsed="1-02:03:04",
                partition="boost_usr_prod",
                nodes=f"lrdn{i % 3000:04d}",
                num_nodes=1 + i % 4,
                stdout_path=f"/leonardo_work/proj/logs/{name.format(i=i)}_{4_100_000 + i}.out",
                log_mtime=NOW - (i % 240) * 60 if read else None,
                log_tail=tails[own] if read else "",
                chain_tails=[tails[chain]] if read and chain else [],
            )
        )
    return snap


def xcom_bytes(data: dict[str, Any]) -> int:
    """The bytes Airflow stores for this XCom value: serde, then JSON."""
    from airflow.sdk.serde import serialize

    return len(json.dumps(serialize(data)).encode())


def part_bytes(data: dict[str, Any], key: str) -> int:
    """The JSON bytes of one field over every job of a snapshot dict."""
    return sum(len(json.dumps(j[key]).encode()) for j in data["running"])


def before_shape(snap: ClusterSnapshot) -> dict[str, Any]:
    """What main's gather returned: snap.to_dict() of the raw snapshot (no ``evidence`` field then)."""
    data = snap.to_dict()
    for job in data["running"]:
        job.pop("evidence", None)
    return data


def main(sizes: tuple[int, ...]) -> None:
    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    g = config.gather
    print(
        f"one cluster, RUNNING jobs; tail_bytes {g.tail_bytes}, max_jobs {g.max_jobs} (tails read),"
        f" xcom_excerpt_bytes {g.xcom_excerpt_bytes}"
    )
    print(
        "after = metric columns (main computed them in `bucket` and pushed them from there) + evidence + excerpts + rows"
    )
    head = ("jobs", "tails", "before", "after", "ratio", "metrics", "evidence", "excerpts", "dropped", "digest s")
    print(" ".join(f"{h:>{w}}" for h, w in zip(head, (6, 8, 12, 12, 6, 11, 11, 11, 7, 8), strict=True)))
    for n in sizes:
        for label, size in (("fixture", None), ("full", g.tail_bytes)):
            snap = snapshot(n, config, size)
            before = xcom_bytes(before_shape(snap))
            t0 = time.perf_counter()
            dropped = digest_step([snap], config)
            secs = time.perf_counter() - t0
            after_data = snap.to_dict()
            after = xcom_bytes(after_data)
            part = {k: part_bytes(after_data, k) / 2**10 for k in ("metrics", "evidence", "log_tail")}
            print(
                f"{n:>6} {label:>8} {before / 2**20:>8.2f} MiB {after / 2**20:>8.2f} MiB {before / after:>5.1f}x"
                + "".join(f" {v:>7.0f} KiB" for v in part.values())
                + f" {dropped:>7} {secs:>8.2f}"
            )
            if dropped:
                print(f"{'':>6} note: {snap.notes[-1]}")


if __name__ == "__main__":
    main(tuple(int(x) for x in sys.argv[1].split(",")) if len(sys.argv) > 1 else SIZES)
