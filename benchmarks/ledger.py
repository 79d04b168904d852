"""The ledger with 1,000 and 10,000 jobs in it: the size of its rows in the state database (every
job row and the ledger row; the copies kept for a re-run, generation ``before``; the default SQLite
file) and the
time the render task adds to a sweep to fold the sweep in and save it (fold_sweep_run: load + fold
+ save in one locked transaction), plus a cleanup hand-off of
every completed job given once (give_once). Snapshots are those of benchmarks/fan_in.py (3
clusters, every bucket, a quarter of the jobs ended); the ledger already holds the previous sweep.
Usage: source scripts/env.sh && python benchmarks/ledger.py
"""

from __future__ import annotations

import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fan_in import snapshots  # noqa: E402

from sweep_core.ledger.runs import fold_sweep_run, give_once  # noqa: E402
from sweep_core.state.db import engine_for, space_of, state_url  # noqa: E402
from sweep_core.state.rows import BEFORE, NOW, LedgerRows  # noqa: E402

SIZES = (1_000, 10_000)
END = dt.datetime(2026, 12, 3, 3, 0, tzinfo=dt.UTC)


def measure(n: int) -> dict[str, float]:
    snaps = snapshots(n)
    for s in snaps:
        for j in s.all_jobs():
            j.log_tail = ""  # the bucket task drops the tails before the render task
    with tempfile.TemporaryDirectory() as d:
        fold_sweep_run(d, snaps, run_id="scheduled__1", window_end=END)  # the previous sweep
        t0 = time.perf_counter()
        changes = fold_sweep_run(d, snaps, run_id="scheduled__2", window_end=END + dt.timedelta(hours=3))
        fold_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        fold_sweep_run(d, snaps, run_id="scheduled__2", window_end=END + dt.timedelta(hours=3))
        rerun_s = time.perf_counter() - t0
        done = [
            {"cluster": j.cluster, "job_id": j.job_id, "name": j.name, "flavor": "sft-job-cleanup"}
            for s in snaps
            for j in s.finished or []
            if j.state == "COMPLETED"
        ]
        t0 = time.perf_counter()
        give_once(d, {"cleanup": {"jobs": done, "reclaim_clusters": []}}, run_id="scheduled__2", dry_run=False)
        give_s = time.perf_counter() - t0
        with engine_for(state_url(d)).begin() as conn:
            rows = LedgerRows(conn, space_of(d))
            size = {g: len(rows.top(g) or "") + sum(len(b or "") for b in rows.jobs(g).values()) for g in (NOW, BEFORE)}
        return {
            "ledger_kib": size[NOW] / 1024,
            "before_kib": size[BEFORE] / 1024,
            "fold_s": fold_s,
            "rerun_s": rerun_s,
            "give_s": give_s,
            "changes": len(changes),
            "handed": len(done),
        }


def main() -> None:
    print(f"{'jobs':>7} {'ledger rows':>12} {'before':>10} {'fold+save':>10} {'re-run':>8} {'give_once':>10}")
    for n in SIZES:
        best = min((measure(n) for _ in range(3)), key=lambda r: r["fold_s"])
        print(
            f"{n:>7,} {best['ledger_kib']:>9.0f} KiB {best['before_kib']:>6.0f} KiB {best['fold_s']:>9.3f}s"
            f" {best['rerun_s']:>7.3f}s {best['give_s']:>9.3f}s   ({best['handed']} cleanups given once)"
        )


if __name__ == "__main__":
    main()
