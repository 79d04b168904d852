"""Cleanup guards (sweep_core.handoffs.cleanup.plan) and the rm/verify scripts run by real bash on real files."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from rm_race import make_race_tree, swapper, wait_rms_done

from sweep_core.handoffs.cleanup.plan import (
    CleanupConfigError,
    CleanupTarget,
    ClusterState,
    PathCheck,
    candidate_paths,
    cleanup_config,
    decide,
    hub_repo_id,
    inside_roots,
)
from sweep_core.handoffs.cleanup.remote import (
    RM_SQUEUE_HEADER,
    RmItem,
    build_rm_script,
    build_verify_script,
    reclaim_lines,
)
from sweep_core.slurm.gather import new_marker, parse_gather_output

CFG = cleanup_config({"hub_org": "myorg"})
ROOTS = {"/work/art": "/gpfs/work/art"}  # the root itself is a symlink on the cluster
AGENTIC = CFG.flavors["rl-agentic-job-cleanup"]
T = CleanupTarget("leo", "4242", "rl__a2_harbor_q8b", "rl-agentic-job-cleanup")
HUB_OK = [{"repo_id": "myorg/x", "repo_type": "model", "ok": True, "reason": "all files"}]
DONE = ClusterState(squeue_ok=True, states={"4242": "COMPLETED"})
M = new_marker()
RACE_TRIES = 500


def _check(sub: str, resolved: str | None = None, kind: str = "directory") -> PathCheck:
    given = f"/work/art/rl__a2_harbor_q8b/{sub}"
    return PathCheck(given, True, resolved or f"/gpfs/work/art/rl__a2_harbor_q8b/{sub}", kind)


def test_candidate_paths_and_hub_repo() -> None:
    paths = candidate_paths(T, AGENTIC, ("/work/art/",), CFG)
    assert paths == [
        "/work/art/rl__a2_harbor_q8b/trace_jobs",
        "/work/art/rl__a2_harbor_q8b/tasks",
        "/work/art/rl__a2_harbor_q8b/exports",
    ]
    assert [hub_repo_id(a, T, "myorg") for a in AGENTIC.hub] == [
        "myorg/rl__a2_harbor_q8b",
        "myorg/rl__a2_harbor_q8b-traces",
    ]


@pytest.mark.parametrize("name", ["../../etc", "a/b", "..", ".hidden", "x y", ""])
def test_unsafe_job_name_builds_no_path(name: str) -> None:
    with pytest.raises(ValueError, match="is not a plain name"):
        candidate_paths(CleanupTarget("leo", "1", name or "?/", "sft-job-cleanup"), AGENTIC, ("/work/art",), CFG)


def test_all_guards_hold_gives_delete_of_resolved_paths() -> None:
    checks = [_check("trace_jobs"), _check("tasks"), PathCheck("/work/art/rl__a2_harbor_q8b/exports", False)]
    d = decide(T, AGENTIC, DONE, checks, ROOTS, HUB_OK)
    assert d.action == "delete", d.reasons
    assert d.paths == ["/gpfs/work/art/rl__a2_harbor_q8b/trace_jobs", "/gpfs/work/art/rl__a2_harbor_q8b/tasks"]
    assert set(d.roots.values()) == {"/gpfs/work/art"}


@pytest.mark.parametrize(
    ("state", "why"),
    [
        (ClusterState(squeue_ok=False, squeue_problem="slurm_load_jobs error: Socket timed out"), "squeue UNKNOWN"),
        (ClusterState(squeue_ok=True, live={"4242": "RUNNING"}, states={"4242": "COMPLETED"}), "never cleaned"),
        (ClusterState(squeue_ok=True, sacct_ok=False, sacct_problem="Connection refused"), "no positive done-signal"),
        (ClusterState(squeue_ok=True, states={}), "no record"),
        (ClusterState(squeue_ok=True, states={"4242": "FAILED"}), "not COMPLETED"),
    ],
)
def test_scheduler_guards_block(state: ClusterState, why: str) -> None:
    d = decide(T, AGENTIC, state, [_check("trace_jobs")], ROOTS, HUB_OK)
    assert d.action == "blocked" and d.paths == []
    assert why in d.reasons[0]


@pytest.mark.parametrize(
    ("check", "why"),
    [
        (_check("trace_jobs", "/etc"), "symlink escape"),
        (_check("trace_jobs", "/gpfs/work/art/other_job/trace_jobs"), "inside the roots: not followed"),
        (_check("trace_jobs", "/gpfs/work/art"), "artifact root"),
        (PathCheck("/work/art", True, "/gpfs/work/art", "directory"), "artifact root"),
        (PathCheck("/work/art/x/../../etc", True, "/etc", "directory"), "'..'"),
        (PathCheck("/scratch/x/trace_jobs", True, "/scratch/x/trace_jobs", "directory"), "not under any artifact root"),
        (_check("trace_jobs", kind="regular file"), "not a directory"),
        (PathCheck("/work/art/rl__a2_harbor_q8b/tasks", True, problem="does not resolve"), "probe error"),
    ],
)
def test_path_guards_block(check: PathCheck, why: str) -> None:
    d = decide(T, AGENTIC, DONE, [check], ROOTS, HUB_OK)
    assert d.action == "blocked" and d.paths == []
    assert why in d.reasons[0], d.reasons


@pytest.mark.parametrize(
    ("hub", "why"),
    [
        ([], "no hub evidence"),
        ([{"repo_id": "o/r", "repo_type": "model", "ok": False, "reason": "repo not on the hub"}], "hub check failed"),
        ([{"repo_id": "o/r", "repo_type": "model", "ok": None, "reason": "hub unreachable"}], "hub check UNKNOWN"),
        ([*HUB_OK, {"repo_id": "o/t", "repo_type": "dataset", "ok": False, "reason": "missing *.parquet"}], "o/t"),
    ],
)
def test_hub_guard_blocks(hub: list[dict], why: str) -> None:
    d = decide(T, AGENTIC, DONE, [_check("trace_jobs")], ROOTS, hub)
    assert d.action == "blocked" and d.paths == []
    assert any(why in r for r in d.reasons), d.reasons


def test_datagen_needs_every_chunk_completed() -> None:
    spec = CFG.flavors["datagen-job-cleanup"]
    t = CleanupTarget("leo", "900_3", "datagen__mm", "datagen-job-cleanup")
    chk = PathCheck("/work/art/datagen__mm/chunks", True, "/gpfs/work/art/datagen__mm/chunks", "directory")
    partial = ClusterState(squeue_ok=True, states={"900_0": "COMPLETED", "900_1": "FAILED", "900_3": "COMPLETED"})
    d = decide(t, spec, partial, [chk], ROOTS, HUB_OK)
    assert d.action == "blocked" and "2/3" in d.reasons[0] and "FAILED" in d.reasons[0]
    pending = ClusterState(squeue_ok=True, states={"900_0": "COMPLETED", "900_[1-3]": "PENDING"})
    assert decide(t, spec, pending, [chk], ROOTS, HUB_OK).action == "blocked"
    done = ClusterState(squeue_ok=True, states={"900_0": "COMPLETED", "900_1": "COMPLETED", "900_3": "COMPLETED"})
    assert decide(t, spec, done, [chk], ROOTS, HUB_OK).action == "delete"
    live = ClusterState(squeue_ok=True, live={"900": "RUNNING"}, states=done.states)
    assert "never cleaned" in decide(t, spec, live, [chk], ROOTS, HUB_OK).reasons[0]


LIVE_STATES = ["RUNNING", "PENDING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "CONFIGURING", "COMPLETING", "STOPPED"]


@pytest.mark.parametrize("live_state", LIVE_STATES)
def test_live_job_of_the_same_name_blocks_the_completed_one(live_state: str) -> None:
    """Trees are keyed by name: job 4242 COMPLETED, 4243 of the same name listed by squeue."""
    state = ClusterState(
        squeue_ok=True, live={"4243": live_state}, live_jobs=[("4243", T.name, live_state)], states=DONE.states
    )
    d = decide(T, AGENTIC, state, [_check("trace_jobs")], ROOTS, HUB_OK)
    assert d.action == "blocked" and d.paths == []
    assert f"4243 ({live_state})" in d.reasons[0] and "same artifact dir" in d.reasons[0]


def test_live_job_of_another_dir_does_not_block() -> None:
    other = ClusterState(squeue_ok=True, live_jobs=[("4243", "rl__other", "RUNNING")], states=DONE.states)
    assert decide(T, AGENTIC, other, [_check("trace_jobs")], ROOTS, HUB_OK).action == "delete"
    # with {job_id} in the dir template the same name is another dir; the same id is not
    same_name = ClusterState(squeue_ok=True, live_jobs=[("4243", T.name, "RUNNING")], states=DONE.states)
    per_id = "{root}/{name}/{job_id}"
    assert decide(T, AGENTIC, same_name, [_check("trace_jobs")], ROOTS, HUB_OK, per_id).action == "delete"
    assert decide(T, AGENTIC, same_name, [_check("trace_jobs")], ROOTS, HUB_OK).action == "blocked"


def test_config_rejects_an_artifact_dir_shared_by_every_job() -> None:
    with pytest.raises(CleanupConfigError, match="one dir per job"):
        cleanup_config({"artifact_dir": "{root}/all"})
    with pytest.raises(CleanupConfigError, match="only"):
        cleanup_config({"artifact_dir": "{root}/{name}/{user}"})


def test_already_removed_is_nothing_to_do() -> None:
    gone = [PathCheck(f"/work/art/rl__a2_harbor_q8b/{s}", False) for s in AGENTIC.delete]
    d = decide(T, AGENTIC, DONE, gone, ROOTS, HUB_OK)
    assert d.action == "nothing-to-do" and d.paths == []


def test_inside_roots_accepts_only_strict_descendants() -> None:
    assert inside_roots("/a/r/j/x", "/a/r/j/x", {"/a/r": "/a/r"}) is None
    assert inside_roots("/a/rr/j", "/a/rr/j", {"/a/r": "/a/r"}) is not None  # prefix is not a parent
    assert inside_roots("/x", "/x", {"/": "/"}) is not None  # "/" is never a usable root


def test_config_rejects_unsafe_delete_subdirs_and_empty_hub() -> None:
    with pytest.raises(CleanupConfigError, match="plain relative"):
        cleanup_config({"flavors": {"x": {"hub": HUB_CFG, "delete": ["../etc"]}}})
    with pytest.raises(CleanupConfigError, match="plain relative"):
        cleanup_config({"flavors": {"x": {"hub": HUB_CFG, "delete": ["/abs"]}}})
    with pytest.raises(CleanupConfigError, match="nothing would prove"):
        cleanup_config({"flavors": {"x": {"hub": [], "delete": ["tasks"]}}})


HUB_CFG = [{"repo": "{org}/{name}", "type": "model", "expected": ["config.json"]}]


def _squeue_stub(rows: str = "", fail: str = "") -> str:
    """A STUB squeue (these tests are about paths; the real squeue re-check runs on the cluster
    in test_cleanup_local.py): the header + ``rows``, or ``fail`` on stderr with exit 1."""
    if fail:
        return f"#!/bin/sh\necho {shlex.quote(fail)} >&2\nexit 1\n"
    return f"#!/bin/sh\necho {shlex.quote(RM_SQUEUE_HEADER)}\nprintf %s {shlex.quote(rows)}\n"


def _bash(script: str, squeue: str = "", cwd: Path | None = None) -> str:
    """Run a script by real bash with ``squeue`` (a _squeue_stub text) first on PATH."""
    with tempfile.TemporaryDirectory(prefix="squeue-stub-") as stub:
        (Path(stub) / "squeue").write_text(squeue or _squeue_stub())
        (Path(stub) / "squeue").chmod(0o755)
        env = {**os.environ, "PATH": f"{stub}:{os.environ['PATH']}"}
        cmd = ["bash", "-s"]
        return subprocess.run(cmd, input=script, capture_output=True, text=True, timeout=60, env=env, cwd=cwd).stdout


def _rm(items: dict[Path | str, Path | str], name: str = "job1", job_id: str = "77") -> str:
    return build_rm_script("sweep", [RmItem(str(p), str(r), name, job_id) for p, r in items.items()], M)


def _tree(root: Path, name: str, files: int) -> Path:
    d = root / name / "trace_jobs"
    for i in range(files):
        (d / f"t{i // 10}").mkdir(parents=True, exist_ok=True)
        (d / f"t{i // 10}" / f"f{i}.json").write_text("{}")
    return d


def test_rm_script_deletes_detached_and_verify_sees_it_gone(tmp_path: Path) -> None:
    root = tmp_path / "art"
    victim = _tree(root, "job1", 30)
    keep = _tree(root, "job2", 5)
    out = parse_gather_output(_bash(_rm({victim: root})), M)
    assert out.complete and out.get("rm:0").rc == 0 and out.get("rm:0").stdout.startswith("started pid")
    for _ in range(100):
        if not victim.exists():
            break
        time.sleep(0.05)
    assert not victim.exists() and keep.exists() and len(list(keep.rglob("*.json"))) == 5
    m = new_marker()
    v = parse_gather_output(_bash(build_verify_script([str(victim)], [str(root)], "", m)), m)
    assert v.complete and v.get("left:0") is None and "IUsed" in v.get("dfi:0").stdout
    # a second run finds nothing: idempotent, no error
    again = parse_gather_output(_bash(_rm({victim: root})), M)
    assert again.get("rm:0").stdout == "gone"


def test_rm_script_refuses_symlink_swapped_in_after_the_plan(tmp_path: Path) -> None:
    """The plan validated a directory; by rm time it is a symlink to data outside the root."""
    root, outside = tmp_path / "art", tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("x")
    (root / "job1").mkdir(parents=True)
    planned = root / "job1" / "trace_jobs"
    os.symlink(outside, planned)
    out = parse_gather_output(_bash(_rm({planned: root})), M)
    assert out.get("rm:0").rc == 2 and "refused" in out.get("rm:0").stdout
    time.sleep(0.3)
    assert (outside / "keep.txt").read_text() == "x" and planned.is_symlink()


def test_rm_script_refuses_a_root_and_a_path_outside_it(tmp_path: Path) -> None:
    root = tmp_path / "art"
    (root / "j").mkdir(parents=True)
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    out = parse_gather_output(_bash(_rm({root: root, elsewhere: root})), M)
    assert all(out.get(f"rm:{k}").rc == 2 for k in (0, 1))
    assert root.exists() and elsewhere.exists()


def test_rm_script_quotes_hostile_paths(tmp_path: Path) -> None:
    root = tmp_path / "art"
    evil = root / "j" / "x; touch PWNED $(touch PWNED2) `touch PWNED3`"
    evil.mkdir(parents=True)
    _bash(_rm({evil: root}), cwd=tmp_path)
    for _ in range(100):
        if not evil.exists():
            break
        time.sleep(0.05)
    assert not evil.exists()
    assert not list(tmp_path.glob("PWNED*")) and not list(root.rglob("PWNED*"))


def test_rm_script_cannot_be_raced_out_of_the_root(tmp_path: Path) -> None:
    """500 rm runs while a loop swaps a parent component of the planned trees between the real
    dir and a symlink to canary trees OUTSIDE the root: no canary is ever deleted, and the trees
    whose parent was the real dir at rm time are removed."""
    tree = make_race_tree(tmp_path, RACE_TRIES)
    real_root = os.path.realpath(tree.root)
    outcomes: dict[int, str] = {}
    started: set[int] = set()
    with swapper(tree):
        for k in range(RACE_TRIES):
            item = RmItem(str(tree.target(k)), real_root, f"job{k}", "77")
            out = parse_gather_output(_bash(build_rm_script("sweep", [item], M)), M)
            rec = out.get("rm:0")
            outcomes[k] = rec.stdout if rec else "no record"
            if rec and rec.stdout.startswith("started"):
                started.add(k)
    wait_rms_done(tree, started)
    assert tree.canaries_lost() == [], f"canaries outside the root deleted: {tree.canaries_lost()[:10]}"
    assert all(o.startswith(("started", "refused", "gone")) for o in outcomes.values()), set(outcomes.values())
    refused = sum(1 for o in outcomes.values() if o.startswith("refused"))
    assert started and refused, (len(started), refused)  # the race was really run both ways
    assert not set(tree.targets_left()) & started  # what was started inside the root did go


def _dfi(used: int) -> str:
    return (
        "Filesystem      Inodes  IUsed   IFree IUse% Mounted on\n"
        f"/dev/sdb1     6553600 {used} {6553600 - used}    4% /gpfs/work\n"
    )


def test_reclaim_is_never_a_negative_amount_freed() -> None:
    """Other writers on a shared filesystem make df -i noisy: a count that went UP after the rm
    reads as no measurable reclaim with the drift, never "-136 inodes freed"."""
    key = "df -i /work/art"
    [noisy] = reclaim_lines({key: _dfi(250000)}, {key: _dfi(250136)})
    assert "-136 inodes freed" not in noisy and "inodes freed" not in noisy
    assert "no measurable reclaim" in noisy and "+136" in noisy and "other writers" in noisy
    [flat] = reclaim_lines({key: _dfi(250000)}, {key: _dfi(250000)})
    assert "no measurable reclaim" in flat
    [real] = reclaim_lines({key: _dfi(250000)}, {key: _dfi(249808)})
    assert "(192 inodes freed on /gpfs/work)" in real
    [unknown] = reclaim_lines({key: _dfi(250000)}, {key: "df: /work/art: Stale file handle\n"})
    assert "reclaim UNKNOWN" in unknown
