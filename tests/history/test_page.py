"""The Sweeps page HTML from the history: cluster text escaped (ANSI stripped, no markup), every
asset inline (no outside URL), one table per bucket, plots from every sweep, each earlier sweep's
summary read once and kept across requests."""

from __future__ import annotations

import datetime as dt
import re

from sweep_core.history.page import page_data, sweeps_page
from sweep_core.history.rows import sweep_frame
from sweep_core.history.store import HistoryStore
from sweep_core.models import ClusterSnapshot, ClusterStatus, Flag, Job

T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)
H = dt.timedelta(hours=3)
EVIL = "rl__x<script>alert(1)</script>\x1b[31mred"


def _store(tmp_path, n: int) -> HistoryStore:
    store = HistoryStore(tmp_path)
    for i in range(n):
        jobs = [Job("c1", "1", EVIL, "RUNNING", "squeue", bucket="RL", stale=True, minutes_since_output=185.4166,
                    log_tail="Step 3/10\n\x1b[31m<b>boom</b>",
                    metrics={"step": i, "reward": 0.5 + i, "run_series": "rl__x"}),
                Job("c1", "2", "sft__y", "FAILED", "sacct", bucket="SFT")]  # fmt: skip
        quota = {"status": "NEAR", "reason": "r", "worst": {"kind": "inodes", "used": 800 + i, "soft": 1000}}
        snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, running=jobs[:1], finished=jobs[1:], quota=quota)
        flag = Flag(rule="liveness_stale", severity="warn", cluster="c1", job_id="1", job_name=EVIL, bucket="RL",
                    message="silent <img src=x>", action="investigate")  # fmt: skip
        end = T0 + i * H
        store.append(sweep_frame([snap], [flag], run_id=f"r{i}", window_start=end - H, window_end=end),
                     run_id=f"r{i}", window_end=end)  # fmt: skip
    return store


def test_page_escapes_cluster_text_inlines_everything_and_plots_every_sweep(tmp_path) -> None:
    store = _store(tmp_path, 3)
    cache: dict = {}
    page = sweeps_page(*page_data(store, cache))
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "\x1b" not in page
    assert "<img" not in page and "silent &lt;img src=x&gt;" in page
    assert not re.search(r"""(src|href)=["']?https?:""", page)
    assert 'data-bucket="RL"' in page and 'data-bucket="SFT"' in page and "3 sweep(s) in the history" in page
    assert '<pre class="tail">Step 3/10\n&lt;b&gt;boom&lt;/b&gt;</pre>' in page  # a row opens its tail, escaped
    assert '<td data-v="185.417">3h05m' in page and "185.4166" not in page  # an age, as the tables print it
    assert "soft limit" in page and page.count('class="series"') >= 5
    assert "RL/SFT series: step across sweeps" in page and "RL/SFT series: reward" in page
    assert sorted(cache) == sorted(f.path.name for f in store.files()[:-1])
    _store(tmp_path / "none", 0)
    assert "No sweep in the history yet" in sweeps_page(*page_data(HistoryStore(tmp_path / "none"), {}))
