"""One edge for both cadences: the watch and the report sweep read each other's history, so a flag
one of them told is not told again by the other, and neither resolves a flag of a rule it did not run
(a watch run runs the fast rules only)."""

from __future__ import annotations

import datetime as dt

import pandas as pd

from sweep_core.alerts.digest import Digest, build_digest
from sweep_core.history.rows import sweep_frame
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag
from sweep_core.timing.cadence import WATCH_RULES, rules_of, watch_run_id

T0 = dt.datetime(2026, 12, 3, 3, 0, tzinfo=dt.UTC)


def flag(rule: str, severity: str, job_id: str, message: str) -> Flag:
    return Flag(rule=rule, severity=severity, cluster="leo", job_id=job_id, job_name=f"rl__{job_id}", bucket="RL",
                message=message)  # fmt: skip


WEDGE = flag("liveness_stale", "critical", "1", "no output for 95 min")
DONE = flag("completion_cleanup", "info", "3", "COMPLETED")
FAILED = flag("genuine_failure", "warn", "4", "FAILED 1:0")


def rows(run: str, minutes: int, *flags: Flag, status: ClusterStatus = ClusterStatus.OK) -> pd.DataFrame:
    end = T0 + dt.timedelta(minutes=minutes)
    snap = ClusterSnapshot("leo", "slurm", status, running=[], finished=[])
    return sweep_frame([snap], list(flags), run_id=run, window_start=end - dt.timedelta(minutes=5), window_end=end)


def digest(current: pd.DataFrame, *earlier: pd.DataFrame) -> Digest:
    past = pd.concat(earlier, ignore_index=True) if earlier else current.iloc[0:0]
    run = str(current["run_id"].iloc[0])
    return build_digest(current, past, run_id=run, cooldown_hours=24, rules_of=lambda r: rules_of(r, WATCH_RULES))


def test_a_flag_the_watch_told_is_not_told_again_by_the_report_and_vice_versa() -> None:
    report = rows("scheduled__2026-12-03T00:00:00+00:00", 0, DONE)
    watch = rows(watch_run_id("scheduled__2026-12-03T03:05:00+00:00"), 10, WEDGE)  # the wedge, 10 min later
    assert [t.item.text.split("]")[0] for t in digest(watch, report).new] == ["[liveness_stale"]
    # the watch ran no completion_cleanup: the report's flag is not "resolved" by it
    assert digest(watch, report).resolved == []
    report2 = rows("scheduled__2026-12-03T03:00:00+00:00", 180, WEDGE, DONE, FAILED)
    d = digest(report2, report, watch)
    assert [t.item.text.split("]")[0] for t in d.new] == ["[genuine_failure"]  # the wedge: told by the watch
    assert d.resolved == []
    watch2 = rows(watch_run_id("scheduled__2026-12-03T06:00:00+00:00"), 185, WEDGE, FAILED)
    d = digest(watch2, report, watch, report2)
    assert d.new == [] and d.resolved == []  # the failure the report told is not told again by the watch
    watch3 = rows(watch_run_id("scheduled__2026-12-03T06:05:00+00:00"), 190, FAILED)
    d = digest(watch3, report, watch, report2, watch2)
    assert d.new == [] and [i.text.split("]")[0] for i in d.resolved] == ["[liveness_stale"]  # a watch rule


def test_a_cluster_that_goes_unknown_is_told_once_across_the_cadences() -> None:
    watch = rows(watch_run_id("a"), 5, status=ClusterStatus.UNKNOWN)
    report = rows("scheduled__2026-12-03T00:00:00+00:00", 0)
    assert [t.item.severity for t in digest(watch, report).new] == ["warn"]
    later = rows("scheduled__2026-12-03T03:00:00+00:00", 180, status=ClusterStatus.UNKNOWN)
    assert digest(later, report, watch).new == []
