"""The Sweeps page at 5,000 jobs (3 clusters, every bucket, a 2,000-character log tail on every job,
a flag on every 10th) with 100 earlier sweeps: the server time and size of the first page (cold:
the first request after the api-server starts reads every earlier sweep's plot columns; warm: each
later request), a later page, a search over every page, and one job's log tail (its own request,
made when a row is opened). Target from issue 30: the first page <= 300 ms at 5,000 jobs.
Usage: source scripts/env.sh && python benchmarks/sweeps_page.py [jobs] [earlier sweeps]
"""

from __future__ import annotations

import datetime as dt
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fan_in import snapshots  # noqa: E402

from sweep_core.history.page import sweeps_page  # noqa: E402
from sweep_core.history.page_view import PageCache, PageQuery, job_tail, load_view  # noqa: E402
from sweep_core.history.rows import sweep_frame  # noqa: E402
from sweep_core.history.store import HistoryStore  # noqa: E402
from sweep_core.records.models import Flag  # noqa: E402

END = dt.datetime(2026, 6, 1, 0, 0, tzinfo=dt.UTC)
STEP = dt.timedelta(hours=3)
ROW = '<tr class="job">'


def log_tail(i: int) -> str:
    """2,000 characters of a training log, different per job (compresses like a real one)."""
    rng = random.Random(i)
    lines = (f"Step {i + k}/5000 | reward {rng.random():.4f} | loss {rng.uniform(0.5, 2):.4f} | grad_norm "
             f"{rng.random():.3f} | tokens/s {rng.randint(40000, 60000)} | lr 3e-6" for k in range(40))  # fmt: skip
    return "\n".join(lines)[:2000]


def _timed(fn: Callable[[], object], n: int = 7) -> tuple[float, float, object]:
    """(median s, max s, the last result) of ``n`` calls."""
    times, out = [], None
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), max(times), out


def main(jobs_n: int = 5_000, earlier_n: int = 100) -> None:
    snaps = snapshots(jobs_n)
    jobs = [j for s in snaps for j in s.all_jobs()]
    for i, j in enumerate(jobs):
        j.log_tail = log_tail(i)
        j.metrics = {"step": i, "max_steps": 5000, "reward": 0.5, "loss": 1.25, "run_series": f"s{i % 50}"}
    flags = [Flag(rule="liveness_stale", severity="warn", cluster=j.cluster, job_id=j.job_id, job_name=j.name,
                  bucket=str(j.bucket), message="no output for 90 min") for j in jobs[::10]]  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        store = HistoryStore(Path(d), retention_days=365)
        for k in range(earlier_n + 1):
            end = END + k * STEP
            frame = sweep_frame(snaps, flags, run_id=f"scheduled__{k}", window_start=end - STEP, window_end=end)
            store.append(frame, run_id=f"scheduled__{k}", window_end=end)
        latest = store.files()[-1].path
        mib = latest.stat().st_size / 2**20
        cache = PageCache()
        t0 = time.perf_counter()
        sweeps_page(load_view(store, cache))
        cold = time.perf_counter() - t0
        first, first_max, page = _timed(lambda: sweeps_page(load_view(store, cache)))
        later, _, _ = _timed(lambda: sweeps_page(load_view(store, cache, PageQuery(page=10))))
        search, _, hit = _timed(lambda: sweeps_page(load_view(store, cache, PageQuery(q="rl__a2_zclip_4999"))))
        one = jobs[len(jobs) // 2]
        tail_s, tail_max, tail = _timed(lambda: job_tail(store, latest.name, one.cluster, one.job_id))
    size = len(str(page).encode())
    print(f"Sweeps page: {jobs_n:,} jobs ({len(flags):,} flagged, 2,000-character tails) + {earlier_n} earlier "
          f"sweeps; latest file {mib:.1f} MiB")  # fmt: skip
    print(f"first page (200 jobs): median {first * 1e3:.0f} ms, max {first_max * 1e3:.0f} ms, {size / 1024:.0f} KiB "
          f"(target <= 300 ms); cold (first request after a restart): {cold * 1e3:.0f} ms")  # fmt: skip
    print(f"page 10: median {later * 1e3:.0f} ms; search over every page: median {search * 1e3:.0f} ms "
          f"({str(hit).count(ROW)} row)")  # fmt: skip
    print(f"one job's log tail (its own request): median {tail_s * 1e3:.0f} ms, max {tail_max * 1e3:.0f} ms, "
          f"{len(str(tail).encode()):,} bytes")  # fmt: skip


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
