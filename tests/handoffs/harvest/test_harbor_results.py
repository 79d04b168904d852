"""Harbor (agentic eval) results in the tracker harvest: the job-level result.json parsed in its real
shape (tests/harbor_fixture.py cites Harbor's model and docs), never a silent zero (malformed,
unfinished, a trial's file, no metric: UNKNOWN with the reason, the row stays ⏳), and the script run by
real bash finds the job result under ``<results dir>/<run tag>/`` with one listing, never a trial's."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest
from harbor_fixture import EVAL_KEY, job_result, write_job_dir

from sweep_core.handoffs.harvest.harbor_results import HarborResultError, latest_job, parse_harbor_job
from sweep_core.handoffs.harvest.plan import JobReport, PendingRow, decide_row
from sweep_core.handoffs.harvest.remote import build_harvest_script, read_harvest
from sweep_core.handoffs.harvest.tracker_md import TrackerRow
from sweep_core.slurm.gather import new_marker, parse_gather_output

ROOT = Path(__file__).resolve().parents[3]
STUBS = ROOT / "tests" / "fixtures" / "slurm_stub"


def test_a_finished_job_gives_its_mean_and_counts() -> None:
    job = parse_harbor_job(json.dumps(job_result(passed=3, failed=1, errors=1)), "run/job/result.json")
    (ev,) = job.evals
    assert (ev.key, ev.dataset, ev.metric) == (EVAL_KEY, "terminal-bench@2.0", "mean")
    assert math.isclose(ev.mean, 0.6) and (ev.n_trials, ev.n_errors, job.n_total) == (5, 1, 5)
    assert job.note() == "terminal-bench@2.0 60.0 (5 scored of 5, 1 errors: AgentTimeoutError ×1)"


def test_legacy_stats_names_are_read() -> None:
    doc = job_result()
    stats = doc["stats"]
    stats["n_trials"], stats["n_errors"] = stats.pop("n_completed_trials"), stats.pop("n_errored_trials")
    assert parse_harbor_job(json.dumps(doc), "r").n_total == 5


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"n_total_trials": 5, "stats": ', "malformed JSON"),
        ("[1, 2]", "not an object"),
        (json.dumps({"trial_name": "t__x", "verifier_result": {"rewards": {"reward": 1}}}), "a trial's result.json"),
        (json.dumps({"id": "x", "stats": {}}), "not a Harbor job result"),
        (json.dumps(job_result(finished=False)), "unfinished: finished_at is null (5 of 5"),
        (json.dumps(job_result(pending=4)), "unfinished: 5 of 9 trials completed, 4 pending"),
        (json.dumps({**job_result(), "stats": {**job_result()["stats"], "evals": {}}}), "no stats.evals"),
        (json.dumps(job_result(metrics=[])), "no numeric metric"),
        (json.dumps(job_result(metrics=[{"mean": float("nan")}])), "no numeric metric"),
        (json.dumps(job_result(metrics=[{"mean": "0.6"}])), "no numeric metric"),
        (json.dumps(job_result(metrics=[{"mean": 60.0}])), "outside [0, 1]"),
    ],
    ids=["truncated", "list", "trial", "no-counts", "unfinished", "pending", "no-evals", "no-metric", "nan",
         "string", "percent"],
)  # fmt: skip
def test_what_cannot_be_scored_says_why_never_zero(text: str, why: str) -> None:
    with pytest.raises(HarborResultError) as got:
        parse_harbor_job(text, "run/job/result.json")
    assert why in str(got.value) and "run/job/result.json" in str(got.value)


def test_the_newest_finished_job_of_a_run_wins() -> None:
    old, new = job_result(passed=1, failed=4, errors=0), job_result(passed=4, failed=1, errors=0)
    new["finished_at"] = "2026-12-05T02:00:00"
    docs = {"r/a/result.json": json.dumps(old), "r/b/result.json": json.dumps(new),
            "r/c/result.json": json.dumps(job_result(finished=False))}  # fmt: skip
    assert latest_job(docs).source == "r/b/result.json"
    with pytest.raises(HarborResultError, match="unfinished"):
        latest_job({"r/c/result.json": json.dumps(job_result(finished=False))})


def _row(header: tuple[str, ...], run: str = "tb2_ot8b") -> PendingRow:
    cells = dict.fromkeys(header, "")
    return PendingRow(TrackerRow("/t/grid.md", 4, cells, "pending", "301", "tacc", run, "| x |", header), "tacc")


def test_decide_fills_the_datasets_column_or_flags_a_missing_one() -> None:
    rep = JobReport(state="COMPLETED", harbor={"tb2_ot8b/2026-12-04__21-02-11/result.json": json.dumps(job_result())})
    filled = decide_row(_row(("run", "eval job", "terminal-bench", "status")), rep)
    assert (filled.outcome, filled.cells) == ("filled", {"terminal-bench": "60.0"})
    assert list(filled.files) == ["tb2_ot8b/2026-12-04__21-02-11/result.json"]
    generic = decide_row(_row(("run", "eval job", "pass rate", "status")), rep)
    assert generic.cells == {"pass rate": "60.0"}
    flagged = decide_row(_row(("run", "eval job", "MATH500", "status")), rep)
    assert flagged.outcome == "flagged" and "no column for terminal-bench@2.0" in flagged.note
    bad = JobReport(state="COMPLETED", harbor={"tb2_ot8b/j/result.json": json.dumps(job_result(finished=False))})
    unknown = decide_row(_row(("run", "terminal-bench", "status")), bad)
    assert unknown.outcome == "flagged" and "UNKNOWN" in unknown.note and "unfinished" in unknown.note


def _harvest(tmp: Path, runs: dict[str, str]) -> dict[str, JobReport]:
    stub = tmp / "stub"
    stub.mkdir(exist_ok=True)
    rows = [{"JobID": j, "State": "COMPLETED", "JobName": f"eval-{j}"} for j in runs]
    (stub / "sacct_j.json").write_text(json.dumps(rows))
    marker = new_marker()
    script = build_harvest_script(list(runs), str(tmp / "eval_jobs"), "", marker, 1 << 20, runs=runs)
    env = {**os.environ, "PATH": f"{STUBS}:{os.environ['PATH']}", "STUB_DIR": str(stub), "TMPDIR": str(tmp)}
    proc = subprocess.run(["bash", "-s"], input=script, text=True, capture_output=True, env=env, timeout=30)
    out = parse_gather_output(proc.stdout, marker)
    assert out.complete, proc.stderr
    return read_harvest(out, list(runs), delimiter=marker)


def test_the_script_reads_job_results_under_the_run_dir_never_a_trials(tmp_path: Path) -> None:
    root = tmp_path / "eval_jobs"
    write_job_dir(root / "tb2_a", "2026-12-04__21-02-11", job_result())  # run dir holding job dirs
    write_job_dir(root / "tb2_a", "2026-12-05__01-00-00", job_result(finished=False))  # a resumed, unfinished one
    write_job_dir(root, "tb2_b", job_result(passed=1))  # the run dir IS the job dir: its trials not listed
    (root / "tb2_c" / "job").mkdir(parents=True)  # a job dir with no result.json yet
    (root / "tb2_d").mkdir()
    os.symlink(root / "tb2_a", root / "tb2_d" / "link")  # a symlinked job dir: not followed
    reps = _harvest(tmp_path, {"301": "tb2_a", "302": "tb2_b", "303": "tb2_c", "304": "tb2_d", "305": "../x"})
    assert sorted(reps["301"].harbor) == [
        "tb2_a/2026-12-04__21-02-11/result.json", "tb2_a/2026-12-05__01-00-00/result.json"]  # fmt: skip
    assert list(reps["302"].harbor) == ["tb2_b/result.json"]  # no trial's result.json
    assert reps["303"].harbor == reps["304"].harbor == reps["305"].harbor == {}
    assert latest_job(reps["301"].harbor).source == "tb2_a/2026-12-04__21-02-11/result.json"
    row = _row(("run", "eval job", "terminal-bench", "status"), "tb2_c")
    assert (
        decide_row(row, reps["303"]).note
        == "COMPLETED but no results_*.json in the eval's results dir (nor a Harbor result.json under its run tag)"
    )
