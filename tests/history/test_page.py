"""The Sweeps page HTML from the history: cluster text escaped (ANSI stripped, no markup), every
asset inline (no outside URL), one table per bucket, plots from every sweep, each earlier sweep's
summary read once and kept across requests in a locked cache; any history renders (a quiet sweep
with no flag rows, one with no job rows, one sweep, an empty store, an unreadable file) and a page
view never moves a file aside; the jobs come one page at a time, their log tails on demand."""

from __future__ import annotations

import datetime as dt
import re
import threading

import pytest

from sweep_core.history.page import sweeps_page
from sweep_core.history.page_view import PageCache, PageQuery, job_tail, load_view
from sweep_core.history.rows import sweep_frame
from sweep_core.history.store import HistoryStore
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job

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


def _page(store: HistoryStore, cache: PageCache | None = None, **query) -> str:
    return sweeps_page(load_view(store, cache or PageCache(), PageQuery(**query)))


def test_page_escapes_cluster_text_inlines_everything_and_plots_every_sweep(tmp_path) -> None:
    store = _store(tmp_path, 3)
    cache = PageCache()
    page = _page(store, cache)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "\x1b" not in page
    assert "<img" not in page and "silent &lt;img src=x&gt;" in page
    assert not re.search(r"""(src|href)=["']?https?:""", page)
    assert 'data-bucket="RL"' in page and 'data-bucket="SFT"' in page and "3 sweep(s) in the history" in page
    assert '<td data-v="185.417">3h05m' in page and "185.4166" not in page  # an age, as the tables print it
    assert "soft limit" in page and page.count('class="series"') >= 5
    assert "RL/SFT series: step across sweeps" in page and "RL/SFT series: reward" in page
    assert cache.names() == sorted(f.path.name for f in store.files()[:-1])
    assert "No sweep in the history yet" in _page(HistoryStore(tmp_path / "none"))


def test_log_tails_are_not_in_the_page_but_fetched_per_job(tmp_path) -> None:
    store = _store(tmp_path, 2)
    page = _page(store)
    assert "boom" not in page and "Step 3/10" not in page  # no tail travels with the page
    latest = store.files()[-1].path.name
    src = re.findall(r'<pre class="tail" data-src="([^"]+)"', page)
    assert f"tail?sweep={latest}&amp;cluster=c1&amp;job_id=1" in src
    assert job_tail(store, latest, "c1", "1") == "Step 3/10\n<b>boom</b>"  # controls stripped; the page shows text
    assert job_tail(store, latest, "c1", "2") == ""  # kept none
    assert job_tail(store, latest, "c1", "9") is None and job_tail(store, "../x.parquet", "c1", "1") is None


def _quiet(store: HistoryStore, i: int, *, jobs: bool = True, status=ClusterStatus.OK) -> None:
    end = T0 + i * H
    running = [Job("c1", "7", "rl__ok", "RUNNING", "squeue", bucket="RL", minutes_since_output=1.0)] if jobs else None
    snap = ClusterSnapshot("c1", "slurm", status, running=running, finished=[] if jobs else None)
    store.append(sweep_frame([snap], [], run_id=f"q{i}", window_start=end - H, window_end=end),
                 run_id=f"q{i}", window_end=end)  # fmt: skip


def test_any_history_renders_quiet_sweep_no_jobs_one_sweep_empty_rows(tmp_path) -> None:
    one = HistoryStore(tmp_path / "one")
    _quiet(one, 0)  # a healthy fleet: no flag rows, so no `rule` column in the file
    page = _page(one)
    assert "1 sweep(s) in the history" in page and "rl__ok" in page and 'data-bucket="RL"' in page
    down = HistoryStore(tmp_path / "down")
    _quiet(down, 0, jobs=False, status=ClusterStatus.UNREACHABLE)  # no job rows: no `bucket` column
    assert "UNREACHABLE" in _page(down) and "no job" in _page(down)
    mixed = _store(tmp_path / "mixed", 2)
    _quiet(mixed, 2)  # flags before, none now; the earlier summaries have rules, the latest none
    _quiet(mixed, 3, jobs=False, status=ClusterStatus.UNREACHABLE)
    page = _page(mixed)
    assert "4 sweep(s) in the history" in page and "open flags by rule" in page
    empty = HistoryStore(tmp_path / "empty")
    empty.append(sweep_frame([], [], run_id="e", window_start=T0 - H, window_end=T0), run_id="e", window_end=T0)
    assert "holds no rows" in _page(empty)


