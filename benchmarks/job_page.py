"""A job page at 10,000 points per series: a history of 200 sweeps, each keeping 50 points per metric
(gather.stream_points) of 4 metrics (reward, loss, grad_norm, entropy) for the job and for 49 other
jobs of its cluster (a 2,000-character log tail each, as a sweep keeps). Prints the server time of
one job page (read every sweep's file read-only, merge, downsample, render), the time of the
downsampling alone, the points held and sent per series, and the bytes of the page (raw and gzip:
what the api-server sends with compression) and of the vendored uPlot (loaded once, then cached).

``retention [files] [jobs]``: the job page at a real retention, 4,300 sweep files (90 days at a
30-minute cadence) of 1,000 jobs each (4 metrics x 50 points per job per sweep, as above): the
first request (every file read once, READERS at once) and a warm one through the page's cache
(history.job_cache), a request after one more sweep (one file read), a first request without
the cache, and the cache's memory for the job (tracemalloc).
Usage: source scripts/env.sh && python benchmarks/job_page.py [sweeps] [other jobs]
       source scripts/env.sh && python benchmarks/job_page.py retention [files] [jobs]
"""

from __future__ import annotations

import datetime as dt
import gzip
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sweep_core.history.job_page import job_page
from sweep_core.history.job_view import load_job_view
from sweep_core.history.rows import sweep_frame
from sweep_core.history.series import SENT_POINTS, downsample
from sweep_core.history.store import HistoryStore
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

END = dt.datetime(2026, 6, 1, 0, 0, tzinfo=dt.UTC)
STEP = dt.timedelta(minutes=30)
PER_SWEEP = 50  # points per metric per job a sweep keeps (include/sweep.yaml gather.stream_points)
UPLOT = Path(__file__).resolve().parents[1] / "plugins" / "sweep_operators" / "static" / "uplot"


def _points(i: int, job: int) -> dict[str, list[list[float]]]:
    steps = range(i * PER_SWEEP, (i + 1) * PER_SWEEP)
    return {
        "reward": [[float(s), -0.8 + 1.2 * (1 - math.exp(-s / 3000)) + 0.05 * math.sin(s + job)] for s in steps],
        "loss": [[float(s), 2.5 * math.exp(-s / 4000) + 0.1 + 0.02 * math.cos(s)] for s in steps],
        "grad_norm": [[float(s), 1.0 + 0.3 * math.sin(s / 7)] for s in steps],
        "entropy": [[float(s), 0.9 - s / 20000] for s in steps],
    }


def build(root: Path, sweeps: int, others: int) -> HistoryStore:
    store = HistoryStore(root, retention_days=100_000)
    tail = ("Step 123/5000 | reward 0.4123 | loss 1.2345 | grad_norm 0.912 | tokens/s 51234 | lr 3e-6\n" * 30)[:2000]
    for i in range(sweeps):
        jobs = [Job("c1", str(1000 + j), f"rl__run{j}", "RUNNING", "squeue", bucket="RL", minutes_since_output=2.0,
                    log_tail=tail, metrics={"step": (i + 1) * PER_SWEEP - 1, "reward": 0.4},
                    points=_points(i, j)) for j in range(others + 1)]  # fmt: skip
        snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, running=jobs, finished=[])
        end = END + i * STEP
        store.append(sweep_frame([snap], [], run_id=f"r{i}", window_start=end - STEP, window_end=end),
                     run_id=f"r{i}", window_end=end)  # fmt: skip
    return store


def _drawn_ms(page: str) -> float:
    """Median of 3 loads in Debian's chromium: navigation start to every chart drawn (ms)."""
    import shutil

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "static").mkdir()
        for n in ("uPlot.iife.min.js", "uPlot.min.css"):
            shutil.copy(UPLOT / n, Path(tmp) / "static" / n)
        (Path(tmp) / "job.html").write_text(page)
        got = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            for _ in range(3):
                tab = browser.new_page(viewport={"width": 1400, "height": 1000})
                tab.goto(f"file://{tmp}/job.html")
                tab.wait_for_function("() => window.jobCharts && Object.keys(window.jobCharts).length === 4")
                got.append(tab.evaluate("() => performance.now()"))
                tab.close()
            browser.close()
        return statistics.median(got)


def main(sweeps: int = 200, others: int = 49) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        store = build(Path(tmp), sweeps, others)
        built = time.perf_counter() - t0
        size = sum(f.path.stat().st_size for f in store.files())
        print(f"history: {sweeps} sweeps x {others + 1} jobs x 4 metrics x {PER_SWEEP} points "
              f"({size / 1e6:.1f} MB of Parquet, written in {built:.1f} s)")  # fmt: skip
        times, page, view = [], "", None
        for _ in range(5):
            t0 = time.perf_counter()
            view = load_job_view(store, "c1", "1000")
            page = job_page(view)
            times.append(time.perf_counter() - t0)
        assert view is not None
        for c in view.curves:
            print(f"  {c.metric}: {len(c.points)} points held, {len(c.sent)} sent, last {c.sent[-1]} == {c.points[-1]}")
        pts = view.curves[0].points
        ds = []
        for _ in range(20):
            t0 = time.perf_counter()
            downsample(pts, SENT_POINTS)
            ds.append(time.perf_counter() - t0)
        raw = page.encode()
        js = sum((UPLOT / n).stat().st_size for n in ("uPlot.iife.min.js", "uPlot.min.css"))
        js_gz = sum(len(gzip.compress((UPLOT / n).read_bytes())) for n in ("uPlot.iife.min.js", "uPlot.min.css"))
        print(f"job page (server: read {sweeps} files, merge, downsample, render): median "
              f"{statistics.median(times) * 1e3:.0f} ms, max {max(times) * 1e3:.0f} ms over 5")  # fmt: skip
        print(f"downsample {len(pts)} -> {SENT_POINTS} points: median {statistics.median(ds) * 1e3:.1f} ms")
        print(
            f"browser (chromium, the page from disk with the vendored uPlot): {_drawn_ms(page):.0f} ms to charts drawn"
        )
        print(f"page: {len(raw) / 1e3:.0f} KB raw, {len(gzip.compress(raw)) / 1e3:.0f} KB gzip "
              f"({len(view.rows)} rows in its table); uPlot js+css {js / 1e3:.0f} KB raw, {js_gz / 1e3:.0f} KB gzip "
              "(once, cached a day)")  # fmt: skip


