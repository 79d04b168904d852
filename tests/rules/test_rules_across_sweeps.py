"""Rules that read the per-job ledger of earlier sweeps: a link of a series that COMPLETED at max
steps in an earlier sweep is spurious (cancel), and the series' max steps fill a link's row."""

from __future__ import annotations

import datetime as dt

from helpers import table_rows
from rules.test_rules import CONFIG, NOW, ended, run

from sweep_core.ledger.fold import fold_sweep
from sweep_core.ledger.store import load_ledger, save_ledger
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.rules.context import History

T0 = dt.datetime(2026, 12, 3, 0, 0, tzinfo=dt.UTC)
STEP_ONLY = 'WANDB_MIRROR {{"trainer/global_step": {step}, "reward/mean": 0.4}}\n'  # no max steps in this log


def sweep_and_fold(tmp_path, hours: int, running=(), finished=(), pending=()):
    """One sweep as the DAG runs it: rules read the stored ledger, then the sweep is folded into it."""
    snap = ClusterSnapshot(
        "leo", "slurm", ClusterStatus.OK, remote_now=NOW, running=list(running), finished=list(finished),
        pending=list(pending),
    )  # fmt: skip
    result = run_fan_in([snap], CONFIG, history=History(known=True, ledger=load_ledger(tmp_path)))
    ledger, _ = fold_sweep(
        load_ledger(tmp_path), [snap], run_id=f"scheduled__{hours}", window_end=T0 + dt.timedelta(hours=hours),
    )  # fmt: skip
    save_ledger(tmp_path, ledger)
    return result, {(f.rule, f.job_id): f for f in result.flags}


def rl_row(result, job_id: str) -> dict[str, str]:
    """The job's row of the RL table as a person reads it (wrapped cells joined)."""
    return next(r for r in table_rows(result.rendered.tables["RL"]) if r["Job ID"] == job_id)


def test_a_link_of_a_series_that_completed_at_max_in_an_earlier_sweep_is_spurious(tmp_path) -> None:
    done = ended("rl__a2_cell7", "COMPLETED", "Training Step Progress: 500/500\n", job_id="101")
    _, flags = sweep_and_fold(tmp_path, 3, finished=[done])
    assert not any(rule == "rl_resume_overshoot" for rule, _ in flags)

    # next sweep: the COMPLETED link is out of the window; a resumed link runs and another waits
    link = run("rl__a2_cell7_resume1", STEP_ONLY.format(step=3), job_id="102")
    queued = Job("leo", "103", "rl__a2_cell7_resume2", "PENDING", "squeue-pending")
    result, flags = sweep_and_fold(tmp_path, 6, running=[link], pending=[queued])
    f = flags[("rl_resume_overshoot", "102")]
    assert f.action == "cancel" and f.severity == "warn"
    assert f.line() == (
        "[rl_resume_overshoot] WARN leo RL 102 rl__a2_cell7_resume1: earlier link 101 of series rl__a2_cell7"
        " already COMPLETED at max_steps (an earlier sweep) → cancel"
    )
    pending = flags[("rl_resume_overshoot", "103")]
    assert pending.action == "cancel" and "PENDING link: earlier link 101" in pending.message
    row = rl_row(result, "102")
    assert row["Step"] == "3/500" and "max steps 500 from earlier link 101" in row["Note"]


def test_the_series_max_steps_fill_a_link_that_never_printed_them(tmp_path) -> None:
    sweep_and_fold(tmp_path, 3, running=[run("rl__a2_cell8", "Training Step Progress: 120/500\n", job_id="201")])
    link = run("rl__a2_cell8_resume1", STEP_ONLY.format(step=500), job_id="202")
    result, flags = sweep_and_fold(tmp_path, 6, running=[link])
    row = rl_row(result, "202")
    assert row["Step"] == "500/500" and "max steps 500 from earlier link 201" in row["Note"]
    f = flags[("rl_resume_overshoot", "202")]  # at max and still RUNNING: spurious, with the filled max
    assert f.message == "RUNNING at step 500/500: past max_steps, spurious chain link" and f.action == "cancel"


def test_no_flag_without_a_completion_at_max_or_for_the_completed_job_itself(tmp_path) -> None:
    timed_out = ended("rl__a2_cell9", "TIMEOUT", "Training Step Progress: 250/500\n", job_id="301", exit_code="0:15")
    sweep_and_fold(tmp_path, 3, finished=[timed_out])
    link = run("rl__a2_cell9_resume1", STEP_ONLY.format(step=260), job_id="302")
    result, flags = sweep_and_fold(tmp_path, 6, running=[link])
    assert not any(rule == "rl_resume_overshoot" for rule, _ in flags)
    assert rl_row(result, link.job_id)["Step"] == "260/500"  # the max steps still come from the earlier link
    # a link the ledger itself saw COMPLETED at max (seen again, e.g. requeued under its id) is not its own overshoot
    sweep_and_fold(tmp_path, 9, finished=[ended("rl__a2_cell9", "COMPLETED", "Training Step Progress: 500/500\n",
                                                job_id="304")])  # fmt: skip
    _, flags = sweep_and_fold(tmp_path, 12, running=[run("rl__a2_cell9", STEP_ONLY.format(step=1), job_id="304")])
    assert ("rl_resume_overshoot", "304") not in flags