def test_a_page_view_never_moves_a_history_file_aside(tmp_path) -> None:
    store = _store(tmp_path, 3)
    first = store.files()[0].path
    first.write_bytes(b"not parquet")  # unreadable (or a transient read error: the reader cannot tell)
    (tmp_path / "foreign.parquet").write_bytes(b"x")
    before = sorted(p.name for p in tmp_path.iterdir())
    page = _page(store)
    assert "2 sweep(s) in the history" in page and f"{first} is unusable" in page and "skipped" in page
    assert job_tail(store, first.name, "c1", "1") is None
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def _many(tmp_path, n: int) -> HistoryStore:
    store = HistoryStore(tmp_path)
    jobs = [Job("c1", str(i), f"sft__j{i:04d}", "RUNNING", "squeue", bucket="SFT", log_tail="x" * 50) for i in range(n)]
    flags = [Flag(rule="liveness_stale", severity="warn", cluster="c1", job_id=str(i), job_name=f"sft__j{i:04d}",
                  bucket="SFT", message=f"silent needle{i}") for i in (n - 1, n - 2)]  # fmt: skip
    snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, running=jobs, finished=[])
    store.append(sweep_frame([snap], flags, run_id="m", window_start=T0 - H, window_end=T0), run_id="m", window_end=T0)
    return store


def test_jobs_come_one_page_at_a_time_flagged_first_and_search_spans_every_page(tmp_path) -> None:
    store = _many(tmp_path, 450)
    first = _page(store)
    assert first.count('<tr class="job">') == 200 and "jobs 1–200 of 450, page 1 of 3" in first
    assert first.index("sft__j0449") < first.index("sft__j0000")  # flagged jobs lead their bucket
    assert 'href="?page=2&amp;per=200&amp;q="' in first and "previous" not in first
    last = _page(store, page=9)  # past the end: the last page
    assert last.count('<tr class="job">') == 50 and "page 3 of 3" in last and "next →" not in last
    hit = _page(store, q="NEEDLE448")  # a flag's message, case-insensitive, on whichever page
    assert hit.count('<tr class="job">') == 1 and "sft__j0448" in hit and "matching “NEEDLE448” (of 450)" in hit
    assert _page(store, per=10**9).count('<tr class="job">') == 450  # capped at 1,000 a page
    assert _page(store, q="<script>").count('<tr class="job">') == 0


def test_the_cache_is_locked_across_request_threads(tmp_path) -> None:
    store = _store(tmp_path, 6)
    cache, errors = PageCache(), []

    def view() -> None:
        try:
            for _ in range(5):
                assert "6 sweep(s) in the history" in _page(store, cache)
        except Exception as exc:  # noqa: BLE001 (collected, asserted below)
            errors.append(exc)

    threads = [threading.Thread(target=view) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and cache.names() == sorted(f.path.name for f in store.files()[:-1])
    assert isinstance(cache._lock, type(threading.Lock()))


@pytest.mark.parametrize("bad", [{"page": -3}, {"per": 0}, {"q": "a\x1b[2J\nb" * 100}])
def test_bad_query_values_are_bounded_not_errors(tmp_path, bad) -> None:
    page = _page(_many(tmp_path, 3), **bad)
    assert '<tr class="job">' in page or "no job" in page
