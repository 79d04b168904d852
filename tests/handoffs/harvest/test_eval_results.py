"""Scores from standard-eval results JSON (MATH500 / AIME24 mean±se / gsm8k) for the harvest."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest

from sweep_core.handoffs.harvest.eval_results import (
    SOURCE_KEY,
    EvalResultsError,
    ScoreField,
    ScoreSpec,
    extract_scores,
    find_results_files,
    format_score,
    is_numeric,
    load_results,
    parse_results,
    scores_from_run_dir,
)
from sweep_core.handoffs.harvest.tracker_edit import fill_row
from sweep_core.handoffs.harvest.tracker_rows import pending_rows, read_rows

FIX = Path(__file__).parents[2] / "fixtures" / "eval_results"


def test_single_file_all_three() -> None:
    got = scores_from_run_dir(FIX / "single")
    assert got.problems == []
    m, a, g = got.scores["MATH500"], got.scores["AIME24"], got.scores["gsm8k"]
    assert (m.task, m.metric, m.mean) == ("minerva_math500", "exact_match,none", 0.332)
    assert (a.task, a.mean, a.se, a.n) == ("aime24", 0.04167, 0.01302, 1)
    assert (g.metric, g.mean) == ("exact_match,flexible-extract", 0.5709)  # flexible before strict
    assert m.source.endswith("results_2026-06-10T04-12-33.512345.json")
    assert got.cells() == {"MATH500": "33.2", "AIME24": "4.2±1.3", "gsm8k": "57.1"}


def test_one_file_per_task_with_aime_repeats() -> None:
    files = find_results_files(FIX / "per_task")
    assert [f.name for f in files] == sorted(f.name for f in files)
    got = extract_scores(load_results(files))
    aime = [0.0667, 0.1, 0.0333, 0.0667, 0.1333, 0.0667, 0.1, 0.0333]
    a = got.scores["AIME24"]
    assert a.n == 8
    assert a.mean == pytest.approx(statistics.fmean(aime))
    assert a.se == pytest.approx(statistics.stdev(aime) / math.sqrt(8))
    assert got.scores["MATH500"].task == "hendrycks_math500"
    assert got.scores["gsm8k"].task == "gsm8k_cot"
    assert got.cells() == {
        "MATH500": "42.8",
        "AIME24": format_score(statistics.fmean(aime), statistics.stdev(aime) / math.sqrt(8)),
        "gsm8k": "68.1",
    }
    assert got.cells()["AIME24"] == "7.5±1.2"


def test_empty_results_is_an_error_naming_the_file() -> None:
    docs = load_results(find_results_files(FIX / "empty"))
    with pytest.raises(EvalResultsError, match=r'"results" is empty in .*results_2026-06-09T22-10-05') as exc:
        extract_scores(docs)
    assert exc.value.problems


def test_nan_and_strings_are_not_numeric() -> None:
    docs = load_results(find_results_files(FIX / "nan_strings"))
    with pytest.raises(EvalResultsError) as exc:
        extract_scores(docs)
    msg = str(exc.value)
    assert "MATH500: task 'math500'" in msg and "no numeric score" in msg
    assert "gsm8k: task 'gsm8k'" in msg
    assert "AIME24" not in msg  # AIME24 = 0.1 is numeric; its "N/A" stderr only drops the ±
    partial = exc.value.partial
    assert partial is not None
    assert partial.scores["AIME24"].se is None
    assert partial.cells() == {"AIME24": "10.0"}
    assert len(exc.value.problems) == 2


def test_malformed_json_names_the_file() -> None:
    (path,) = find_results_files(FIX / "malformed")
    with pytest.raises(EvalResultsError, match=r"malformed/results_2026-06-10T04-12-33\.512345\.json: malformed JSON"):
        load_results([path])


def test_rerun_last_numeric_wins() -> None:
    got = scores_from_run_dir(FIX / "rerun")
    assert got.scores["gsm8k"].mean == 0.55  # the newer run
    assert got.scores["AIME24"].mean == 0.0333  # newer has "N/A": the older numeric score stays
    assert got.scores["AIME24"].source.endswith("results_2026-06-08T10-00-00.000000.json")


def test_seed_list_pass_at_1_and_percent_values_flagged() -> None:
    docs = load_results(find_results_files(FIX / "seed_list"))
    with pytest.raises(EvalResultsError, match=r"MATH500: math500 pass@1=81\.2 is outside \[0, 1\]") as exc:
        extract_scores(docs)
    partial = exc.value.partial
    assert partial is not None
    seeds = [0.1, 0.0667, 0.1333, 0.1]
    a = partial.scores["AIME24"]
    assert (a.n, a.metric) == (4, "pass@1")
    assert a.mean == pytest.approx(statistics.fmean(seeds))
    assert a.se == pytest.approx(statistics.stdev(seeds) / 2)
    assert partial.scores["gsm8k"].metric == "acc,none"


def test_optional_field_missing_is_a_problem_not_an_error() -> None:
    doc = parse_results('{"results": {"math500": {"exact_match,none": 0.5}}}', "mem.json")
    spec = ScoreSpec(
        fields=(
            ScoreField("MATH500", ("math500",)),
            ScoreField("AIME24", ("aime24",), with_se=True, required=False),
        )
    )
    got = extract_scores([doc], spec)
    assert got.cells() == {"MATH500": "50.0"}
    assert got.problems == ["AIME24: no task among ['aime24'] in the results (tasks present: math500)"]


def test_required_task_absent_names_task_and_present_ones() -> None:
    doc = parse_results('{"results": {"math500": {"exact_match,none": 0.5}, "gsm8k": {"acc,none": 0.7}}}', "x.json")
    with pytest.raises(EvalResultsError, match=r"AIME24: no task among \['aime24'.*tasks present: gsm8k, math500"):
        extract_scores([doc])


def test_repeat_without_numeric_score_is_not_silently_dropped() -> None:
    doc = parse_results(
        '{"results": {"math500": {"exact_match,none": 0.5}, "gsm8k": {"exact_match,flexible-extract": 0.7},'
        ' "aime24_repeat_0": {"exact_match,none": 0.1}, "aime24_repeat_1": {"exact_match,none": "N/A"}}}',
        "r.json",
    )
    with pytest.raises(EvalResultsError, match=r"AIME24: repeat task 'aime24_repeat_1' \(r\.json\) has no numeric"):
        extract_scores([doc])


def test_single_repeat_uses_its_stderr_and_custom_metric_keys() -> None:
    doc = parse_results(
        '{"results": {"AIME24_seed1": {"acc,none": 0.2, "acc_stderr,none": 0.07}}}',
        "s.json",
    )
    spec = ScoreSpec(fields=(ScoreField("AIME24", ("aime24",), metrics=("acc,none",), with_se=True),), scale=100)
    got = extract_scores([doc], spec)
    assert (got.scores["AIME24"].n, got.cells()["AIME24"]) == (1, "20.0±7.0")


def test_scale_one_keeps_raw_values() -> None:
    doc = parse_results('{"results": {"math500": {"pass@1": 81.25}}}', "p.json")
    got = extract_scores([doc], ScoreSpec(fields=(ScoreField("MATH500", ("math500",)),), scale=1))
    assert got.cells() == {"MATH500": "81.2"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("[1, 2]", "top level is list"),
        ('{"config": {}}', 'no "results" object'),
        ('{"results": []}', 'no "results" object'),
        ('{"results": {"a": 1', "malformed JSON"),
    ],
)
def test_parse_results_errors(text: str, message: str) -> None:
    with pytest.raises(EvalResultsError, match=message) as exc:
        parse_results(text, "bad.json")
    assert str(exc.value).startswith("bad.json: ")


def test_no_documents_and_no_files(tmp_path: Path) -> None:
    with pytest.raises(EvalResultsError, match="no results documents"):
        extract_scores([])
    with pytest.raises(EvalResultsError, match="no results_"):
        scores_from_run_dir(tmp_path)


def test_is_numeric_and_format() -> None:
    assert is_numeric(0.5) and is_numeric(1)
    assert not any(is_numeric(v) for v in (float("nan"), float("inf"), "0.5", None, True, [0.5]))
    assert format_score(0.8125) == "81.2"
    assert format_score(0.2333, 0.0212) == "23.3±2.1"
    assert format_score(0.5, 0.01, digits=2) == "50.00±1.00"


def test_source_key_and_doc_index_fallback() -> None:
    doc = parse_results('{"results": {}}', "src.json")
    assert doc[SOURCE_KEY] == "src.json"
    with pytest.raises(EvalResultsError, match=r"doc\[0\]"):
        extract_scores([{"results": {}}])


def test_harvest_flow_fills_tracker_row() -> None:
    """Leg 3 end to end on fixtures: read the pending row, extract, fill, flip to ✅."""
    tracker = (Path(__file__).parents[2] / "fixtures" / "trackers" / "SCORES.md").read_text(encoding="utf-8")
    row = pending_rows(tracker)[0]
    new = fill_row(tracker, row, scores_from_run_dir(FIX / "single").cells())
    (filled,) = [r for r in read_rows(new) if r.line_index == row.line_index]
    assert (filled.status, filled.cells["MATH500"], filled.cells["AIME24"], filled.cells["gsm8k"]) == (
        "done",
        "33.2",
        "4.2±1.3",
        "57.1",
    )


@pytest.mark.parametrize(
    "text",
    ['{"results": ' + "[" * 100_000 + "]" * 100_000 + "}", '{"results": {"a": {"acc": ' + "9" * 5000 + "}}}"],
    ids=["nested 100k deep", "5000-digit number"],
)
def test_parse_results_raises_only_eval_results_error(text: str) -> None:
    with pytest.raises(EvalResultsError, match="x.json: malformed JSON"):
        parse_results(text, "x.json")
