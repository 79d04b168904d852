"""A cancel whose answer was lost (the act session died after scancel was sent) is never sent again
blind; the next sweep that lists the job settles it once: still RUNNING well after the act = the
cancel did not take (said, and the job's cancel hand-off released so the next flag asks again);
ended CANCELLED = confirmed. Folded through the real ledger fold, given/released through the real
hand-off record."""

from __future__ import annotations

import datetime as dt

from test_ledger import T0, fold, job, snap

from sweep_core.handoffs.cancel.outcome import ActOutcome, Did
from sweep_core.ledger.acts import add_act
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.given import mark_given, split_given
from sweep_core.state.migrations.v0005_acts_said import said

WEDGED = {"cluster": "leo", "job_id": "1", "name": "rl__a"}


def _lost_cancel(ledger: Ledger, at: dt.datetime, did: str = Did.UNKNOWN.value, result: str = "") -> Ledger:
    """The ledger as sweep_cancel leaves it when its act session died after scancel was sent."""
    mark_given(ledger, "cancel", [WEDGED], "scheduled__3")
    text = result or ActOutcome(Did.UNKNOWN, "UNKNOWN: the session ended after scancel was sent").text
    act = {"kind": "cancel", "run": "scheduled__3__cancel", "at": at.isoformat(), "by": "alice", "result": text}
    return add_act(ledger, "leo", "1", "rl__a", {**act, "did": did} if did else act)


def _listed(hours: float) -> float:
    return (T0 + dt.timedelta(hours=hours)).timestamp()


def test_a_lost_cancel_of_a_job_still_running_is_said_once_and_asks_again() -> None:
    ledger, _ = fold(Ledger(), [snap([job("1", "rl__a", "RUNNING")])], 3)
    ledger = _lost_cancel(ledger, T0 + dt.timedelta(hours=3, minutes=1))
    assert split_given(ledger, "cancel", [WEDGED], "scheduled__6")[0] == []  # handed off: not again

    still = snap([job("1", "rl__a", "RUNNING")])
    still.remote_now = _listed(3 + 2 / 60)  # read 60 s after the act: too soon to tell
    ledger, lines = fold(ledger, [still], 3, run="watch__a")
    assert not any("cancel" in line for line in lines)

    still.remote_now = _listed(6)
    ledger, lines = fold(ledger, [still], 6)
    said = [line for line in lines if line.startswith("cancel did not take")]
    assert said == [
        f"cancel did not take: leo 1 rl__a is still RUNNING after the cancel sent at "
        f"{(T0 + dt.timedelta(hours=3, minutes=1)).isoformat()} by alice (its answer lost); "
        "its cancel hand-off is released: the next flag asks again"
    ]
    todo, notes = split_given(ledger, "cancel", [WEDGED], "scheduled__6")
    assert todo == [WEDGED] and notes == []  # the next flag hands it off again

    ledger, lines = fold(ledger, [still], 9)  # said once
    assert not any(line.startswith("cancel did not take") for line in lines)


def test_a_lost_cancel_that_ended_cancelled_is_confirmed_and_stays_handed_off() -> None:
    ledger, _ = fold(Ledger(), [snap([job("1", "rl__a", "RUNNING")])], 3)
    ledger = _lost_cancel(ledger, T0 + dt.timedelta(hours=3, minutes=1))
    ended = snap(finished=[job("1", "rl__a", "CANCELLED by 0", "sacct")])
    ended.remote_now = _listed(6)
    ledger, lines = fold(ledger, [ended], 6)
    assert any(line.startswith("cancel confirmed: leo 1 rl__a ended CANCELLED after the cancel sent") for line in lines)
    assert split_given(ledger, "cancel", [WEDGED], "scheduled__9")[0] == []  # nothing to ask again


def test_a_cancel_stored_before_did_is_reconciled_by_what_migration_0005_wrote_and_a_sent_one_is_not() -> None:
    still = snap([job("1", "rl__a", "RUNNING")])
    still.remote_now = _listed(6)
    for text in ("UNKNOWN: the session ended after scancel was sent", "scancel: rc 1?"):  # lost; unreadable
        ledger, _ = fold(Ledger(), [snap([job("1", "rl__a", "RUNNING")])], 3)
        ledger = _lost_cancel(ledger, T0 + dt.timedelta(hours=3), did="", result=text)  # as stored before did
        raw = ledger.jobs["leo|1"].acts[-1]
        ledger.jobs["leo|1"].acts[-1] = said("leo|1", raw) or raw  # what the upgrade wrote, once
        assert any(line.startswith("cancel did not take") for line in fold(ledger, [still], 6)[1]), text

    ledger, _ = fold(Ledger(), [snap([job("1", "rl__a", "RUNNING")])], 3)
    not_migrated = _lost_cancel(ledger, T0 + dt.timedelta(hours=3), did="")  # its text is never read on the live path
    assert not any("cancel" in line for line in fold(not_migrated, [still], 6)[1])
    ledger, _ = fold(Ledger(), [snap([job("1", "rl__a", "RUNNING")])], 3)
    confirmed = _lost_cancel(ledger, T0 + dt.timedelta(hours=3), did=Did.CANCELLED.value, result="cancelled")
    assert not any("cancel" in line for line in fold(confirmed, [still], 6)[1])  # its answer was not lost
