"""progress_unreadable: a RUNNING job whose bucket progress cannot be read once its cadence has
passed is flagged with why; before that, or when progress reads, nothing is said."""

from __future__ import annotations

import datetime as dt

from rules.test_rules import CONFIG, NOW, log, run, sweep

from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus


def lines(flags) -> dict[str, str]:
    return {name: f.line() for (rule, name), f in flags.items() if rule == "progress_unreadable"}


def test_an_rl_job_with_no_step_after_its_cadence_is_flagged_with_why() -> None:
    job = run("rl__a2_mute", "starting workers\nloading checkpoint\n", job_id="41", elapsed="1:10:00")
    result, flags = sweep([job])
    assert lines(flags) == {
        "rl__a2_mute": "[progress_unreadable] WARN leo RL 41 rl__a2_mute: progress unreadable: no step line"
        " (Training Step Progress / trainer/global_step) in the log tail; no WANDB_MIRROR metric dict in this"
        " log or its chain logs; no known log format found in the tail (default and profiles: verl, openrlhf, skyrl,"
        " ms-swift-rl, llamafactory, trl) (running 70 min, cadence 30 min)"
    }
    table = result.rendered.tables["RL"]
    assert "[progress_unreadable]" in table and "?: no step line" not in table  # said once, in the flag


def test_before_the_cadence_has_passed_no_flag() -> None:
    _, flags = sweep([run("rl__a2_young", "starting workers\n", elapsed="12:00")])
    assert lines(flags) == {}


def test_readable_progress_or_no_progress_metric_raises_nothing() -> None:
    _, flags = sweep(
        [
            run("rl__a2_ok", log("rl_healthy.out"), elapsed="2:00:00"),
            run("misc__notebook", "hello\n", elapsed="5-00:00:00"),  # Catch-all has no progress metric
        ]
    )
    assert lines(flags) == {}


def test_every_bucket_says_what_it_could_not_read() -> None:
    _, flags = sweep(
        [
            run("sft__cell1", "{'loss': 0.5}\n", elapsed="01:00:00"),
            run("datagen__tb", "warming up\n", elapsed="2:00:00"),
            run("eval-gpqa", "pass_rate=0.4\n", elapsed="1:00:00"),
            run("eval-mmlu", "12/500 trials\n", elapsed="1:00:00"),
            run("datagen__counted", "412 result.json\n", elapsed="2:00:00"),  # not an array job: the count
        ]
    )
    got = lines(flags)
    assert set(got) == {"sft__cell1", "datagen__tb", "eval-gpqa"}
    # a bare loss dict is read by the general reader (issue 40), which says which step sources it looked for
    assert "progress unreadable: no step line (a step header, name or training bar)" in got["sft__cell1"]
    assert "chunk counts unknown" in got["datagen__tb"] and "(running 120 min, cadence 60 min)" in got["datagen__tb"]
    assert "no trial progress line (N/M trials)" in got["eval-gpqa"]


def test_an_unreadable_log_is_the_why() -> None:
    job = run("rl__a2_nolog", "", elapsed="3:00:00", log_note="log not found: /scratch/x.out")
    result, flags = sweep([job])
    assert "progress unreadable: log not found: /scratch/x.out; no step line" in lines(flags)["rl__a2_nolog"]
    assert result.rendered.tables["RL"].count("log not found") == 1  # the flag says it; no second copy


def test_a_past_windows_running_rows_read_from_sacct_are_not_flagged() -> None:
    job = run("rl__a2_then", "", job_id="42", elapsed="1:10:00")
    end = dt.datetime.fromtimestamp(NOW - 2 * 3600, dt.UTC)
    snap = ClusterSnapshot("leo", "slurm", ClusterStatus.OK, running=[job], finished=[], remote_now=NOW,
                           window_start=(end - dt.timedelta(hours=1)).isoformat(), window_end=end.isoformat())  # fmt: skip
    result = run_fan_in([snap], CONFIG)
    assert [f.rule for f in result.flags if f.rule == "progress_unreadable"] == []
    _, current = sweep([run("rl__a2_now", "", job_id="43", elapsed="1:10:00")])
    assert lines(current)  # the same row in a current window is flagged
