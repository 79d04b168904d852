"""The Parquet history at 1,000 jobs x 200 sweeps: the time the history task adds to a sweep (rows
built + one file written atomically + retention), the notify task's reads, the Sweeps page's server time (the flag and cluster rows
of every earlier sweep, then the digest), and a full read of every job row (what a page or a plot
reads). Snapshots are benchmarks/fan_in.py's (3 clusters, every bucket) with metrics and a flag on
every 10th job; targets from issue 13: append <= 200 ms, page <= 500 ms.
Usage: source scripts/env.sh && python benchmarks/history.py
"""

from __future__ import annotations

import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fan_in import snapshots  # noqa: E402

from sweep_core.alerts.digest import COLUMNS, build_digest  # noqa: E402
from sweep_core.history.page import sweeps_page  # noqa: E402
from sweep_core.history.page_view import PageCache, load_view  # noqa: E402
from sweep_core.history.rows import CLUSTER, FLAG, JOB, sweep_frame  # noqa: E402
from sweep_core.history.store import HistoryStore, read_sweep  # noqa: E402
from sweep_core.records.models import Flag  # noqa: E402

JOBS, SWEEPS = 1_000, 200
END = dt.datetime(2026, 6, 1, 0, 0, tzinfo=dt.UTC)
STEP = dt.timedelta(hours=3)


def main() -> None:
    snaps = snapshots(JOBS)
    jobs = [j for s in snaps for j in s.all_jobs()]
    for i, j in enumerate(jobs):
        j.log_tail = ""
        j.metrics = {"step": i, "max_steps": 1000, "reward": 0.5, "loss": 1.25, "run_series": f"s{i % 50}"}
    appends = []
    with tempfile.TemporaryDirectory() as d:
        store = HistoryStore(Path(d), retention_days=365)
        for k in range(SWEEPS):
            flags = [
                Flag(rule="liveness_stale", severity="warn", cluster=j.cluster, job_id=j.job_id, job_name=j.name,
                     message="no output for 90 min")
                for j in jobs[(k % 10) :: 10]
            ]  # fmt: skip
            end = END + k * STEP
            t0 = time.perf_counter()
            frame = sweep_frame(snaps, flags, run_id=f"scheduled__{k}", window_start=end - STEP, window_end=end)
            store.append(frame, run_id=f"scheduled__{k}", window_end=end)
            appends.append(time.perf_counter() - t0)
        size = sum(p.stat().st_size for p in Path(d).glob("*.parquet"))
        t0 = time.perf_counter()
        cur = read_sweep(store, f"scheduled__{SWEEPS - 1}", end, records=(FLAG, CLUSTER), columns=COLUMNS)
        earlier = store.read(records=(FLAG, CLUSTER), columns=COLUMNS, before=end)
        read_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        digest = build_digest(cur, earlier, run_id="x", cooldown_hours=24)
        digest_s = time.perf_counter() - t0
        cache = PageCache()
        t0 = time.perf_counter()
        sweeps_page(load_view(store, cache))
        cold_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        page = sweeps_page(load_view(store, cache))
        page_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        every = store.read(records=(JOB,), columns=("window_end", "bucket", "state", "m.step", "m.reward"))
        full_s = time.perf_counter() - t0
    print(
        f"history: {JOBS:,} jobs x {SWEEPS} sweeps, {size / 2**20:.1f} MiB on disk ({size / SWEEPS / 1024:.0f} KiB/sweep)"
    )
    print(
        f"append (rows + atomic write + retention): median {statistics.median(appends) * 1e3:.0f} ms, "
        f"max {max(appends) * 1e3:.0f} ms (target <= 200 ms)"
    )
    print(f"notify read (flag+cluster rows of {SWEEPS} sweeps): {read_s * 1e3:.0f} ms; digest {digest_s * 1e3:.0f} ms "
          f"({len(digest.new)} new, {len(digest.resolved)} resolved)")  # fmt: skip
    print(f"Sweeps page: {page_s * 1e3:.0f} ms per request, {len(page) / 1024:.0f} KiB (target <= 500 ms); the first "
          f"request after the api-server starts reads every sweep's plot columns: {cold_s * 1e3:.0f} ms")  # fmt: skip
    print(f"read every job row ({len(every):,} rows, 5 columns: a page's plots): {full_s * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
