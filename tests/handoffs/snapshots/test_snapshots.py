"""The Daytona snapshot cleanup (sweep_snapshots' core, sweep_core.handoffs.snapshots): the sweep
hands off the STALE names it offered; only a name a human approved AND a fresh list right before
still counts STALE at the cap is deleted, one delete command each, the name one quoted argument
(the delete script runs under real bash with a stand-in CLI here); an unsent or lost delete is said,
never re-sent blind; the cap is never raised (no command here touches it)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from handoff_fakes import FakeSsh, cluster, lost_after_send, ok
from helpers import steps_fixture

from sweep_core.config.steps_schema import DaytonaSection
from sweep_core.handoffs.dispatch.triggers import Handoff, plan_handoffs
from sweep_core.handoffs.snapshots.plan import delete_argv, still_stale
from sweep_core.handoffs.snapshots.remote import build_delete_script, read_delete
from sweep_core.handoffs.snapshots.usecase import delete_approved
from sweep_core.ledger.runs import give_once
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag
from sweep_core.records.remote_result import CommandResult
from sweep_core.records.vocab import Action, Severity
from sweep_core.slurm.gather import new_marker, parse_gather_output

LISTED_AT = 1782864000.0  # 2026-07-01T00:00:00Z: the fixture's listing time
DAYTONA = DaytonaSection(cluster="tacc", list_command=["daytona", "snapshot", "list", "--format", "json"],
                         delete_command=["daytona", "snapshot", "delete", "{snapshot}"], cap=7)  # fmt: skip
STALE = ["harbor-tb2-py311:2026.04.11", "harbor-tb2-py311:2026.05.02", "broken-build"]


def _listing(marker: str, script: str) -> dict[str, CommandResult]:
    assert "run snapshots daytona snapshot list --format json" in script
    return {"snapshots": ok(steps_fixture("daytona_snapshot_list.txt"))}


def test_only_approved_names_still_stale_at_the_cap_are_deleted() -> None:
    fresh = {"status": "AT_CAP", "reason": "7 snapshots", "stale": [{"name": n} for n in STALE]}
    go, left = still_stale(["broken-build", "swe-smith-env:v7", "x;touch PWNED"], fresh)
    assert go == ["broken-build"]
    assert left["swe-smith-env:v7"].startswith("no longer STALE in the fresh list")
    assert left["x;touch PWNED"].startswith("not a plain snapshot name")
    go, left = still_stale(["broken-build"], {"status": "OK", "reason": "6 of 7 snapshots"})
    assert go == [] and left["broken-build"] == "not at the cap now (6 of 7 snapshots): nothing deleted"


def test_the_delete_argv_takes_one_checked_name() -> None:
    assert delete_argv(DAYTONA, "broken-build") == ("daytona", "snapshot", "delete", "broken-build")
    with pytest.raises(ValueError, match="not plain"):
        delete_argv(DAYTONA, "-rf")
    with pytest.raises(ValueError, match="delete_command is not set"):
        delete_argv(DAYTONA.model_copy(update={"delete_command": ()}), "broken-build")


def test_the_delete_script_passes_each_name_as_one_argument_under_real_bash(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    cli = tmp_path / "daytona"
    cli.write_text(f'#!/bin/bash\nprintf "%s|" "$@" >> {calls}; echo >> {calls}\n'
                   '[ "$3" = broken-build ] && { echo "snapshot in use" >&2; exit 1; }\necho deleted\n')  # fmt: skip
    cli.chmod(0o755)
    daytona = DAYTONA.model_copy(update={"delete_command": (str(cli), "snapshot", "delete", "{snapshot}")})
    names = ["harbor-tb2-py311:2026.04.11", "broken-build"]
    marker = new_marker()
    script = build_delete_script([delete_argv(daytona, n) for n in names], marker)
    res = subprocess.run(["bash", "-s"], input=script, capture_output=True, text=True, timeout=30,
                         env={**os.environ, "TMPDIR": str(tmp_path)})  # fmt: skip
    got = read_delete(parse_gather_output(res.stdout, marker), names, "")
    assert calls.read_text().splitlines() == [
        "snapshot|delete|harbor-tb2-py311:2026.04.11|",
        "snapshot|delete|broken-build|",
    ]
    assert got == {
        "harbor-tb2-py311:2026.04.11": ("deleted", ""),
        "broken-build": ("failed", "exit 1: snapshot in use"),
    }


def test_a_fresh_list_is_read_right_before_and_a_dry_run_deletes_nothing() -> None:
    ssh = FakeSsh({"snapshot list": _listing})
    got, fresh = delete_approved(DAYTONA, cluster("tacc"), ["broken-build", "swe-smith-env:v7"], ssh, LISTED_AT, True)
    assert [c.what for c in ssh.calls] == ["snapshot list"]
    assert fresh["status"] == "AT_CAP"
    assert got["broken-build"] == ("would delete", "daytona snapshot delete broken-build")
    assert got["swe-smith-env:v7"][0] == "left"


def test_the_deletes_go_in_one_act_session_and_a_lost_one_is_unknown() -> None:
    inner = FakeSsh({"snapshot list": _listing})
    got, _ = delete_approved(
        DAYTONA, cluster("tacc"), STALE[:2], lost_after_send(inner, "snapshot delete"), LISTED_AT, False
    )
    assert [c.what for c in inner.calls] == ["snapshot list", "snapshot delete"]
    script = inner.calls[1].script
    assert (
        script.startswith("# sweep act:") and "run del:0 daytona snapshot delete harbor-tb2-py311:2026.04.11" in script
    )
    assert {o for o, _ in got.values()} == {"UNKNOWN"}
    unreachable = FakeSsh({"snapshot list": _listing})  # the delete session: no login node took it
    got, _ = delete_approved(DAYTONA, cluster("tacc"), STALE[:1], unreachable, LISTED_AT, False)
    assert got[STALE[0]][0] == "not sent"


def test_the_sweep_hands_off_the_offered_names_of_a_trusted_cluster_only() -> None:
    checks = {
        "snapshots": {"status": "AT_CAP", "stale": [{"name": n, "state": "active", "idle_days": 30} for n in STALE]}
    }
    snap = ClusterSnapshot("tacc", "slurm", ClusterStatus.OK, checks=checks)
    flag = Flag(rule="snapshot_cap", severity=Severity.CRITICAL, cluster="tacc", message="at cap",
                action=Action.SNAPSHOT_CLEANUP)  # fmt: skip
    confs = plan_handoffs([snap], [flag], dry_run=False, run_log="r.md", trackers=False, hf_chain=False)
    conf = confs[Handoff.SNAPSHOTS.value]
    assert {k: conf[k] for k in ("dry_run", "run_log", "cluster", "offered")} == {
        "dry_run": False, "run_log": "r.md", "cluster": "tacc", "offered": STALE}  # fmt: skip
    snap.status = ClusterStatus.UNKNOWN
    confs = plan_handoffs([snap], [flag], dry_run=False, run_log="r.md", trackers=False, hf_chain=False)
    assert confs[Handoff.SNAPSHOTS.value] is None


def test_the_same_stale_set_is_offered_once_not_every_sweep_at_the_cap(tmp_path: Path) -> None:
    """A person is asked once per STALE set: while the org stays at the cap with the same STALE
    snapshots, later sweeps (a backfill, a run by hand) do not ask again; a changed set is asked."""

    def confs(names: list[str]) -> dict:
        checks = {"snapshots": {"status": "AT_CAP", "stale": [{"name": n, "idle_days": 30} for n in names]}}
        snap = ClusterSnapshot("tacc", "slurm", ClusterStatus.OK, checks=checks, window_end="2026-07-01T00:00:00+00:00")
        flag = Flag(rule="snapshot_cap", severity=Severity.CRITICAL, cluster="tacc", message="at cap",
                    action=Action.SNAPSHOT_CLEANUP)  # fmt: skip
        return plan_handoffs([snap], [flag], dry_run=False, run_log="r.md", trackers=False, hf_chain=False)

    first, _ = give_once(tmp_path, confs(STALE), run_id="run1", dry_run=False)
    assert first[Handoff.SNAPSHOTS.value]["offered"] == STALE
    again, notes = give_once(tmp_path, confs(list(reversed(STALE))), run_id="run2", dry_run=False)
    assert again[Handoff.SNAPSHOTS.value] is None
    assert notes == [f"snapshots: tacc {confs(STALE)['snapshots']['jobs'][0]['job_id']} 3 STALE snapshots "
                     "already handed off by run1"]  # fmt: skip
    fewer, _ = give_once(tmp_path, confs(STALE[:2]), run_id="run3", dry_run=False)  # one was deleted since
    assert fewer[Handoff.SNAPSHOTS.value]["offered"] == STALE[:2]
    dry, _ = give_once(tmp_path, confs(STALE[1:]), run_id="run4", dry_run=True)  # a dry run records nothing
    assert dry[Handoff.SNAPSHOTS.value] is not None
    assert give_once(tmp_path, confs(STALE[1:]), run_id="run5", dry_run=False)[0][Handoff.SNAPSHOTS.value] is not None
