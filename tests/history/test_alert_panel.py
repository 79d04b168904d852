"""The Sweeps page's alert panel: the newest sweep's flags of severity warn and above (critical
first, an info flag left out, cluster text escaped); with no notify channel configured it says so
and where to add one, with one configured it does not."""

from __future__ import annotations

import datetime as dt

from sweep_core.history.page import sweeps_page
from sweep_core.history.page_view import PageCache, load_view
from sweep_core.history.rows import sweep_frame
from sweep_core.history.store import HistoryStore
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job

T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)
H = dt.timedelta(hours=3)


def _flag(rule: str, severity: str, job_id: str, message: str) -> Flag:
    return Flag(rule=rule, severity=severity, cluster="c1", job_id=job_id, job_name=f"rl__{job_id}", bucket="RL",
                message=message, action="investigate")  # fmt: skip


def _store(tmp_path, sweeps: list[list[Flag]]) -> HistoryStore:
    store = HistoryStore(tmp_path)
    for i, flags in enumerate(sweeps):
        jobs = [Job("c1", j, f"rl__{j}", "RUNNING", "squeue", bucket="RL") for j in ("1", "2", "3")]
        snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, running=jobs, finished=[])
        end = T0 + i * H
        store.append(sweep_frame([snap], flags, run_id=f"r{i}", window_start=end - H, window_end=end),
                     run_id=f"r{i}", window_end=end)  # fmt: skip
    return store


def _panel(html: str) -> str:
    start = html.index("<section id='alerts'>")
    return html[start : html.index("</section>", start)]


def test_the_newest_sweeps_warn_and_critical_flags_critical_first(tmp_path) -> None:
    old = [_flag("old_rule", "critical", "1", "from an earlier sweep")]
    new = [_flag("stall", "warn", "1", "silent <b>x</b>"), _flag("collapse", "critical", "2", "reward fell"),
           _flag("fyi", "info", "3", "just so you know")]  # fmt: skip
    view = load_view(_store(tmp_path, [old, new]), PageCache())
    view.channels = 0
    panel = _panel(sweeps_page(view))
    assert "Alerts (2)" in panel
    assert panel.index("collapse") < panel.index("stall")  # critical first
    assert "fyi" not in panel and "old_rule" not in panel  # info left out; the newest sweep only
    assert "<b>x</b>" not in panel and "&lt;b&gt;x&lt;/b&gt;" in panel
    assert "no notify channel configured: add one in sweep.yaml notify.channels" in panel


def test_with_a_channel_the_panel_lists_without_the_warning(tmp_path) -> None:
    view = load_view(_store(tmp_path, [[_flag("stall", "warn", "1", "silent")]]), PageCache())
    view.channels = 1
    panel = _panel(sweeps_page(view))
    assert "stall" in panel and "no notify channel configured" not in panel


def test_a_quiet_sweep_and_an_empty_history_still_say_no_channel(tmp_path) -> None:
    view = load_view(_store(tmp_path, [[]]), PageCache())
    view.channels = 0
    panel = _panel(sweeps_page(view))
    assert "Alerts (0)" in panel and "No alert" in panel and "no notify channel configured" in panel
    empty = load_view(HistoryStore(tmp_path / "none"), PageCache())
    empty.channels = 0
    assert "no notify channel configured" in sweeps_page(empty)
