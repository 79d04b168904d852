"""The curve beside each job row of the Sweeps page (issue 43): an RL job's reward and an SFT job's
loss drawn from the history's points over every sweep (a falling reward falls on the curve, the last
vertex is the row's latest value), an Eval job's done/total one value per sweep, a job with no series
saying so; the cluster and bucket pages narrow the rows; the whole page is drawn from one read of
each sweep file, whatever the number of jobs; the tiny SVG survives NaN, one value, a flat run."""

from __future__ import annotations

import datetime as dt
import re

import pandas as pd
import pytest

import sweep_core.history.store as store_mod
from sweep_core.history.page import sweeps_page
from sweep_core.history.page_view import PageCache, PageQuery, load_view
from sweep_core.history.rows import sweep_frame
from sweep_core.history.sparkline import PAD, SPARK_POINTS, H, sparkline, thin_frame
from sweep_core.history.store import HistoryStore
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)
STEP = dt.timedelta(hours=3)
SWEEPS = 4


def _sweep(store: HistoryStore, i: int, extra: int = 0) -> None:
    """Sweep ``i``: c1 holds an RL job whose reward falls from 0.9 to -0.8, an SFT job's loss, an
    Eval job 10 trials further each sweep, an RL job never read; c2 one RL job (``extra`` more)."""
    steps = range(10 * i, 10 * i + 10)
    reward = [(s, 0.9 - 1.7 * s / (10 * SWEEPS - 1)) for s in steps]
    loss = [(s, 2.0 / (1 + s)) for s in steps]
    c1 = [
        Job("c1", "1", "rl__falling", "RUNNING", "squeue", bucket="RL", minutes_since_output=2.0,
            metrics={"step": reward[-1][0], "reward": reward[-1][1]}, points={"reward": [list(p) for p in reward]}),
        Job("c1", "2", "sft__x", "RUNNING", "squeue", bucket="SFT", minutes_since_output=1.0,
            metrics={"step": loss[-1][0], "loss": loss[-1][1]}, points={"loss": [list(p) for p in loss]}),
        Job("c1", "3", "eval-y", "RUNNING", "squeue", bucket="Eval", minutes_since_output=1.0,
            metrics={"done": 10 * (i + 1), "total": 50}),
        Job("c1", "4", "rl__unread", "RUNNING", "squeue", bucket="RL", minutes_since_output=1.0),
        Job("c1", "5", "hf_upload", "RUNNING", "squeue", bucket="Catch-all", minutes_since_output=1.0),
    ]  # fmt: skip
    c2 = [Job("c2", str(100 + k), f"rl__c2_{k}", "RUNNING", "squeue", bucket="RL", minutes_since_output=1.0,
              metrics={"reward": 0.1 * k + i}, points={"reward": [[float(s), 0.1 * k + i] for s in steps]})
          for k in range(1 + extra)]  # fmt: skip
    snaps = [
        ClusterSnapshot(c, "slurm", ClusterStatus.OK, running=jobs, finished=[]) for c, jobs in (("c1", c1), ("c2", c2))
    ]
    end = T0 + i * STEP
    store.append(sweep_frame(snaps, [], run_id=f"r{i}", window_start=end - STEP, window_end=end),
                 run_id=f"r{i}", window_end=end)  # fmt: skip


def _store(tmp_path, extra: int = 0) -> HistoryStore:
    store = HistoryStore(tmp_path)
    for i in range(SWEEPS):
        _sweep(store, i, extra)
    return store


def _row(page: str, job_id: str) -> str:
    """The job row whose id cell (the second, a link or text) is ``job_id``."""
    for seg in page.split('<tr class="job">')[1:]:
        row = seg.split("</tr>")[0]
        if re.sub(r"<[^>]+>", "", re.split(r"<td[^>]*>", row)[2]) == job_id:
            return row
    raise AssertionError(f"no row of job {job_id}")


def _vertices(svg: str) -> list[tuple[float, float]]:
    pts = re.search(r'points="([^"]+)"', svg).group(1)  # type: ignore[union-attr]
    return [(float(a), float(b)) for a, b in (p.split(",") for p in pts.split())]


def test_a_falling_reward_is_drawn_falling_and_its_last_point_is_the_rows_latest_value(tmp_path) -> None:
    page = sweeps_page(load_view(_store(tmp_path), PageCache()))
    row = _row(page, "1")
    svg = re.search(r'<svg class="spark".*?</svg>', row).group(0)  # type: ignore[union-attr]
    last = float(re.search(r'data-last="([^"]+)"', svg).group(1))  # type: ignore[union-attr]
    latest = float(re.search(r'<span class="latest">([^<]+)<', row).group(1))  # type: ignore[union-attr]
    assert last == pytest.approx(-0.8, abs=1e-4) and latest == pytest.approx(-0.8, abs=1e-3)
    assert 'data-n="32"' in svg  # four sweeps of 10 steps, each sweep's kept to its first, last, lows and highs
    v = _vertices(svg)
    assert v[0][1] == pytest.approx(PAD) and v[-1][1] == pytest.approx(H - PAD)  # top left to bottom right: falling
    assert "reward (curve, latest)" in page and "loss (curve, latest)" in page


