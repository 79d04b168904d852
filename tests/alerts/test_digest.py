"""The digest (issue 13) from the Parquet history: a flag is told when new, not repeated while
open, told again once per cooldown, told resolved once; a cluster unread does not resolve its
flags; severity routing; Slack limits and escaping."""

from __future__ import annotations

import datetime as dt

from sweep_core.alerts.digest import COLUMNS, build_digest
from sweep_core.alerts.layout import email_html, route, slack_blocks
from sweep_core.history.rows import CLUSTER, FLAG, sweep_frame
from sweep_core.history.store import HistoryStore, read_sweep
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag

T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)
H = dt.timedelta(hours=3)
STALL = Flag(rule="stall", severity="warn", cluster="c1", job_id="7", job_name="rl__a", bucket="RL", message="silent")
BOOM = Flag(rule="collapse", severity="critical", cluster="c1", job_id="8", job_name="rl__b", message="reward fell")


def _digest(store: HistoryStore, i: int, flags: list[Flag], status=ClusterStatus.OK, cooldown=24.0):
    end, run = T0 + i * H, f"r{i}"
    snap = ClusterSnapshot("c1", "slurm", status, running=[], finished=[], notes=["no login node answered"])
    store.append(sweep_frame([snap], flags, run_id=run, window_start=end - H, window_end=end), run_id=run,
                 window_end=end)  # fmt: skip
    cur = read_sweep(store, run, end, records=(FLAG, CLUSTER), columns=COLUMNS)
    earlier = store.read(records=(FLAG, CLUSTER), columns=COLUMNS, before=end)
    return build_digest(cur, earlier, run_id=run, cooldown_hours=cooldown)


def test_new_once_resolved_once_unread_cluster_changes_nothing_cooldown_tells_again(tmp_path) -> None:
    store = HistoryStore(tmp_path)
    d = _digest(store, 0, [STALL])
    assert d.first and [t.item.signature for t in d.new] == ["stall|c1|7"]
    assert _digest(store, 1, [STALL]).empty()  # unchanged: nothing repeated
    d = _digest(store, 2, [STALL, BOOM])
    assert [t.item.signature for t in d.new] == ["collapse|c1|8"] and not d.resolved
    d = _digest(store, 3, [], status=ClusterStatus.UNREACHABLE)  # flags unknown, not resolved
    assert [t.item.signature for t in d.new] == ["cluster-unreachable|c1|"] and not d.resolved
    d = _digest(store, 4, [STALL])
    assert [i.signature for i in d.resolved] == ["cluster-unreachable|c1|", "collapse|c1|8"]
    assert not d.new  # the stall was open before the unreadable sweep: not new
    assert _digest(store, 5, [STALL]).empty()
    # 24 h cooldown, 3 h sweeps: the stall open since sweep 0 is told again at sweep 8 only
    told_again = [i for i in range(6, 12) if _digest(store, i, [STALL]).reminders]
    assert told_again == [8]


def test_unreachable_streak_counts_sweeps_in_a_row(tmp_path) -> None:
    store = HistoryStore(tmp_path)
    _digest(store, 0, [])
    _digest(store, 1, [], status=ClusterStatus.UNREACHABLE)
    told = {i: _digest(store, i, [], status=ClusterStatus.UNREACHABLE, cooldown=6).reminders for i in range(2, 6)}
    assert [i for i, r in told.items() if r] == [3, 5]  # 6 h after the first UNREACHABLE, then 12 h
    assert told[3][0].streak == 3 and "3 sweeps in a row" in told[3][0].line()


def test_routing_by_severity_and_slack_limits(tmp_path) -> None:
    store = HistoryStore(tmp_path)
    many = [
        Flag(rule="stall", severity="warn", cluster="c1", job_id=str(i), job_name=f"x<!channel>{i}", message="m" * 200)
        for i in range(1000)
    ]
    d = _digest(store, 0, [*many, BOOM])
    pager = route(d, ["critical"])
    assert pager is not None and [h for h, _ in pager.sections] == ["New"] and len(pager.sections[0][1]) == 1
    assert route(d, ["info"]) is None
    msg = route(d, ["critical", "warn"], max_items=1000, links=[("this run", "http://x/run")])
    blocks = slack_blocks(msg)
    assert len(blocks) <= 50 and all(len(b.get("text", {}).get("text", "")) <= 3000 for b in blocks)
    text = "".join(str(b) for b in blocks)
    assert "more" in text and "<!channel>" not in text and "&lt;!channel&gt;" in text
    assert "<!channel>" not in email_html(msg) and "&lt;!channel&gt;" in email_html(msg)
    capped = route(d, ["warn"], max_items=5)
    assert capped.sections[0][1][-1] == "… and 995 more"


def test_with_no_channel_each_alert_is_one_line_saying_where_to_add_one(tmp_path) -> None:
    from sweep_core.alerts.layout import unrouted_lines

    store = HistoryStore(tmp_path)
    info = Flag(rule="fyi", severity="info", cluster="c1", job_id="9", job_name="rl__c", message="just so")
    lines = unrouted_lines(_digest(store, 0, [STALL, BOOM, info]))
    assert len(lines) == 2  # warn and critical, not info
    assert all("no notify channel configured: add one in sweep.yaml notify.channels" in ln for ln in lines)
    assert any("collapse" in ln and "CRITICAL" in ln for ln in lines) and any("stall" in ln for ln in lines)
    assert unrouted_lines(_digest(store, 1, [STALL, BOOM, info])) == []  # nothing new: nothing to say