def build_retention(root: Path, files: int, jobs: int) -> HistoryStore:
    """``files`` sweeps of ``jobs`` jobs: one sweep's rows made by sweep_frame, then each sweep's
    table that one with its run, window and steps moved on (each written by the store's writer)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    store = HistoryStore(root, retention_days=100_000)
    snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, finished=[], running=[
        Job("c1", str(1000 + j), f"rl__run{j}", "RUNNING", "squeue", bucket="RL", minutes_since_output=2.0,
            log_tail="Step 123/5000 | reward 0.41\n" * 60, metrics={"step": PER_SWEEP - 1, "reward": 0.4},
            points=_points(0, j)) for j in range(jobs)])  # fmt: skip
    base = pa.Table.from_pandas(sweep_frame([snap], [], run_id="r0", window_start=END - STEP, window_end=END),
                                preserve_index=False)  # fmt: skip
    n = base.num_rows
    for i in range(files):
        end = END + i * STEP
        t = base
        for col, value in (("run_id", f"r{i}"), ("window_start", end - STEP), ("window_end", end)):
            t = t.set_column(
                t.schema.get_field_index(col), col, pa.repeat(pa.scalar(value, t.schema.field(col).type), n)
            )
        for col in ("step", "m.step"):
            k = t.schema.get_field_index(col)
            t = t.set_column(k, col, pc.add(t[col], float(i * PER_SWEEP)))
        k = t.schema.get_field_index("value")
        t = t.set_column(k, "value", pc.add(t["value"], i / files))
        store.write_table(t, run_id=f"r{i}", window_end=end)
    return store


def retention(files: int = 4300, jobs: int = 1000) -> None:
    import tracemalloc

    from sweep_core.history.job_cache import READERS, JobCache

    READ_BUDGET_S = 5.0  # sweep_operators.sweeps_page.READ_BUDGET_S (that module needs Airflow)

    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        t0 = time.perf_counter()
        store = build_retention(Path(tmp), files, jobs)
        size = sum(f.path.stat().st_size for f in store.files())
        print(f"history: {files} sweep files x {jobs} jobs x 4 metrics x {PER_SWEEP} points "
              f"({size / 1e9:.2f} GB of Parquet, written in {time.perf_counter() - t0:.0f} s)")  # fmt: skip
        cache = JobCache()

        def timed(job: str, c: JobCache | None) -> tuple[float, object]:
            t = time.perf_counter()
            view = load_job_view(store, "c1", job, cache=c)
            job_page(view)
            return time.perf_counter() - t, view

        paged = JobCache()
        t = time.perf_counter()
        load_job_view(store, "c1", "1000", cache=paged, budget=READ_BUDGET_S)
        print(f"first request as the page makes it (a {READ_BUDGET_S:g} s reading budget): "
              f"{time.perf_counter() - t:.1f} s, {paged.reads} of {files} files read (newest first)")  # fmt: skip
        del paged
        first, view = timed("1000", cache)
        print(f"first request (job 1000, {cache.reads} files read, {READERS} at once): {first:.1f} s")
        warm = [timed("1000", cache)[0] for _ in range(5)]
        print(f"warm request (0 files read): median {statistics.median(warm) * 1e3:.0f} ms, "
              f"max {max(warm) * 1e3:.0f} ms over 5")  # fmt: skip
        reads = cache.reads
        last = store.files()[-1]
        import pyarrow.parquet as pq

        store.write_table(pq.read_table(last.path), run_id="one-more", window_end=END + files * STEP)
        store.retention_days = 1  # retention removes the oldest sweep, as the sweep's own append does
        gone = store.prune(END + STEP + dt.timedelta(days=1))
        after, view2 = timed("1000", cache)
        print(f"after one more sweep and retention ({len(gone)} file(s) pruned): {after * 1e3:.0f} ms, "
              f"{cache.reads - reads} file(s) read")  # fmt: skip
        fresh, view3 = timed("1000", None)
        same = [c.points for c in view2.curves] == [c.points for c in view3.curves]  # type: ignore[attr-defined]
        print(f"first request without the cache (every file read): {fresh:.1f} s; cached curves == fresh: {same}")
        other, _ = timed("1500", cache)
        print(f"first request of another job (1500): {other:.1f} s")
        tracemalloc.start()
        probe = JobCache()
        before = tracemalloc.get_traced_memory()[0]
        load_job_view(store, "c1", "1000", cache=probe)
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        pts = sum(len(c.points) for c in view2.curves)  # type: ignore[attr-defined]
        print(f"cache of one job over {len(store.files())} files: {held / 1e6:.1f} MB traced, weight "
              f"{probe.weight():,} of the bound {probe.bound:,} ({pts:,} points in its curves)")  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["retention"]:
        retention(*(int(a) for a in sys.argv[2:4]))
    else:
        main(*(int(a) for a in sys.argv[1:3]))
