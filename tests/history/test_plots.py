"""The sweep-level charts of the Sweeps page (history.plots, issue 43): a negative reward is drawn
inside the canvas at its value, the y axis has round ticks past 0 and the maximum, a loss goes on a
log scale (refused, and said, when a value is <= 0), and lines that overlap stay apart (each its own
dash and marker, named in the legend)."""

from __future__ import annotations

import datetime as dt
import re

import pandas as pd
import pytest

from sweep_core.history.plots import PAD, H, Summary, W, nice_ticks, plots, svg_lines

XS = ["12-01 00:00", "12-01 03:00", "12-01 06:00", "12-01 09:00"]


def _points(svg: str) -> dict[str, list[tuple[float, float]]]:
    out = {}
    for name, pts in re.findall(r'<polyline class="series" data-name="([^"]*)"[^>]* points="([^"]*)"', svg):
        out[name] = [(float(a), float(b)) for a, b in (p.split(",") for p in pts.split())]
    return out


def _value(svg: str, y: float) -> float:
    """A vertex's y mapped back to a value through the chart's own range (linear)."""
    lo, hi = (float(v) for v in re.search(r'data-lo="([^"]+)" data-hi="([^"]+)"', svg).groups())  # type: ignore[union-attr]
    return lo + (H - PAD - y) / (H - 2 * PAD) * (hi - lo)


def _ticks(svg: str) -> list[str]:
    return re.findall(r'<text class="ytick"[^>]*>([^<]+)</text>', svg)


def test_a_negative_reward_is_drawn_inside_the_canvas_at_its_value() -> None:
    svg = svg_lines("reward", {"rl__a": [0.5, -0.8, 0.2, 0.9]}, XS)
    pts = _points(svg)["rl__a"]
    assert all(PAD <= y <= H - PAD and 0 < x < W for x, y in pts)  # was y=1402 in a 220-px chart
    assert [round(_value(svg, y), 6) for _, y in pts] == [0.5, -0.8, 0.2, 0.9]
    ticks = [float(t) for t in _ticks(svg)]
    assert min(ticks) <= -0.8 and max(ticks) >= 0.9 and 0.0 in ticks and len(ticks) >= 4


def test_y_ticks_are_round_and_go_past_zero_and_the_maximum() -> None:
    assert nice_ticks(0, 37) == [0, 10, 20, 30, 40]
    assert nice_ticks(-0.8, 0.9) == [-1.0, -0.5, 0.0, 0.5, 1.0]
    svg = svg_lines("jobs per bucket", {"RL": [3, 7, 12, 5]}, XS)
    assert _ticks(svg) == ["0", "5", "10", "15"]  # not only 0 and 12


def test_a_loss_is_on_a_log_scale_and_refused_with_a_reason_at_zero() -> None:
    svg = svg_lines("loss", {"sft__a": [10.0, 1.0, 0.1, 0.01]}, XS, log=True)
    assert 'data-scale="log"' in svg and "(log scale)" in svg
    assert _ticks(svg) == ["0.01", "0.1", "1", "10"]
    ys = [y for _, y in _points(svg)["sft__a"]]
    gaps = [b - a for a, b in zip(ys, ys[1:], strict=False)]
    assert max(gaps) - min(gaps) < 0.2 and ys[0] == pytest.approx(PAD)  # each decade the same height
    bad = svg_lines("loss", {"sft__a": [1.0, 0.0, -0.5]}, XS, log=True)
    assert 'data-scale="linear"' in bad and "log scale refused: 2 value(s) &lt;= 0 (first 0)" in bad
    assert len(_points(bad)["sft__a"]) == 3  # drawn linear, every value


def test_lines_that_overlap_stay_apart_by_dash_and_marker_and_are_named() -> None:
    same = [1.0, 2.0, 3.0, 4.0]
    svg = svg_lines("step", {"a": same, "b": same, "c": same}, XS)
    lines = re.findall(r'<polyline class="series"[^>]*>', svg)
    dashes = [re.search(r'stroke-dasharray="([^"]*)"', s) for s in lines]
    assert len({d.group(1) if d else "" for d in dashes}) == 3  # three dash patterns
    assert svg.count("<circle") == 4 + 1 and svg.count("<rect") == 4 + 1  # markers on each point and in the legend
    assert re.findall(r'<text class="legend"[^>]*>([^<]+)<', svg) == ["a", "b", "c"]


def test_the_page_plots_draw_the_loss_on_a_log_scale_and_the_reward_across_zero() -> None:
    t0 = pd.Timestamp(dt.datetime(2026, 12, 1, tzinfo=dt.UTC))
    sums = [Summary(t0 + pd.Timedelta(hours=3 * i), {"RL": 1}, {}, {},
                    {"rl__a": {"step": 10.0 * i, "reward": 0.4 - 0.6 * i, "loss": 2.0 / (1 + i)}}) for i in range(3)]  # fmt: skip
    out = plots(sums)
    charts = dict(re.findall(r'aria-label="RL/SFT series: (\w+)[^"]*"[^>]* data-scale="(\w+)"', out))
    assert charts == {"step": "linear", "reward": "linear", "loss": "log"}
    reward = re.search(r'<svg[^>]*aria-label="RL/SFT series: reward.*?</svg>', out).group(0)  # type: ignore[union-attr]
    assert all(PAD <= y <= H - PAD for _, y in _points(reward)["rl__a"])
