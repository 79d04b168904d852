"""A job's page from the history, pure: its series merged over sweeps and downsampled with the first
and LAST point exact and a spike kept; a negative reward sent as it is (the chart's axis holds it);
a loss opens on a log scale, and a loss with a value <= 0 refuses it with the reason; a restart (the
step went back), a relaunch, a flag and an act marked at the step the job was at then; its rows
across sweeps newest first; cluster text escaped; an unknown job a 404 page, not a crash; a page
view never moves a file aside."""

from __future__ import annotations

import datetime as dt
import json
import math
import re

import pytest

from sweep_core.handoffs.cleanup.execute import rm_row
from sweep_core.handoffs.kernel.result import unknown
from sweep_core.history.job_page import chart_data, job_page
from sweep_core.history.job_view import load_job_view
from sweep_core.history.page import sweeps_page
from sweep_core.history.page_view import PageCache, load_view
from sweep_core.history.rows import sweep_frame
from sweep_core.history.series import downsample, log_refusal, loss_like
from sweep_core.history.store import HistoryStore
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job

T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)
H = dt.timedelta(hours=1)
EVIL = "rl__x<script>alert(1)</script>\x1b[31mred"


def _sweep(store: HistoryStore, i: int, step: int, points: dict, *, flags=(), metrics=None, name=EVIL) -> None:
    job = Job("c1", "41", name, "RUNNING", "squeue", bucket="RL", minutes_since_output=3.0 + i,
              metrics={"step": step, **(metrics or {})}, points=points)  # fmt: skip
    other = Job("c1", "42", "rl__other", "RUNNING", "squeue", bucket="RL", metrics={"step": 1},
                points={"reward": [(1, 99.0)]})  # fmt: skip
    snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, running=[job, other], finished=[])
    end = T0 + i * H
    store.append(sweep_frame([snap], list(flags), run_id=f"r{i}", window_start=end - H, window_end=end),
                 run_id=f"r{i}", window_end=end)  # fmt: skip


def test_downsample_keeps_first_and_last_exactly_and_a_spike() -> None:
    pts = [(s, math.sin(s / 50)) for s in range(10_000)]
    pts[5_003] = (5_003, 40.0)  # a spike between bucket edges
    pts[-1] = (9_999, -0.8)  # the last point, whatever it is
    got = downsample(pts, 2_000)
    assert len(got) <= 2_000 and got[0] == pts[0] and got[-1] == (9_999, -0.8)
    assert (5_003, 40.0) in got and [s for s, _ in got] == sorted(s for s, _ in got)
    assert downsample(pts[:10], 2_000) == pts[:10]
    with_nan = [(0, 1.0), *((s, float("nan")) for s in range(1, 50)), (50, 2.0)]
    assert downsample(with_nan, 10)[-1] == (50, 2.0)  # a bucket of NaN only keeps a NaN (the line breaks)


def test_log_scale_refuses_values_at_or_below_zero_with_the_reason() -> None:
    assert loss_like("loss") and loss_like("pg_loss") and loss_like("grad_norm") and not loss_like("reward")
    assert log_refusal([(0, 2.3), (1, 0.4)]) == ""
    assert log_refusal([(0, 2.3), (7, -0.01), (8, 0.0)]) == (
        "log scale refused: 2 value(s) <= 0 (first -0.01 at step 7); drawn linear"
    )


