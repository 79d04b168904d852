"""VANISHED rows from the ledger (issue 17): a job live at the last sweep that KNEW its cluster and
listed nowhere now is a row of its own with its last-seen time, a flag and an action, for iris and
SLURM alike; UNKNOWN/UNREACHABLE sweeps in between do not move "last seen"."""

from __future__ import annotations

import datetime as dt

import pytest

from sweep_core.config.sweep import load_sweep_config
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.fold import fold_sweep
from sweep_core.ledger.vanished import vanished_jobs
from sweep_core.pipeline.steps import rules_step
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.rules.context import History

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)
BACK = dt.timedelta(hours=24)  # gather.catch_up_hours


def at(hours: int) -> dt.datetime:
    return T0 + dt.timedelta(hours=hours)


def snap(cluster: str, scheduler: str, hours: int, running=(), status=ClusterStatus.OK) -> ClusterSnapshot:
    ok = status == ClusterStatus.OK
    return ClusterSnapshot(
        cluster,
        scheduler,
        status,
        running=list(running) if ok else None,
        finished=[] if ok else None,
        pending=[] if ok else None,
        window_start=at(hours - 3).isoformat(),
        window_end=at(hours).isoformat(),
    )


def fold(ledger: Ledger, snaps: list[ClusterSnapshot], hours: int) -> tuple[Ledger, list[str]]:
    new, changes = fold_sweep(ledger, snaps, run_id=f"run{hours}", window_end=at(hours))
    return new, [c.line for c in changes]


@pytest.mark.parametrize(
    ("cluster", "scheduler", "job_id", "why"),
    [
        ("cw", "iris", "/sweep/rl__x", "record gone from the iris controller, which answered this sweep"),
        ("leo", "slurm", "4242", "not in squeue and not in sacct over"),
    ],
)
def test_a_job_that_vanishes_across_an_unknown_sweep_is_a_row_with_a_flag(cluster, scheduler, job_id, why) -> None:
    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    running = Job(cluster, job_id, "rl__x", "RUNNING", "squeue", bucket="RL")
    ledger, _ = fold(Ledger(), [snap(cluster, scheduler, 3, [running])], 3)
    down = snap(cluster, scheduler, 6, status=ClusterStatus.UNKNOWN)
    assert vanished_jobs(ledger, down, "Catch-all", BACK) == []  # nothing can be told of an UNKNOWN sweep
    ledger, _ = fold(ledger, [down], 6)
    assert ledger.jobs[f"{cluster}|{job_id}"].last_seen == at(3).isoformat()  # not reset

    now = snap(cluster, scheduler, 9)
    flags = rules_step([now], config, {}, history=History(ledger=ledger))
    (row,) = now.finished
    assert (row.job_id, row.state, row.end, row.exit_code, row.bucket) == (
        job_id,
        "VANISHED",
        at(3).isoformat(),
        "",
        "RL",
    )
    assert why in row.reason and "(was RUNNING)" in row.reason
    (flag,) = [f for f in flags if f.rule == "vanished"]
    assert flag.severity == "critical" and flag.action == "investigate" and flag.job_id == job_id

    ledger, lines = fold(ledger, [now], 9)
    assert lines == [
        f"cluster {cluster}: UNKNOWN → OK",
        f"vanished: {cluster} RL {job_id} rl__x (was RUNNING, last seen {at(3).isoformat()})",
    ]
    entry = ledger.jobs[f"{cluster}|{job_id}"]
    assert entry.state == "VANISHED" and entry.last_seen == at(3).isoformat()
    later = snap(cluster, scheduler, 12)
    rules_step([later], config, {}, history=History(ledger=ledger))
    assert later.finished == []  # told once


def test_a_listed_job_or_an_unknown_cluster_is_never_vanished() -> None:
    running = Job("cw", "/sweep/a", "rl__a", "RUNNING", "squeue", bucket="RL")
    ledger, _ = fold(Ledger(), [snap("cw", "iris", 3, [running])], 3)
    assert vanished_jobs(ledger, snap("cw", "iris", 6, [running]), "Catch-all", BACK) == []
    assert vanished_jobs(Ledger(), snap("cw", "iris", 6), "Catch-all", BACK) == []  # never known: no memory


def test_a_catch_up_capped_short_of_last_seen_leaves_it_to_the_fold() -> None:
    """sacct read back only to 8h (catch_up_hours 1) cannot tell a job last seen at 3h is gone: no
    VANISHED row; the fold says it ended while the sweeps did not read the cluster."""
    running = Job("leo", "4242", "rl__x", "RUNNING", "squeue", bucket="RL")
    ledger, _ = fold(Ledger(), [snap("leo", "slurm", 3, [running])], 3)
    ledger, _ = fold(ledger, [snap("leo", "slurm", 6, status=ClusterStatus.UNKNOWN)], 6)
    now = snap("leo", "slurm", 9)
    assert vanished_jobs(ledger, now, "Catch-all", dt.timedelta(hours=1)) == []
    _, lines = fold(ledger, [now], 9)
    assert lines[1].startswith("gone: leo RL 4242 rl__x (was RUNNING, ended while the sweeps did not read the cluster")


def test_a_rerun_of_the_sweep_that_told_a_vanish_tells_it_again(tmp_path) -> None:
    from sweep_core.ledger.store import fold_run, ledger_for_run

    def sweep(run: str, hours: int, running: list[Job]) -> list[str]:
        s = snap("cw", "iris", hours, running)
        ledger = ledger_for_run(tmp_path, run, at(hours).isoformat())
        rows = vanished_jobs(ledger, s, "Catch-all", BACK)
        s.finished = rows

        def folded(base: Ledger):
            new, changes = fold_sweep(base, [s], run_id=run, window_end=at(hours))
            return new, [c.line for c in changes]

        return [r.job_id for r in rows] + fold_run(tmp_path, run, at(hours).isoformat(), folded)

    sweep("r1", 3, [Job("cw", "/sweep/a", "rl__a", "RUNNING", "squeue", bucket="RL")])
    told = sweep("r2", 6, [])
    assert told[0] == "/sweep/a" and told[-1].startswith("vanished: cw RL /sweep/a")
    assert sweep("r2", 6, []) == told  # the re-run: the same row, the same change
