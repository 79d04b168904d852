"""A digest is told once per run and channel: a re-run of the same run (its texts' ages differ)
sends nothing again, a re-run that has something else to tell sends it, and the memory survives a
re-run's fold of the ledger."""

from __future__ import annotations

import datetime as dt

from sweep_core.alerts.digest import Digest, Item, Told
from sweep_core.alerts.layout import route
from sweep_core.ledger import told as told_mod
from sweep_core.ledger.runs import fold_sweep_run
from sweep_core.ledger.store import load_ledger
from sweep_core.ledger.told import mark_told, told_before
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

END = dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC)


def _digest(age: str, *sigs: str) -> Digest:
    items = [Item(s, "warn", "leo", f"[liveness_stale] leo SFT {s}: silent {age}") for s in sigs]
    return Digest("run1", END, new=[Told(i, 1, END) for i in items])


def test_same_things_told_with_other_ages_are_not_sent_again_new_things_are(tmp_path) -> None:
    first = route(_digest("3h 0m", "a", "b"), ["warn"])
    again = route(_digest("3h 4m", "a", "b"), ["warn"])  # the re-run, minutes later
    more = route(_digest("3h 4m", "a", "b", "c"), ["warn"])
    assert first and again and more and first.text() != again.text()
    assert not told_before(tmp_path, "run1", "team", first.identity())
    mark_told(tmp_path, "run1", "team", first.identity())
    assert told_before(tmp_path, "run1", "team", again.identity())
    assert not told_before(tmp_path, "run1", "team", more.identity())  # c is news: sent
    assert not told_before(tmp_path, "run1", "pager", first.identity())  # another channel
    assert not told_before(tmp_path, "run2", "team", first.identity())  # another run


def test_told_survives_a_re_run_fold_and_the_oldest_runs_are_forgotten(tmp_path, monkeypatch) -> None:
    snap = [ClusterSnapshot("leo", "slurm", ClusterStatus.OK, running=[Job("leo", "1", "sft__a", "RUNNING", "squeue")],
                            finished=[])]  # fmt: skip
    fold_sweep_run(tmp_path, snap, run_id="run1", window_end=END)
    mark_told(tmp_path, "run1", "team", "x")
    fold_sweep_run(tmp_path, snap, run_id="run1", window_end=END)  # re-run: folds against the ledger before it
    assert told_before(tmp_path, "run1", "team", "x")
    monkeypatch.setattr(told_mod, "KEEP_RUNS", 3)
    for i in range(2, 6):
        mark_told(tmp_path, f"run{i}", "team", "x")
    assert sorted(load_ledger(tmp_path).told) == ["run3", "run4", "run5"]


def test_run_outcomes_round_trip_and_survive_a_re_run_fold(tmp_path) -> None:
    from sweep_core.ledger.entries import Ledger
    from sweep_core.ledger.outcomes import record_outcome, tells_failing

    snap = [ClusterSnapshot("leo", "slurm", ClusterStatus.OK, running=[], finished=[])]
    fold_sweep_run(tmp_path, snap, run_id="run1", window_end=END)
    assert record_outcome(tmp_path, "run1", False, "t1") == (1, "")
    fold_sweep_run(tmp_path, snap, run_id="run1", window_end=END)  # its re-run folds against the ledger before
    assert record_outcome(tmp_path, "run1", False, "t2") == (1, "")  # the same run failing again: once
    assert record_outcome(tmp_path, "run2", False, "t3") == (2, "")
    raw = load_ledger(tmp_path).to_dict()
    assert Ledger.from_dict(raw).failing == ["run1", "run2"]
    assert record_outcome(tmp_path, "run3", True, "t4") == (0, "run3 t4")
    assert [tells_failing(n, 2) for n in range(1, 6)] == [False, True, False, True, False]
    assert not tells_failing(5, None)


def test_a_delivery_reads_the_told_record_once_and_tells_each_channel_once(tmp_path, monkeypatch) -> None:
    """alerts.deliver over three channels: the ledger is read ONCE before anything is sent (it was
    read once per channel), the channel this run already told is skipped, the others are told and
    remembered, and a second delivery sends nothing."""
    from types import SimpleNamespace

    from sweep_core.alerts.deliver import deliver

    msg = route(_digest("3h 0m", "a"), ["warn"])
    assert msg
    mark_told(tmp_path, "run1", "pager", msg.identity())
    reads: list[str] = []
    real = told_mod.read_top
    monkeypatch.setattr(told_mod, "read_top", lambda d, notes=None: (reads.append(str(d)), real(d, notes))[1])
    chans = [SimpleNamespace(name=n, kind="slack") for n in ("team", "pager", "ops")]
    sent: list[str] = []
    done = deliver([(ch, "run1", msg) for ch in chans], lambda ch, _m: sent.append(ch.name), tmp_path)
    assert reads == [str(tmp_path)] and sent == ["team", "ops"] and len(done.sent) == 2
    assert deliver([(ch, "run1", msg) for ch in chans], lambda ch, _m: sent.append(ch.name), tmp_path).sent == []
    assert sent == ["team", "ops"]
