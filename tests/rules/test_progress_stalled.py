"""progress_stalled across sweeps (issue 14): a RUNNING job whose counter stays put while its log keeps
being written is flagged on the second sweep, never the first; a job that advances, a quiet log, an
unreadable counter and a chain link continuing its series are not; the ledger keeps since when."""

from __future__ import annotations

import datetime as dt

from rules.test_rules import CONFIG, ended

from sweep_core.ledger.fold import fold_sweep
from sweep_core.ledger.store import load_ledger, save_ledger
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.rules.context import History

T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)
BEAT = "heartbeat: waiting for rollout workers\n"


def rl_log(step: int, beats: int = 3, top: int = 100) -> str:
    return f"Training Step Progress: {step}/{top}\n" + BEAT * beats


def job(name: str, tail: str, at: float, *, job_id: str, elapsed: str = "2:00:00", age_min: float = 1) -> Job:
    return Job("leo", job_id, name, "RUNNING", "squeue", elapsed=elapsed, log_tail=tail, log_mtime=at - age_min * 60)


def sweep(tmp_path, n: int, running=(), finished=()) -> dict[tuple[str, str], object]:
    """Sweep ``n`` (30 min apart, remote clock too): its progress_stalled flags."""
    result = sweep_result(tmp_path, n, running, finished)
    return {(f.rule, f.job_id): f for f in result.flags if f.rule == "progress_stalled"}


def sweep_result(tmp_path, n: int, running=(), finished=()):
    """Sweep ``n`` (30 min apart, remote clock too): rules read the stored ledger, then it is folded."""
    end = T0 + dt.timedelta(minutes=30 * n)
    snap = ClusterSnapshot(
        "leo", "slurm", ClusterStatus.OK, remote_now=end.timestamp(), running=list(running), finished=list(finished),
        pending=[],
    )  # fmt: skip
    result = run_fan_in([snap], CONFIG, history=History(known=True, ledger=load_ledger(tmp_path)))
    ledger, _ = fold_sweep(load_ledger(tmp_path), [snap], run_id=f"s{n}", window_end=end)
    save_ledger(tmp_path, ledger)
    return result


def at(n: int) -> float:
    return (T0 + dt.timedelta(minutes=30 * n)).timestamp()


def test_a_frozen_step_with_a_printing_log_is_stalled_on_the_second_sweep_not_the_first(tmp_path) -> None:
    assert sweep(tmp_path, 1, [job("rl__a2_wedge", rl_log(40), at(1), job_id="7")]) == {}
    flags = sweep(tmp_path, 2, [job("rl__a2_wedge", rl_log(40, 9), at(2), job_id="7")])
    f = flags[("progress_stalled", "7")]
    assert f.severity == "warn" and f.action == "investigate"
    assert f.message == (
        "progress stalled: step 40 unchanged since 2026-12-03 00:30 UTC (2 sweeps, 30 min) while the log kept"
        " being written (last output 1 min ago); last lines: 'Training Step Progress: 40/100' |"
        " 'heartbeat: waiting for rollout workers' ×9"
    )
    again = sweep(tmp_path, 3, [job("rl__a2_wedge", rl_log(40), at(3), job_id="7")])
    assert "(3 sweeps, 60 min)" in again[("progress_stalled", "7")].message  # since when stays put
    e = load_ledger(tmp_path).jobs["leo|7"]
    assert (e.counter, e.counter_value, e.counter_since, e.counter_sweeps) == ("step", 40, at(1), 3)
    assert e.samples == [[at(1), 40], [at(2), 40], [at(3), 40]]


def test_a_healthy_job_is_never_stalled_and_a_quiet_log_is_liveness_business(tmp_path) -> None:
    for n, step in enumerate((10, 20, 30), start=1):
        assert sweep(tmp_path, n, [job("rl__a2_ok", rl_log(step), at(n), job_id="8")]) == {}
    # the same step, and the log not written since the last sweep (31 min old, under the 30-min
    # cadence + slack? no: stale is liveness's flag) -> not a stall that keeps printing
    quiet = job("rl__a2_ok", rl_log(30), at(4), job_id="8", age_min=29)
    quiet.log_mtime = at(3) - 60  # exactly the mtime the last sweep saw
    assert sweep(tmp_path, 4, [quiet]) == {}


def test_an_unreadable_counter_is_unknown_never_stalled(tmp_path) -> None:
    sweep(tmp_path, 1, [job("rl__a2_mute", rl_log(5), at(1), job_id="9")])
    assert sweep(tmp_path, 2, [job("rl__a2_mute", BEAT * 5, at(2), job_id="9")]) == {}  # no step line: unknown
    assert load_ledger(tmp_path).jobs["leo|9"].counter_sweeps == 1  # the unknown sweep counts for nothing
    flags = sweep(tmp_path, 3, [job("rl__a2_mute", rl_log(5), at(3), job_id="9")])
    assert "step 5 unchanged since 2026-12-03 00:30 UTC (2 sweeps, 60 min)" in flags[("progress_stalled", "9")].message


def test_a_chain_restart_continues_the_series_counter(tmp_path) -> None:
    sweep(tmp_path, 1, [job("rl__a2_cell3", rl_log(50), at(1), job_id="20")])
    link1_end = ended("rl__a2_cell3", "TIMEOUT", rl_log(55), job_id="20", exit_code="0:15")
    # the next link resumed from the checkpoint and moves on: not stalled
    assert sweep(tmp_path, 2, [job("rl__a2_cell3_resume1", rl_log(58), at(2), job_id="21")], [link1_end]) == {}
    e = load_ledger(tmp_path).jobs["leo|21"]
    assert (e.counter_value, e.counter_sweeps, e.counter_from) == (58, 1, "leo|20")
    # a link that comes back at the series' last value and stays there is stalled, since the earlier link
    sweep(tmp_path, 3, [], [ended("rl__a2_cell3_resume1", "TIMEOUT", rl_log(60), job_id="21", exit_code="0:15")])
    flags = sweep(tmp_path, 4, [job("rl__a2_cell3_resume2", rl_log(60), at(4), job_id="22")])
    assert "step 60 unchanged since 2026-12-03 01:30 UTC (2 sweeps, 30 min, carried from earlier link 21)" in (
        flags[("progress_stalled", "22")].message
    )


def test_a_new_link_still_loading_its_checkpoint_is_not_judged_yet(tmp_path) -> None:
    sweep(tmp_path, 1, [], [ended("sft__b1_cell1", "TIMEOUT", "Total optimization steps = 90\n 30/90 [", job_id="30")])
    young = job("sft__b1_cell1", " 30/90 [00:10<03:40]\n" + BEAT, at(2), job_id="31", elapsed="12:00")
    assert sweep(tmp_path, 2, [young]) == {}
