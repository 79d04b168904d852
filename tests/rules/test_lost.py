"""The wedged rule (issue 17): a WEDGED iris job's flag says since when, from the ledger (the first
sweep that saw 0 pods), else since this sweep with when it last had pods; critical, diagnose."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from sweep_core.config.sweep import load_sweep_config
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.fold import fold_sweep
from sweep_core.pipeline.steps import rules_step
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.rules.context import History

ROOT = Path(__file__).resolve().parents[2]
T0 = dt.datetime(2026, 12, 3, tzinfo=dt.UTC)


def _snap(hours: int, job: Job) -> ClusterSnapshot:
    running, finished = ([job], []) if job.state == "RUNNING" else ([], [job])
    end = (T0 + dt.timedelta(hours=hours)).isoformat()
    return ClusterSnapshot(
        "cw", "iris", ClusterStatus.OK, running=running, finished=finished, pending=[], window_end=end
    )


def test_a_wedge_is_dated_from_the_first_sweep_that_saw_it() -> None:
    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    ledger = Ledger()

    def sweep(hours: int, state: str) -> list:
        nonlocal ledger
        s = _snap(hours, Job("cw", "/sweep/rl__w", "rl__w", state, "squeue" if state == "RUNNING" else "sacct"))
        flags = [f for f in rules_step([s], config, {}, history=History(ledger=ledger)) if f.rule == "wedged"]
        end = T0 + dt.timedelta(hours=hours)
        ledger, _ = fold_sweep(ledger, [s], run_id=f"r{hours}", window_end=end)
        return flags

    assert sweep(3, "RUNNING") == []
    (first,) = sweep(6, "WEDGED")
    t3, t6 = ((T0 + dt.timedelta(hours=h)).isoformat() for h in (3, 6))
    assert first.message.startswith(f"0 pods since {t6} (this sweep; RUNNING with pods at {t3})")
    assert (first.severity, first.action) == ("critical", "diagnose")
    (later,) = sweep(9, "WEDGED")
    assert later.message.startswith(f"0 pods since {t6} (first sweep that saw 0 pods)")
