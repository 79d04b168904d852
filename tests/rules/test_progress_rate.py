"""progress_rate: an RL/SFT series' steps/hour from the ledger's samples across its chain links (the
time between links is no training time), the ETA to max steps in the table's Rate column, and a
slowdown below a fraction of the series' own earlier rate flagged."""

from __future__ import annotations

from helpers import table_rows
from rules.test_progress_stalled import at, ended, job, rl_log, sweep_result


def rate_cell(result, job_id: str, table: str = "RL") -> str:
    return next(r for r in table_rows(result.rendered.tables[table]) if r["Job ID"] == job_id)["Rate"]


def slowdowns(result) -> list[str]:
    return [f.line() for f in result.flags if f.rule == "progress_rate"]


def test_steps_per_hour_and_eta_over_the_series_and_nothing_before_a_second_sighting(tmp_path) -> None:
    first = sweep_result(tmp_path, 1, [job("rl__a2_run", rl_log(0, top=1000), at(1), job_id="5")])
    assert rate_cell(first, "5") == "?"
    for n, step in ((2, 100), (3, 200)):
        result = sweep_result(tmp_path, n, [job("rl__a2_run", rl_log(step, top=1000), at(n), job_id="5")])
    assert rate_cell(result, "5") == "200/h, ETA 4h00m"  # (1000 - 200) / 200 per hour
    assert slowdowns(result) == []


def test_a_chain_restart_counts_only_training_time_of_each_link(tmp_path) -> None:
    sweep_result(tmp_path, 1, [job("rl__a2_ch", rl_log(100, top=500), at(1), job_id="10")])
    sweep_result(tmp_path, 2, [job("rl__a2_ch", rl_log(200, top=500), at(2), job_id="10")])
    gone = ended("rl__a2_ch", "TIMEOUT", rl_log(230, top=500), job_id="10", exit_code="0:15")
    sweep_result(tmp_path, 4, [job("rl__a2_ch_resume1", rl_log(180, top=500), at(4), job_id="11")], [gone])
    result = sweep_result(tmp_path, 5, [job("rl__a2_ch_resume1", rl_log(280, top=500), at(5), job_id="11")])
    # link 10: 100 steps in 30 min; link 11: 100 steps in 30 min; the hour between them is not counted
    assert rate_cell(result, "11") == "200/h, ETA 66 min"


def test_a_rate_that_drops_below_half_the_series_own_is_a_slowdown(tmp_path) -> None:
    for n, step in enumerate((0, 100, 200, 300), start=1):
        sweep_result(tmp_path, n, [job("sft__b1_slow", f"Total optimization steps = 900\n {step}/900 [", at(n),
                                       job_id="6")])  # fmt: skip
    result = sweep_result(tmp_path, 5, [job("sft__b1_slow", " 320/900 [", at(5), job_id="6")])
    assert slowdowns(result) == [
        "[progress_rate] WARN leo SFT 6 sft__b1_slow: slowdown: 40 steps/h over the last 30 min, below 0.5 x the"
        " series' 200 steps/h before (often a sick node) → investigate"
    ]
    assert rate_cell(result, "6", "SFT") == "160/h, ETA 3h37m"  # (320 - 0) / 2 h; (900 - 320) / 160
