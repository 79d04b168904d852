"""A cluster page of the Sweeps page at 1,000 jobs, every row with its curve (issue 43): one
cluster of 1,000 RUNNING jobs (RL with a reward stream, SFT with a loss stream, Eval with
done/total, Datagen with chunks; a 2,000-character log tail each), a second cluster of 1,000 more
(read, not shown), 56 sweeps written by the history's own writer (sweep_frame + HistoryStore), each
sweep holding gather.stream_points (50) new points per streamed job. Prints the page's bytes (all of
it, and its curves alone) and its server time: cold (the first request after the api-server starts:
every earlier sweep's file read once, plots and curves together) and warm (each later request: the
latest sweep's file only), and what the page's cache holds.
Usage: source scripts/env.sh && python benchmarks/cluster_page.py [jobs] [sweeps]
"""

from __future__ import annotations

import datetime as dt
import math
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sweeps_page import log_tail  # noqa: E402

from sweep_core.history.page import sweeps_page  # noqa: E402
from sweep_core.history.page_view import PageCache, PageQuery, load_view  # noqa: E402
from sweep_core.history.rows import sweep_frame  # noqa: E402
from sweep_core.history.sparkline import SPARK_SWEEPS  # noqa: E402
from sweep_core.history.store import HistoryStore  # noqa: E402
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job  # noqa: E402

END = dt.datetime(2026, 6, 1, 0, 0, tzinfo=dt.UTC)
STEP = dt.timedelta(hours=3)
POINTS = 50  # gather.stream_points' default: what one sweep keeps of a job's stream per metric
BUCKETS = ("RL", "SFT", "Eval", "Datagen")
ROW = '<tr class="job">'


def _job(cluster: str, i: int, k: int) -> Job:
    """Job ``i`` of ``cluster`` as sweep ``k`` saw it (its stream read on by POINTS steps)."""
    bucket = BUCKETS[i % len(BUCKETS)]
    steps = range(k * POINTS, (k + 1) * POINTS)
    job = Job(cluster, str(100_000 + i), f"{bucket.lower()}__bench_{i}", "RUNNING", "squeue", bucket=bucket,
              minutes_since_output=float(i % 90), log_tail=log_tail(i))  # fmt: skip
    if bucket == "RL":
        pts = [[float(s), 0.5 + 0.4 * math.sin(s / 40 + i)] for s in steps]
        job.points, job.metrics = {"reward": pts}, {"step": steps[-1], "reward": pts[-1][1]}
    elif bucket == "SFT":
        pts = [[float(s), 2.0 / (1 + s / 100) + (i % 7) / 100] for s in steps]
        job.points, job.metrics = {"loss": pts}, {"step": steps[-1], "loss": pts[-1][1]}
    elif bucket == "Eval":
        job.metrics = {"done": min(500, 10 * (k + 1) + i % 10), "total": 500}
    else:
        job.metrics = {"chunks_done": min(64, k + 1), "chunks_total": 64}
    return job


def main(jobs_n: int = 1_000, sweeps: int = SPARK_SWEEPS) -> None:
    with tempfile.TemporaryDirectory() as d:
        store = HistoryStore(Path(d), retention_days=365)
        t0 = time.perf_counter()
        for k in range(sweeps):
            snaps = [ClusterSnapshot(c, "slurm", ClusterStatus.OK, running=[_job(c, i, k) for i in range(jobs_n)],
                                     finished=[]) for c in ("leonardo", "tacc")]  # fmt: skip
            end = END + k * STEP
            store.append(sweep_frame(snaps, [], run_id=f"scheduled__{k}", window_start=end - STEP, window_end=end),
                         run_id=f"scheduled__{k}", window_end=end)  # fmt: skip
        wrote = time.perf_counter() - t0
        mib = sum(f.path.stat().st_size for f in store.files()) / 2**20
        query = PageQuery(per=jobs_n, cluster="leonardo")
        cache = PageCache()
        t0 = time.perf_counter()
        page = sweeps_page(load_view(store, cache, query))
        cold = time.perf_counter() - t0
        warm = []
        for _ in range(5):
            t0 = time.perf_counter()
            page = sweeps_page(load_view(store, cache, query))
            warm.append(time.perf_counter() - t0)
        kept = [k.curves for k in cache._kept.values() if k.curves is not None]
        kept_mib = sum(int(c.memory_usage(deep=True).sum()) for c in kept) / 2**20
    size, rows = len(page.encode()), page.count(ROW)
    sparks = re.findall(r'<svg class="spark".*?</svg>', page)
    spark_bytes = sum(len(s.encode()) for s in sparks)
    print(f"history: {sweeps} sweeps x 2 clusters x {jobs_n:,} jobs ({POINTS} new points per streamed job per "
          f"sweep), {mib:.1f} MiB of Parquet, written in {wrote:.1f} s")  # fmt: skip
    print(f"cluster page (leonardo, {rows:,} rows, {len(sparks):,} curves, "
          f"{page.count('no series')} 'no series'): {size / 1024:.0f} KiB, of it the curves {spark_bytes / 1024:.0f} KiB "
          f"({spark_bytes / max(1, len(sparks)):.0f} bytes each)")  # fmt: skip
    print(f"server time: cold {cold * 1e3:.0f} ms (every sweep file read once); warm median "
          f"{statistics.median(warm) * 1e3:.0f} ms, max {max(warm) * 1e3:.0f} ms (the latest file only)")  # fmt: skip
    print(f"the page's cache: {len(kept)} sweeps' curve rows, {kept_mib:.1f} MiB")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
