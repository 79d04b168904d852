"""/sweeps/metrics at 1,000 jobs (3 clusters, every bucket, 750 RUNNING, a flag on every 10th job)
with 48 earlier report sweeps and a watch history: the time of one scrape's work as the handler
does it (gather_facts: both histories read-only, the ledger, Airflow's metadata DB; then the
families and their exposition), and the bytes of the body (text 0.0.4 and OpenMetrics, raw and
gzipped) at the default job_series_limit (200) and with every RUNNING job given its series.
Usage: source scripts/env.sh && python benchmarks/metrics_endpoint.py [jobs]
"""

from __future__ import annotations

import datetime as dt
import gzip
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fan_in import snapshots  # noqa: E402

from sweep_core.config.sweep import load_sweep_config  # noqa: E402
from sweep_core.history.openmetrics import exposition, families  # noqa: E402
from sweep_core.history.rows import sweep_frame  # noqa: E402
from sweep_core.history.store import HistoryStore  # noqa: E402
from sweep_core.records.models import Flag  # noqa: E402

END = dt.datetime(2026, 12, 6, 0, 0, tzinfo=dt.UTC)
STEP = dt.timedelta(hours=3)
ROOT = Path(__file__).resolve().parents[1]


def _history(root: Path, jobs_n: int, earlier: int) -> None:
    snaps = snapshots(jobs_n)
    jobs = [j for s in snaps for j in s.all_jobs()]
    buckets = ("RL", "SFT", "Eval", "Datagen", "Catch-all")
    for i, j in enumerate(jobs):
        j.bucket = buckets[i % len(buckets)]
        j.minutes_since_output = float(i % 180)
        j.metrics = {"step": i, "reward": 0.5 - i / 1000, "loss": 1.25, "done": i % 50, "total": 50,
                     "chunks_done": i % 8, "chunks_total": 8}  # fmt: skip
    flags = [Flag(rule="liveness_stale", severity="warn", cluster=j.cluster, job_id=j.job_id, job_name=j.name,
                  bucket=str(j.bucket), message="no output for 90 min") for j in jobs[::10]]  # fmt: skip
    store, watch = HistoryStore(root), HistoryStore(root / "watch")
    for k in range(earlier + 1):
        end = END - (earlier - k) * STEP
        frame = sweep_frame(snaps, flags, run_id=f"scheduled__{k}", window_start=end - STEP, window_end=end)
        store.append(frame, run_id=f"scheduled__{k}", window_end=end)
    wframe = sweep_frame(snaps, flags[:5], run_id="watch__0", window_start=END, window_end=END + STEP / 36)
    watch.append(wframe[wframe["record"] != "job"], run_id="watch__0", window_end=END + STEP / 36)


def main(jobs_n: int = 1_000, earlier: int = 48) -> None:
    from sweep_operators.metrics_facts import gather_facts

    with tempfile.TemporaryDirectory() as tmp:
        _history(Path(tmp) / "history", jobs_n, earlier)
        os.environ["SWEEP_HISTORY"] = str(Path(tmp) / "history")
        os.environ["SWEEP_RUN_LOG_DIR"] = str(Path(tmp) / "logs")
        config = load_sweep_config(ROOT / "include" / "sweep.yaml")
        for limit in (config.openmetrics.job_series_limit, jobs_n):
            times, body = [], b""
            for _ in range(7):
                t0 = time.perf_counter()
                facts = gather_facts(config)
                facts.job_series_limit = limit
                body, _ = exposition(families(facts))
                times.append(time.perf_counter() - t0)
            om, _ = exposition(families(facts), "application/openmetrics-text; version=1.0.0")
            series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
            print(f"{jobs_n} jobs, job_series_limit {limit}: scrape median {statistics.median(times) * 1e3:.0f} ms "
                  f"(max {max(times) * 1e3:.0f} ms, first {times[0] * 1e3:.0f} ms); {series} series; "
                  f"text {len(body) / 1024:.1f} KiB ({len(gzip.compress(body)) / 1024:.1f} KiB gzipped), "
                  f"OpenMetrics {len(om) / 1024:.1f} KiB; sources down: {facts.down or 'none'}")  # fmt: skip


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