def test_loss_points_done_per_total_per_sweep_and_no_series_said(tmp_path) -> None:
    page = sweeps_page(load_view(_store(tmp_path), PageCache()))
    sft = _row(page, "2")
    assert 'data-last="0.05"' in sft and 'data-n="32"' in sft  # the last step, 39: 2/(1+39)
    ev = _row(page, "3")
    assert 'data-last="0.8"' in ev and 'data-n="4"' in ev and '<span class="latest">0.8<' in ev  # 40/50, one per sweep
    unread = _row(page, "4")
    assert '<span class="nospark">no series</span>' in unread and "<svg" not in unread
    assert '<span class="latest">?<' in unread
    assert "(curve, latest)" not in re.search(r'<table data-bucket="Catch-all">.*?</thead>', page).group(0)  # type: ignore[union-attr]


def test_the_cluster_and_bucket_pages_hold_only_their_jobs_with_their_curves(tmp_path) -> None:
    store = _store(tmp_path, extra=3)
    whole = sweeps_page(load_view(store, PageCache()))
    assert 'class="clusterpage" href="?page=1&amp;per=200&amp;q=&amp;cluster=c2"' in whole
    assert 'class="bucketpage" href="?page=1&amp;per=200&amp;q=&amp;bucket=RL"' in whole
    c2 = sweeps_page(load_view(store, PageCache(), PageQuery(cluster="c2")))
    assert c2.count('<tr class="job">') == 4 and ">rl__c2_3<" in c2 and ">rl__falling<" not in c2
    assert c2.count('<svg class="spark"') == 4 and "Only the jobs of cluster <b>c2</b>" in c2
    rl = sweeps_page(load_view(store, PageCache(), PageQuery(bucket="RL")))
    assert rl.count('<tr class="job">') == 6 and ">sft__x<" not in rl and "jobs 1–6 of 6 of bucket RL (of 9)" in rl
    assert sweeps_page(load_view(store, PageCache(), PageQuery(cluster="nope"))).count('<tr class="job">') == 0


def test_the_whole_page_is_one_read_of_each_sweep_file_whatever_the_jobs(tmp_path, monkeypatch) -> None:
    reads: list[str] = []
    real = store_mod._read_bytes

    def counted(path):  # noqa: ANN001, ANN202
        reads.append(path.name)
        return real(path)

    monkeypatch.setattr(store_mod, "_read_bytes", counted)
    for extra, root in ((0, "few"), (60, "many")):
        store = _store(tmp_path / root, extra)
        cache = PageCache()
        reads.clear()
        view = load_view(store, cache)  # the first request: every file once (plots and curves together)
        assert sorted(reads) == sorted(f.path.name for f in store.files())
        assert len(view.jobs) == 5 + 1 + extra and len(view.spark) == 3 + 1 + extra
        reads.clear()
        again = load_view(store, cache)  # a later one: the latest sweep only, the earlier ones kept
        assert reads == [store.files()[-1].path.name] and again.spark == view.spark


def test_the_svg_survives_nan_one_value_a_flat_run_and_many_points() -> None:
    assert sparkline(None) == sparkline([(1, 0.5)]) == sparkline([(1, float("nan")), (2, 1.0)])
    assert "no series" in sparkline([])
    flat = sparkline([(0, 3.0), (5, 3.0), (9, 3.0)])
    assert {y for _, y in _vertices(flat)} == {H / 2} and 'data-last="3"' in flat  # a line, mid-height
    many = pd.DataFrame({"key": ["a|1"] * 10_000 + ["b|2"] * 3, "x": [*range(10_000), *range(3)],
                         "value": [float(s % 97) for s in range(10_000)] + [1.0, 2.0, 3.0]})  # fmt: skip
    kept = thin_frame(many, SPARK_POINTS)
    a = kept[kept["key"] == "a|1"]
    assert (
        len(a) <= SPARK_POINTS and a["x"].iloc[0] == 0 and a["x"].iloc[-1] == 9_999 and a["x"].is_monotonic_increasing
    )
    assert a["value"].max() == 96.0 and a["value"].min() == 0.0  # the peaks survive the cut
    assert kept[kept["key"] == "b|2"]["value"].tolist() == [1.0, 2.0, 3.0]  # a short one whole
    evil = sparkline([(0, 1.0), (1, 2.0)], what='<script>"')
    assert "<script>" not in evil and "&lt;script&gt;" in evil


def test_the_cache_keeps_curve_rows_only_for_the_sweeps_the_curves_span(tmp_path, monkeypatch) -> None:
    import sweep_core.history.page_view as page_view

    monkeypatch.setattr(page_view, "SPARK_SWEEPS", 3)  # the latest and the two before it
    store, cache = _store(tmp_path), PageCache()
    view = load_view(store, cache)
    names = [f.path.name for f in store.files()]
    curved = {n for n, k in cache._kept.items() if k.curves is not None}
    assert curved == set(names[-3:-1]) and cache.names() == sorted(names[:-1])  # every summary, two curve sets
    assert len(view.earlier) == SWEEPS - 1 and 'data-n="3"' in sweeps_page(view)  # Eval: three sweeps' values
    _sweep(store, SWEEPS)  # a new sweep: the oldest curve rows are dropped, the summaries kept
    load_view(store, cache)
    names = [f.path.name for f in store.files()]
    assert {n for n, k in cache._kept.items() if k.curves is not None} == set(names[-3:-1])
