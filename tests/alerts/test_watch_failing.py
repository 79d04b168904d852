"""A watch that fails every 5 minutes tells nobody of a wedge, so its failing is itself told: its own
streak in the ledger (never the report sweep's notify.failed_sweeps streak), counted in time
(watch.failing_minutes), told once per streak and again after watch.failing_repeat_minutes, ended by
a successful watch run; the message says since when wedges are not being seen."""

from __future__ import annotations

import datetime as dt

import pytest

from sweep_core.alerts.approvals import watch_failing_message
from sweep_core.ledger.outcomes import record_outcome, record_watch_outcome
from sweep_core.ledger.store import load_ledger
from sweep_core.timing.cadence import watch_run_id

T0 = dt.datetime(2026, 12, 3, 14, 0, tzinfo=dt.UTC)


def watch(tmp_path, i: int, ok: bool = False, after: int | None = 15, repeat: int = 60):
    """Watch run ``i``: the window [T0 + 5i min, T0 + 5(i+1) min)."""
    start, end = T0 + dt.timedelta(minutes=5 * i), T0 + dt.timedelta(minutes=5 * (i + 1))
    run = watch_run_id(f"scheduled__{start.isoformat()}")
    return record_watch_outcome(tmp_path, run, ok, start=start.isoformat(), end=end.isoformat(),
                                after_minutes=after, repeat_minutes=repeat)  # fmt: skip


def test_a_watch_failing_15_minutes_is_told_once_then_again_after_the_cooldown(tmp_path) -> None:
    assert watch(tmp_path, 0, ok=True) is None
    told = {i: watch(tmp_path, i) for i in range(1, 17)}  # failing from 14:05 on
    assert [i for i, t in told.items() if t is not None] == [3, 15]  # 14:05-14:20: 15 min; 60 min later
    first = told[3]
    assert (first.runs, first.since) == (3, (T0 + dt.timedelta(minutes=5)).isoformat())
    assert first.last_success.startswith(watch_run_id(f"scheduled__{T0.isoformat()}"))
    assert told[15].runs == 15
    assert watch(tmp_path, 3) is None  # a re-run of a failed run: counted once, not told again
    assert len(load_ledger(tmp_path).watch_streak.failing) == 16
    assert watch(tmp_path, 17, ok=True) is None  # a success ends the streak ...
    streak = load_ledger(tmp_path).watch_streak
    assert streak.failing == [] and streak.told == "" and streak.last_success.startswith("watch__scheduled__")
    assert [watch(tmp_path, i) is not None for i in range(18, 21)] == [False, False, True]  # ... a new one is told anew


def test_the_watch_streak_and_the_report_streak_do_not_mix(tmp_path) -> None:
    report = "scheduled__2026-12-03T12:00:00+00:00"
    assert record_outcome(tmp_path, report, False, "2026-12-03T15:00:01+00:00") == (1, "")
    for i in range(4):
        watch(tmp_path, i)
    assert watch(tmp_path, 4, ok=True) is None  # the watch succeeds: the report's failed run stays counted
    ledger = load_ledger(tmp_path)
    assert ledger.failing == [report] and ledger.last_success == "" and ledger.watch_streak.failing == []
    watch(tmp_path, 5)
    record_outcome(tmp_path, "scheduled__2026-12-03T15:00:00+00:00", True, "2026-12-03T18:00:01+00:00")
    ledger = load_ledger(tmp_path)  # the report succeeds: the watch's failed run stays counted
    assert ledger.failing == [] and len(ledger.watch_streak.failing) == 1


def test_off_and_shorter_thresholds(tmp_path) -> None:
    assert [watch(tmp_path, i, after=None) for i in range(30)] == [None] * 30
    assert watch(tmp_path / "b", 0, after=5) is not None  # one failed 5-minute run is 5 minutes


def test_the_message_says_since_when_wedges_are_not_being_seen() -> None:
    since, latest = (T0 + dt.timedelta(minutes=5)).isoformat(), (T0 + dt.timedelta(minutes=20)).isoformat()
    msg = watch_failing_message("monitor_cron_watch", 3, since, latest, "", "http://x/runs/1")
    assert (
        msg.title
        == "monitor_cron_watch: the watch has failed 3 runs in a row since 14:05 UTC: wedges are not being seen"
    )
    assert "no successful watch run on record" in msg.text()
    later = watch_failing_message("monitor_cron_watch", 300, since, "2026-12-04T15:00:00+00:00", "watch__x 13:55", "l")
    assert "since 2026-12-03 14:05 UTC" in later.title and "last success: watch__x 13:55" in later.text()


@pytest.mark.dagrun  # a real DAG run / airflow db clean: every run, not --fast
def test_real_watch_runs_that_fail_tell_their_own_streak_and_leave_the_reports_alone(tmp_path) -> None:
    """Two real runs of monitor_cron_watch (dag.test, no cluster: its one cluster's ops.md names an iris
    python that is not there, so the verdict task fails the run), 5-minute windows, failing_minutes 10:
    the first failed run is not told, the second is (a local stub of Slack's webhook); the report
    sweep's streak stays empty."""
    import yaml
    from receivers import slack_webhook_stub
    from sweep_runner import ROOT, run_dag
    from test_failing_sweeps import OPS, pager_config

    ops = tmp_path / "ops"
    (ops / "cw").mkdir(parents=True)
    (ops / "cw" / "ops.md").write_text(OPS.format(python="/nonexistent/bin/python"))
    with slack_webhook_stub() as (hook_url, posts):
        watch_conf = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text())["watch"]
        watch_conf.update(failing_minutes=10, failing_repeat_minutes=60)
        env = pager_config(tmp_path, hook_url, failed_sweeps=1, watch=watch_conf)
        hour = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=1)
        runs = [run_dag("monitor_cron_watch", {}, tmp_path / "logs", ops_dir=ops, logical_date=hour + dt.timedelta(minutes=5 * i),
                        run_after=hour + dt.timedelta(minutes=5 * (i + 1)), **env) for i in range(2)]  # fmt: skip
        assert [r.state for r in runs] == ["failed", "failed"]
        alerts = [p["text"] for p in posts if "the watch has failed" in p.get("text", "")]
    (told,) = alerts
    assert "monitor_cron_watch: the watch has failed 2 runs in a row since " in told
    assert "wedges are not being seen" in told
    ledger = load_ledger(tmp_path / "logs")
    assert ledger.failing == []  # the report's notify.failed_sweeps: 1 would have told every watch run
    assert [r.startswith("watch__") for r in ledger.watch_streak.failing] == [True, True]
