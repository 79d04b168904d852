"""The configured command steps run inside the ONE gather session (real bash, the real gather script,
the Slurm stand-ins of tests/fixtures/slurm_stub): the eval canary's check and the Daytona snapshot
list, each an argv with every element shell-quoted, read into the snapshot's checks; a cluster the
daytona section does not name runs no snapshot list. Their tools are stand-ins printing the
fixtures of tests/fixtures/steps (see each fixture's header)."""

from __future__ import annotations

import time
from pathlib import Path

from helpers import steps_fixture as body
from stub_gather import run_stubbed

from sweep_core.config.steps_schema import DaytonaSection, EvalCanary
from sweep_core.slurm.gather import GatherRequest
from sweep_core.slurm.snapshot import snapshot_from_output
from sweep_core.slurm.steps import attach_steps, step_lines

RUN = "eval-canary-harbor"


def _tool(tmp: Path, name: str, fixture: str, expect: list[str]) -> str:
    """A stand-in that prints the fixture's body only when called with exactly ``expect``."""
    out = tmp / f"{name}.out"
    out.write_text(body(fixture))
    args = tmp / f"{name}.args"
    path = tmp / name
    path.write_text(
        f'#!/bin/bash\nprintf "%s\\n" "$@" > {args}\n'
        f'[ "$#" = {len(expect)} ] || {{ echo "bad argc $#" >&2; exit 9; }}\ncat {out}\n'
    )
    path.chmod(0o755)
    return str(path)


def _gather(tmp: Path, cluster: str, canary: EvalCanary | None, daytona: DaytonaSection | None):
    now = int(time.time())
    req = GatherRequest(user="sweep", window_start=now - 3600, window_end=now - 60, settle_s=0,
                        step_lines=step_lines(cluster, canary, daytona))  # fmt: skip
    output = run_stubbed(tmp, req, timeout=30)
    snap = snapshot_from_output(cluster, output, "login01", "s", "e")
    attach_steps(snap, output, canary, daytona, snap.remote_now or time.time())
    return snap


def test_both_steps_run_in_the_gather_session_every_value_quoted(tmp_path: Path) -> None:
    hostile = RUN + "; touch PWNED"  # a value is one argument, never shell code
    check = _tool(tmp_path, "canary_check", "canary_not_registered.txt", ["--run", hostile])
    lister = _tool(tmp_path, "daytona", "daytona_snapshot_list.txt", ["snapshot", "list", "--format", "json"])
    canary = EvalCanary(run=hostile, argv=[check, "--run", "{run}"])
    daytona = DaytonaSection(cluster="tacc", list_command=[lister, "snapshot", "list", "--format", "json"], cap=7)
    snap = _gather(tmp_path, "tacc", canary, daytona)
    assert (tmp_path / "canary_check.args").read_text().splitlines() == ["--run", hostile]
    assert not (tmp_path / "PWNED").exists() and not Path("PWNED").exists()
    # the fixture answers for RUN, not for the hostile run name: UNKNOWN, never OK
    assert snap.checks["canary"]["status"] == "UNKNOWN"
    assert "answered for run 'eval-canary-harbor'" in snap.checks["canary"]["reason"]
    # judged at the remote clock (now): the fixture's snapshots are all weeks old; 7 listed = the cap
    got = snap.checks["snapshots"]
    assert got["status"] == "AT_CAP" and got["count"] == 7
    assert "broken-build" in [s["name"] for s in got["stale"]]
    assert snap.to_dict()["checks"]["snapshots"]["count"] == 7  # XCom carries it


def test_the_canary_flags_its_run_and_other_clusters_run_no_snapshot_list(tmp_path: Path) -> None:
    check = _tool(tmp_path, "canary_check", "canary_not_registered.txt", ["--run", RUN])
    lister = _tool(tmp_path, "daytona", "daytona_snapshot_list.txt", [])
    daytona = DaytonaSection(cluster="leonardo", list_command=[lister], cap=7)
    snap = _gather(tmp_path, "tacc", EvalCanary(run=RUN, argv=[check, "--run", "{run}"]), daytona)
    assert snap.checks["canary"]["status"] == "MISSING"
    assert snap.checks["canary"]["reason"].startswith(f"traces for {RUN} not registered")
    assert "snapshots" not in snap.checks and not (tmp_path / "daytona.args").exists()


def test_an_unconfigured_step_sends_nothing(tmp_path: Path) -> None:
    assert step_lines("tacc", EvalCanary(run=RUN, argv=[]), DaytonaSection(cluster="tacc", cap=7)) == ""
    snap = _gather(tmp_path, "tacc", EvalCanary(), None)
    assert snap.checks == {}
