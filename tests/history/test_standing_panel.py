"""The Sweeps page tells every act a standing permission took (issue 41): the ledger's standing acts
of the last 7 days as sweep_cancel recorded them (handoffs.cancel.remember), newest first, text
escaped; an act a human approved is not listed; a ledger the page cannot read says so."""

from __future__ import annotations

import datetime as dt

from cancel_fleet import wedged_decision
from ledger_rows import write_row

from sweep_core.handoffs.cancel.outcome import Act, ActOutcome, Did
from sweep_core.handoffs.cancel.remember import outcome_acts
from sweep_core.history.page import sweeps_page
from sweep_core.history.page_view import PageView
from sweep_core.ledger.acts import record_acts, standing_record
from sweep_core.ledger.store import peek_ledger

NOW = dt.datetime.now(dt.UTC)


def _panel(html: str) -> str:
    start = html.index("<section id='standing'>")
    return html[start : html.index("</section>", start)]


def test_standing_acts_are_listed_from_the_ledger_newest_first(tmp_path) -> None:
    stood = wedged_decision("leonardo", "11", "rl__<b>wedge</b>")
    stood.offer = {"standing": "standing[1] relaunch liveness_stale silent>=2h"}
    asked = wedged_decision("leonardo", "12", "rl__approved")
    asked.offer = {}
    old = wedged_decision("tacc", "13", "rl__last_month")
    old.offer = {"standing": "standing[1] relaunch liveness_stale silent>=2h"}
    relaunched = ActOutcome(Did.RELAUNCHED, "requeued: PENDING, Restarts 1", Act.RELAUNCH)
    for d, at, by in ((old, NOW - dt.timedelta(days=30), "standing permission"),
                      (asked, NOW - dt.timedelta(hours=1), "ana"), (stood, NOW, "standing permission")):  # fmt: skip
        acts, _ = outcome_acts([d], {d.request.job_id: relaunched}, "r1", at.isoformat(), by)
        record_acts(tmp_path, acts)
    view = PageView(standing=standing_record(peek_ledger(tmp_path), (NOW - dt.timedelta(days=7)).isoformat()))
    panel = _panel(sweeps_page(view))
    assert "Standing-permission acts (1, last 7 days)" in panel
    assert "rl__&lt;b&gt;wedge&lt;/b&gt;" in panel and "standing[1] relaunch liveness_stale" in panel
    assert "requeued: PENDING, Restarts 1" in panel
    assert "rl__approved" not in panel and "rl__last_month" not in panel


def test_no_act_and_an_unreadable_ledger_are_said(tmp_path) -> None:
    assert "No act under a standing permission in the last 7 days." in _panel(sweeps_page(PageView()))
    write_row(tmp_path, "leonardo|11", '{"cluster": ')  # a damaged job row
    why = ""
    try:
        peek_ledger(tmp_path)
    except ValueError as exc:
        why = f"the ledger could not be read: {exc}"
    assert "damaged job row" in why
    view = PageView(standing=None, standing_why=why)
    assert "the ledger could not be read" in _panel(sweeps_page(view))
