"""sweep_tracker_harvest's use-case (sweep_core.handoffs.harvest.usecase) with fake I/O: an unknown
or inactive cluster leaves its rows untouched (UNKNOWN, never failed) and is not contacted; a dry
run writes nothing; a harvest writes the row and the results file and commits them."""

from __future__ import annotations

import json
from pathlib import Path

from handoff_fakes import FakeSsh, cluster, ok, ops

from sweep_core.handoffs.harvest.plan import tracker_settings
from sweep_core.handoffs.harvest.usecase import harvest_record, harvest_trackers

GRID = (
    "# evals\n\n| base | run | eval job | MATH500 | AIME24 | gsm8k | status |\n|---|---|---|---|---|---|---|\n"
    "| q | cell_a | 101 | | | | ⏳ |\n| q | cell_b | leonardo:102 | | | | ⏳ |\n| q | cell_c | — | | | | ⏳ |\n"
)
SCORES = {"math500": {"acc,none": 0.25}, "aime24": {"pass@1,none": 0.5}, "gsm8k": {"exact_match,strict-match": 0.75}}
GOOD = json.dumps({"results": SCORES})


def _repo(tmp_path: Path) -> Path:
    grid = tmp_path / "exp" / "grid.md"
    grid.parent.mkdir(parents=True)
    grid.write_text(GRID)
    return grid


def _harvest(tmp_path: Path, ssh: FakeSsh, *configs, dry_run: bool = False, said=None, commits=None) -> dict:
    settings = tracker_settings({"repo": str(tmp_path), "default_cluster": "local"}, env={})

    def commit(repo: Path, files: list[Path], message: str) -> str:
        commits.append((repo, sorted(files), message))
        return "abc123"

    return harvest_trackers(
        settings,
        dry_run=dry_run,
        tail_bytes=4096,
        load_cluster=ops(*configs),
        run_script=ssh,
        say=(said if said is not None else []).append,
        commit=commit,
    )


def _sacct(text: str):
    return lambda m, s: {"sacct": ok(text.replace("|", m))}


def test_unknown_and_inactive_clusters_leave_rows_untouched_and_uncontacted(tmp_path) -> None:
    grid = _repo(tmp_path)
    ssh, commits = FakeSsh(), []
    got = _harvest(tmp_path, ssh, cluster("leonardo", status="skipped"), commits=commits)
    by_job = {o["job"]: (o["outcome"], o["note"]) for o in got["outcomes"]}
    assert by_job["local:101"][0] == "unknown" and by_job["local:101"][1].startswith("state UNKNOWN: ops.md: ")
    assert by_job["leonardo:102"] == ("unknown", "state UNKNOWN: leonardo is slurm/skipped")
    assert ssh.calls == [] and grid.read_text() == GRID and commits == []
    assert any("cell_c" in n for n in got["notes"])  # ⏳ without an eval job id: reported


def test_dry_run_says_what_each_row_would_become_and_writes_nothing(tmp_path) -> None:
    grid = _repo(tmp_path)
    said, commits = [], []
    ssh = FakeSsh({"harvest": _sacct("101|FAILED|eval-a\n")})
    got = _harvest(tmp_path, ssh, cluster(), cluster("leonardo"), dry_run=True, said=said, commits=commits)
    assert said == [
        f"DRY RUN: {grid}:6 job leonardo:102: would be unknown (sacct -j 102: no record)",
        f"DRY RUN: {grid}:5 job local:101: would be failed (eval FAILED (no traceback in the log tail))",
    ]
    assert grid.read_text() == GRID and commits == [] and got["dry_run"] is True
    assert "DRY RUN: nothing written" in harvest_record(got)


def test_harvest_fills_fails_and_commits_the_local_clone(tmp_path) -> None:
    grid = _repo(tmp_path)
    commits: list = []
    local = FakeSsh(
        {
            "harvest": lambda m, s: {
                "sacct": ok(f"101{m}COMPLETED{m}eval-a\n102{m}FAILED{m}eval-b\n"),
                "rname:101:1": ok("results_1.json"),
                "rfile:101:1": ok(GOOD),
            }
        }
    )
    got = _harvest(tmp_path, local, cluster(), cluster("leonardo"), commits=commits)
    assert [(c.cluster, c.what) for c in local.calls] == [("leonardo", "harvest"), ("local", "harvest")]
    assert {o["job"]: o["outcome"] for o in got["outcomes"]} == {"local:101": "filled", "leonardo:102": "failed"}
    lines = grid.read_text().splitlines()
    assert (
        lines[4] == "| q | cell_a | 101 | 25.0 | 50.0 | 75.0 | ✅ |"
        and "❌" in lines[5]
        and lines[6] == GRID.splitlines()[6]
    )
    assert (grid.parent / "cell_a" / "results_1.json").read_text() == GOOD
    assert commits == [
        (
            tmp_path.resolve(),
            sorted([grid, grid.parent / "cell_a" / "results_1.json"]),
            "tracker harvest: 2 row(s) updated",
        )
    ]
    assert "tracker commit (local clone, not pushed): abc123" in harvest_record(got)


def test_an_unsafe_results_name_is_skipped(tmp_path) -> None:
    grid = _repo(tmp_path)
    ssh = FakeSsh(
        {
            "harvest": lambda m, s: {
                "sacct": ok(f"101{m}COMPLETED{m}eval-a\n"),
                "rname:101:1": ok("results_$(id).json"),
                "rfile:101:1": ok(GOOD),
            }
        }
    )
    got = _harvest(tmp_path, ssh, cluster(), cluster("leonardo"), commits=[])
    a = next(o for o in got["outcomes"] if o["job"] == "local:101")
    assert "skipped (unsafe name)" in a["note"] and not (grid.parent / "cell_a").exists()


def test_a_completed_eval_on_a_cluster_without_eval_results_dir_names_the_field(tmp_path) -> None:
    """ops.md eval_results_dir empty (Leonardo's, left empty on purpose): the harvest script reads no
    results there, so the row stays ⏳ flagged naming the missing field, not a vague "no results"."""
    grid = _repo(tmp_path)
    ssh = FakeSsh({"harvest": _sacct("101|COMPLETED|eval-a\n102|COMPLETED|eval-b\n")})
    got = _harvest(tmp_path, ssh, cluster(), cluster("leonardo", eval_results_dir="/e/%j"), commits=[])
    notes = {o["job"]: (o["outcome"], o["note"]) for o in got["outcomes"]}
    assert notes["local:101"] == ("flagged", "COMPLETED but no eval_results_dir in local's ops.md (harvest OFF)")
    assert notes["leonardo:102"] == (
        "flagged",
        "COMPLETED but no results_*.json in the eval's results dir (nor a Harbor result.json under its run tag)",
    )
    assert "no eval_results_dir in local's ops.md" in grid.read_text()
