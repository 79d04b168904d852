"""sweep_tracker_harvest end to end: real eval jobs on the real cluster write results JSON; a real
git repo holds the tracker; every other byte of the tracker survives."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from lab import HOME
from sweep_runner import run_dag

pytestmark = pytest.mark.cluster
TRACKER = "experiments/active/delphi/base_sft_evals/grid.md"


def _results(math500: float, aime: list[float], gsm8k: float) -> str:
    res = {"math500": {"exact_match,none": math500}, "gsm8k": {"exact_match,flexible-extract": gsm8k}}
    for i, a in enumerate(aime):
        res[f"aime24_repeat_{i}"] = {"exact_match,none": a}
    return json.dumps({"results": res, "config": {"model": "x"}})


def _eval_job(c, name: str, body: str) -> str:
    script = f"d={HOME}/jobs/eval/$SLURM_JOB_ID; mkdir -p $d; {body}"
    return c.submit(name, script)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _tracker_clone(tmp_path: Path, rel: str, text: str) -> tuple[Path, Path]:
    """(clone, tracker): a real git repo holding ``text`` at ``rel``, committed."""
    repo = tmp_path / "clone"
    tracker = repo / rel
    tracker.parent.mkdir(parents=True)
    tracker.write_text(text)
    _git(repo.parent, "init", "-q", str(repo))
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tracker")
    return repo, tracker


def test_harvest_fills_flags_and_fails_rows_preserving_the_rest(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    good_json = _results(0.428, [0.1, 0.0667, 0.1333], 0.681).replace("'", "'\\''")
    good = _eval_job(c, f"eval-{tag}_good", f"printf '%s' '{good_json}' > $d/results_2026-12-02T10-00-00.json")
    empty = _eval_job(c, f"eval-{tag}_empty", "printf '%s' '{\"results\": {}}' > $d/results_2026-12-02T10-00-01.json")
    failed = c.submit(
        f"eval-{tag}_boom",
        "echo 'Traceback (most recent call last):'; echo '  File \"x.py\", line 1'; "
        "echo 'torch.OutOfMemoryError: CUDA out of memory'; exit 1",
    )
    running = c.submit(f"eval-{tag}_slow", "sleep 600")
    for j, st in ((good, "COMPLETED"), (empty, "COMPLETED"), (failed, "FAILED")):
        c.wait_finished(j, st)
    c.wait_running(running)

    original = (
        "# base_sft_evals — base-model SFT grid\n\nProse stays   exactly as it was.  \n\n"
        "| base | recipe | run | eval job | MATH500 | AIME24 | gsm8k | status | notes |\n"
        "|------|--------|-----|----------|---------|--------|-------|--------|-------|\n"
        "| Qwen2.5-1.5B | openmath | qwen25_1p5b__openmath | local:100 | 42.8 | 6.7±1.9 | 68.1 | ✅ | |\n"
        f"| Qwen2.5-1.5B | tulu3 | qwen25_1p5b__tulu3 | local:{good} | | | | ⏳ | |\n"
        f"| Llama-3.2-1B | openmath | llama32_1b__openmath | {empty} | | | | ⏳ | |\n"
        f"| Llama-3.2-1B | tulu3 | llama32_1b__tulu3 | local:{failed} | | | | ⏳ | |\n"
        f"| OLMo-2-1B | openmath | olmo2_1b__openmath | local:{running} | | | | ⏳ | |\n"
        "| OLMo-2-1B | tulu3 | olmo2_1b__tulu3 | — | | | | ⏳ | upload pending |\n"
        "\nTrailing prose | with a pipe.\n"
    )
    repo, tracker = _tracker_clone(tmp_path, TRACKER, original)
    env = {"SWEEP_TRACKER_REPO": str(repo)}

    dry = run_dag("sweep_tracker_harvest", {"dry_run": True}, tmp_path / "logs", **env)
    assert dry.state == "success", dry.task_states
    assert tracker.read_text() == original  # dry run: nothing written

    run = run_dag("sweep_tracker_harvest", {"dry_run": False}, tmp_path / "logs", **env)
    assert run.state == "success", run.task_states
    new = tracker.read_text()
    old_lines, new_lines = original.splitlines(keepends=True), new.splitlines(keepends=True)
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    assert len(changed) == 3  # the good, empty and failed rows; every other byte kept
    filled, flagged, failed_line = (new_lines[i] for i in changed)
    assert "42.8" in filled and "10.0±1.9" in filled and "68.1" in filled and "✅" in filled
    assert "⏳" in flagged and "COMPLETED but" in flagged and "empty" in flagged.lower()
    assert "❌" in failed_line and "OutOfMemoryError" in failed_line
    assert (tracker.parent / "qwen25_1p5b__tulu3" / "results_2026-12-02T10-00-00.json").read_text() == json.loads(
        json.dumps(good_json.replace("'\\''", "'"))
    )
    assert "tracker harvest" in _git(repo, "log", "-1", "--format=%s")
    assert _git(repo, "status", "--porcelain") == ""
    outcomes = {o["job"].split(":")[1]: o["outcome"] for o in run.values["harvest"]["outcomes"]}
    assert outcomes == {good: "filled", empty: "flagged", failed: "failed", running: "waiting"}
    assert any("without an eval job id" in n for n in run.values["harvest"]["notes"])

    again = run_dag("sweep_tracker_harvest", {"dry_run": False}, tmp_path / "logs", **env)
    assert tracker.read_text() == new  # nothing harvested twice, no note stacked
    assert {o["outcome"] for o in again.values["harvest"]["outcomes"]} == {"flagged", "waiting"}


def test_harvest_reads_harbor_job_results_under_the_run_tag(local_cluster, tag, tmp_path) -> None:
    """Agentic evals (Harbor, TACC's listener): the eval job writes <results dir>/<run tag>/<job>/
    result.json with its trial dirs beside it; the harvest fills the dataset's column from the
    job-level result, keeps an unfinished one ⏳ with why, and copies the job result next to the tracker."""
    import base64

    from harbor_fixture import job_result, trial_names, trial_result

    def harbor_job(name: str, run: str, doc: dict) -> str:
        files = {f"{run}/2026-12-04__21-02-11/result.json": json.dumps(doc, indent=4),
                 f"{run}/2026-12-04__21-02-11/config.json": "{}"}  # fmt: skip
        for i, trial in enumerate(trial_names(5)):
            files[f"{run}/2026-12-04__21-02-11/{trial}/result.json"] = json.dumps(trial_result(trial, float(i < 3)))
        body = "; ".join(
            f"mkdir -p $d/$(dirname {p}); echo {base64.b64encode(t.encode()).decode()} | base64 -d > $d/{p}"
            for p, t in files.items()
        )
        return _eval_job(c, name, body)

    c = local_cluster
    good = harbor_job(f"eval-{tag}_tb_good", f"tb2_{tag}_good", job_result(passed=3, failed=1, errors=1))
    cut = harbor_job(f"eval-{tag}_tb_cut", f"tb2_{tag}_cut", job_result(pending=3, finished=False))
    for j in (good, cut):
        c.wait_finished(j, "COMPLETED")
    repo, tracker = _tracker_clone(
        tmp_path,
        "experiments/active/ot-agent/tacc_evals/grid.md",
        "| run | eval job | terminal-bench | status | notes |\n|---|---|---|---|---|\n"
        f"| tb2_{tag}_good | local:{good} | | ⏳ | |\n| tb2_{tag}_cut | local:{cut} | | ⏳ | |\n",
    )

    run = run_dag("sweep_tracker_harvest", {"dry_run": False}, tmp_path / "logs", SWEEP_TRACKER_REPO=str(repo))
    assert run.state == "success", run.task_states
    outcomes = {o["job"].split(":")[1]: o for o in run.values["harvest"]["outcomes"]}
    assert outcomes[good]["outcome"] == "filled" and "terminal-bench@2.0 60.0" in outcomes[good]["note"]
    assert outcomes[cut]["outcome"] == "flagged" and "UNKNOWN" in outcomes[cut]["note"]
    assert "unfinished" in outcomes[cut]["note"]
    lines = tracker.read_text().splitlines()
    assert "| 60.0 |" in lines[2] and "✅" in lines[2]
    assert "⏳" in lines[3] and "unfinished" in lines[3]
    copied = tracker.parent / f"tb2_{tag}_good" / "2026-12-04__21-02-11" / "result.json"
    assert json.loads(copied.read_text())["n_total_trials"] == 5
    assert not any(p.name != "result.json" for p in (tracker.parent / f"tb2_{tag}_good").rglob("*") if p.is_file())