def test_job_page_curves_marks_and_rows_from_three_sweeps(tmp_path) -> None:
    store = HistoryStore(tmp_path)
    stale = Flag(rule="rl_collapse", severity="critical", cluster="c1", job_id="41", job_name=EVIL, bucket="RL",
                 message="reward fell <img src=x>", action="cancel")  # fmt: skip
    _sweep(
        store,
        0,
        20,
        {"reward": [(s, -0.8 + s / 100) for s in range(21)], "loss": [(s, 2.0 / (s + 1)) for s in range(21)]},
    )
    _sweep(store, 1, 40, {"reward": [(s, -0.8 + s / 100) for s in range(21, 41)], "loss": [(s, 2.0 / (s + 1)) for s in range(21, 41)]},
           flags=[stale])  # fmt: skip
    # restarted from a checkpoint at step 30: the step went back, the log re-read from there; relaunched
    _sweep(store, 2, 35, {"reward": [(s, -0.5) for s in range(30, 36)], "loss": [(30, 0.5), (35, -0.1)]},
           metrics={"reward": -0.5, "relaunched": "relaunched 2026-12-03 01:30 by ops"})  # fmt: skip
    before = sorted(p.name for p in tmp_path.iterdir())
    acts = [{"kind": "relaunch", "at": "2026-12-03T01:30:00Z", "by": "ada", "result": "requeued"},
            {"kind": "cancel", "at": "not a time", "by": "bob"},
            rm_row("c1", "/scratch/rl/exports", unknown("outcome UNKNOWN: session cut"), "r2", "2026-12-03T02:10:00Z")]  # fmt: skip
    view = load_job_view(store, "c1", "41", acts=acts)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # read-only
    assert [r["run_id"] for r in view.rows] == ["r0", "r1", "r2"] and view.latest("reward") == -0.5
    curves = {c.metric: c for c in view.curves}
    reward = curves["reward"]
    assert reward.points[-1] == (40, pytest.approx(-0.8 + 0.4))  # merged by step: steps 36..40 kept from r1
    assert reward.points[30] == (30, -0.5)  # the re-read step keeps the latest sweep's value
    assert min(v for _, v in reward.sent) == pytest.approx(-0.8) and not reward.log  # negative: linear, as it is
    assert curves["loss"].log is False and "first -0.1 at step 35" in curves["loss"].log_refusal
    kinds = [(m.kind, m.step) for m in view.marks]
    assert ("flag", 40) in kinds  # raised by the sweep that read step 40
    assert ("restart", 35) in kinds and ("relaunch", 35) in kinds  # the row's note and the step going back
    assert ("relaunch", 40) in kinds  # the act at 01:30 happened while the job was at step 40 (sweep r1)
    assert ("act", None) in kinds  # an act whose time is not a time: listed, at no step
    rm = "rm /scratch/rl/exports: unknown (outcome UNKNOWN: session cut)"  # the cleanup's rm, its outcome and why
    assert [(m.kind, m.step) for m in view.marks if m.label == rm] == [("act", 35)]
    data = chart_data(view)
    assert data["series"]["reward"]["x"][0] == 0 and data["series"]["reward"]["y"][0] == pytest.approx(-0.8)
    page = job_page(view)
    assert "<script>alert" not in page and "<img" not in page and "\x1b" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # no CDN: the plugin serves uPlot
    assert 'src="static/uPlot.iife.min.js"' in page and 'href="static/uPlot.min.css"' in page
    blob = re.search(r"<script type='application/json' id='job-data'>(.*?)</script>", page, re.S)
    assert blob and json.loads(blob.group(1))["series"]["loss"]["refusal"].startswith("log scale refused")
    assert "last output <b>5 min</b> ago" in page and "3 sweep(s) of this job" in page
    rows = re.findall(r"<tr class='sweep'><td>([^<]+)", page)
    assert rows == ["2026-12-03 02:00", "2026-12-03 01:00", "2026-12-03 00:00"]  # newest first
    assert "99" not in json.dumps(data)  # another job's point never leaks in


def test_loss_on_log_scale_by_default_and_unknown_job_is_a_page_saying_so(tmp_path) -> None:
    store = HistoryStore(tmp_path)
    _sweep(store, 0, 9, {"loss": [(s, 3.0 / (s + 1)) for s in range(10)]}, name="sft__ok")
    view = load_job_view(store, "c1", "41")
    assert view.curves[0].log and view.curves[0].log_refusal == "" and "checked" in job_page(view)
    missing = load_job_view(store, "c1", "nope")
    assert not missing.found and "No sweep in the history saw job nope on c1" in job_page(missing)
    assert not load_job_view(HistoryStore(tmp_path / "none"), "c1", "41").found


def test_the_sweeps_page_links_each_job_to_its_page(tmp_path) -> None:
    store = HistoryStore(tmp_path)
    _sweep(store, 0, 9, {"reward": [(9, 0.1)]})
    page = sweeps_page(load_view(store, PageCache()))
    assert '<a class="jobpage" href="job?cluster=c1&amp;job_id=41">41</a>' in page
