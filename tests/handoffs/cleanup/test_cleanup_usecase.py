"""sweep_cleanup's use-cases (sweep_core.handoffs.cleanup.usecase / .execute) with fake I/O: every
guard refuses with its reason before anything is probed or deleted, the hub is asked only for
targets the probe cleared, the backlog, the rm and verify bookkeeping, the outcome table."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

import pytest
from handoff_fakes import ROOT, FakeHub, FakeSsh, cluster, ok, ops, squeue

from sweep_core.handoffs.cleanup.backlog import BACKLOG, BacklogUnreadable, load_backlog
from sweep_core.handoffs.cleanup.execute import (
    cleanup_record,
    confirmed_acts,
    rm_acts,
    rm_result,
    rm_row,
    start_deletes,
    verify_removed,
)
from sweep_core.handoffs.cleanup.plan import CleanupDecision, CleanupTarget, cleanup_config
from sweep_core.handoffs.cleanup.usecase import CleanupPlan, hub_acts, plan_cleanup
from sweep_core.handoffs.cleanup.view import CleanupView
from sweep_core.handoffs.kernel.act import Act, ActKind
from sweep_core.handoffs.kernel.attempt import from_row
from sweep_core.handoffs.kernel.result import Outcome, Result
from sweep_core.handoffs.kernel.result import failed as R_FAILED
from sweep_core.handoffs.kernel.result import ok as R_OK
from sweep_core.ledger.acts import acts_of, read_ledger, record_acts
from sweep_core.ledger.view import fold_view
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.failover import OUTCOME_UNKNOWN
from sweep_core.slurm.gather import GatherOutput
from sweep_core.state.documents import read_document, write_document

CCFG = cleanup_config({"hub_org": "org", "verify_timeout_s": 60, "verify_poll_s": 5})
NAME = "sft__qwen_tulu3"
TREES = [f"{ROOT}/{NAME}/checkpoints", f"{ROOT}/{NAME}/exports"]


def _job(job_id: str = "4242", name: str = NAME, flavor: str = "cleanup:sft-job-cleanup", c: str = "local") -> dict:
    return {"cluster": c, "job_id": job_id, "name": name, "flavor": flavor}


def _probe(live: tuple = (), state: str = "COMPLETED", present: bool = True):
    """The probe's answer for one sft target (job 4242): squeue, sacct, the root, both trees."""

    def answer(marker: str, script: str) -> dict[str, CommandResult]:
        recs = {
            "squeue": squeue(marker, live),
            "sacct": ok(f"4242{marker}{state}{marker}{NAME}\n"),
            "rootreal:0": ok(ROOT + "\n"),
        }
        for k, tree in enumerate(TREES):
            if present:
                recs[f"real:{k}"], recs[f"kind:{k}"] = ok(tree + "\n"), ok("directory\n")
            else:
                recs[f"missing:{k}"] = ok()
        return recs

    return answer


def _plan(jobs, ssh: FakeSsh, hub: FakeHub, tmp_path: Path, *configs, dry_run=True, reclaim=()) -> CleanupPlan:
    return plan_cleanup(
        jobs,
        list(reclaim),
        dry_run=dry_run,
        ccfg=CCFG,
        run_log_dir=tmp_path,
        load_cluster=ops(*(configs or (cluster(),))),
        run_script=ssh,
        hub_check=hub,
    )


def _why(plan: CleanupPlan) -> dict[str, tuple[str, str]]:
    return {d.target.job_id: (d.action, "; ".join(d.reasons)) for d in plan.decisions}


def test_each_guard_refuses_with_its_reason_and_nothing_is_probed(tmp_path) -> None:
    ssh, hub = FakeSsh(), FakeHub()
    jobs = [
        {"cluster": "local", "job_id": "1", "name": NAME},  # no flavor
        _job("2", flavor="cleanup:no-such-skill"),
        _job("abc"),
        _job("3", name="../../etc"),
        _job("4", c="nowhere"),
        _job("5", c="coreweave"),
        _job("6", c="bare"),
    ]
    configs = (
        cluster(),
        cluster("coreweave", scheduler="iris"),
        cluster("bare", artifact_roots=()),
    )
    plan = _plan(jobs, ssh, hub, tmp_path, *configs)
    why = _why(plan)
    assert why["?"][0] == "blocked" and "lacks flavor" in why["?"][1]
    assert why["2"] == ("blocked", "unknown cleanup flavor 'no-such-skill'")
    assert why["abc"] == ("blocked", "job id 'abc' is not a Slurm job id")
    assert why["3"][0] == "blocked" and "is not a plain name" in why["3"][1]
    assert why["4"][0] == "blocked" and why["4"][1].startswith("ops.md: /ops/nowhere/ops.md")
    assert why["5"] == ("blocked", "coreweave is iris/active: no POSIX tree to reap")
    assert why["6"] == ("blocked", "bare: ops.md has no artifact_roots")
    assert ssh.calls == [] and hub.asked == []  # no cluster contacted, no hub asked
    assert plan.before == {}


def test_no_hub_org_blocks_every_target_whose_repo_names_the_org(tmp_path) -> None:
    """The shipped sweep.yaml names no org: the hub is never asked for ``/<name>``, nothing is deleted."""
    ssh, hub = FakeSsh({"cleanup probe": _probe()}), FakeHub({NAME: True})
    plan = plan_cleanup(
        [_job()], [], dry_run=True, ccfg=cleanup_config({}), run_log_dir=tmp_path,
        load_cluster=ops(cluster()), run_script=ssh, hub_check=hub,
    )  # fmt: skip
    assert _why(plan)["4242"] == (
        "blocked",
        "cleanup.hub_org is empty in sweep.yaml: hub repo {org}/{name} names no org, nothing deleted",
    )
    assert ssh.calls == [] and hub.asked == []


def test_an_inactive_slurm_cluster_is_never_contacted(tmp_path) -> None:
    ssh, hub = FakeSsh({"cleanup probe": _probe()}), FakeHub()
    plan = _plan([_job()], ssh, hub, tmp_path, cluster(status="skipped"))
    assert _why(plan)["4242"] == ("blocked", "local is slurm/skipped: no POSIX tree to reap")
    assert ssh.calls == []


def test_an_unreachable_cluster_blocks_every_target_before_the_hub(tmp_path) -> None:
    ssh, hub = FakeSsh(), FakeHub({f"org/{NAME}": True})
    plan = _plan([_job()], ssh, hub, tmp_path)
    action, why = _why(plan)["4242"]
    assert action == "blocked" and why.startswith("local: unreachable: ") and why.endswith(": no destructive step")
    assert ssh.whats() == [("local", "cleanup probe")] and hub.asked == []


def test_a_live_job_is_refused_without_asking_the_hub(tmp_path) -> None:
    ssh, hub = FakeSsh({"cleanup probe": _probe(live=[("4242", "RUNNING", NAME)])}), FakeHub({f"org/{NAME}": True})
    plan = _plan([_job()], ssh, hub, tmp_path)
    action, why = _why(plan)["4242"]
    assert action == "blocked" and "RUNNING" in why and hub.asked == []


def test_trees_already_gone_are_nothing_to_do_without_the_hub(tmp_path) -> None:
    ssh, hub = FakeSsh({"cleanup probe": _probe(present=False)}), FakeHub()
    plan = _plan([_job()], ssh, hub, tmp_path)
    assert _why(plan)["4242"] == ("nothing-to-do", "artifact trees already removed") and hub.asked == []


def test_cleared_target_asks_the_hub_once_per_artifact_then_deletes(tmp_path) -> None:
    ssh, hub = FakeSsh({"cleanup probe": _probe()}), FakeHub({f"org/{NAME}": True})
    plan = _plan([_job(), _job("4243", name="sft__other")], ssh, hub, tmp_path)
    assert len(ssh.calls) == 1  # one probe session for both targets of the cluster
    assert hub.asked == [(f"org/{NAME}", "model", ("config.json", "*.safetensors"))]
    d = next(d for d in plan.decisions if d.target.job_id == "4242")
    assert d.action == "delete" and d.paths == TREES and set(d.roots.values()) == {ROOT}
    assert [(h["repo_id"], h["ok"]) for h in d.hub] == [(f"org/{NAME}", True)]
    assert set(plan.before["local"]) == {f"df -i {ROOT}"}
    assert CleanupPlan.from_dict(plan.to_dict()).to_dict() == plan.to_dict()  # the XCom round trip


def test_hub_missing_blocks_with_the_evidence(tmp_path) -> None:
    ssh, hub = FakeSsh({"cleanup probe": _probe()}), FakeHub()
    action, why = _why(_plan([_job()], ssh, hub, tmp_path))["4242"]
    assert action == "blocked" and why.startswith(f"hub check failed for model org/{NAME}")


def test_backlog_joins_only_when_not_a_dry_run_and_a_reclaim_replans_it(tmp_path) -> None:
    ssh, hub = FakeSsh({"cleanup probe": _probe()}), FakeHub({f"org/{NAME}": True})
    _plan([_job()], ssh, hub, tmp_path, dry_run=True)
    assert read_document(tmp_path, BACKLOG) is None
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    _plan([_job()], ssh, hub, tmp_path, dry_run=False)
    (held,) = load_backlog(tmp_path)
    assert {k: v for k, v in held.items() if k != "since"} == _job()
    assert before <= dt.datetime.fromisoformat(held["since"]) <= dt.datetime.now(dt.UTC)  # its age starts here
    again = _plan([], ssh, hub, tmp_path, reclaim=["local"])
    assert [d.target.job_id for d in again.decisions] == ["4242"]
    assert _plan([], ssh, hub, tmp_path, reclaim=["other"]).decisions == []
    write_document(tmp_path, BACKLOG, "{not json")
    with pytest.raises(BacklogUnreadable, match="unreadable"):  # never read as empty
        load_backlog(tmp_path)
    plan = _plan([_job()], ssh, hub, tmp_path, dry_run=False, reclaim=["local"])
    assert [d.target.job_id for d in plan.decisions] == ["4242"]  # the requested job is still planned
    assert "unreadable" in plan.notes[0] and "the reclaim of local plans no backlog" in plan.notes[0]
    assert read_document(tmp_path, BACKLOG) == "{not json"  # never overwritten


def _delete(paths=TREES) -> CleanupDecision:
    return CleanupDecision(
        CleanupTarget("local", "4242", NAME, "sft-job-cleanup"), "delete", [], list(paths), dict.fromkeys(paths, ROOT)
    )


def test_rm_results_per_path_and_not_run_when_unreachable() -> None:
    answers = {"cleanup rm": lambda m, s: {"rm:0": ok("started pid 77"), "rm:1": CommandResult(2, "refused: live", "")}}
    started = start_deletes([_delete()], ops(cluster()), FakeSsh(answers))
    assert {p: rm_result(row) for p, row in started["local"].items()} == {
        TREES[0]: Result(Outcome.OK, "", "started pid 77"),
        TREES[1]: Result(Outcome.FAILED, "refused: live", "refused: live"),
    }
    down = start_deletes([_delete()], ops(cluster()), FakeSsh())
    assert all(rm_result(r).outcome is Outcome.FAILED for r in down["local"].values())
    assert all(rm_result(r).reason.startswith("not run: unreachable") for r in down["local"].values())


def _rm(path: str, result: Result) -> dict[str, str]:
    return rm_row("local", path, result)


def test_an_approved_cleanups_rms_are_acts_on_the_jobs_ledger_row(tmp_path) -> None:
    """Each rm the delete step started is recorded on its job's ledger row as an rm act with its
    outcome; the job's history (JobView, the job page's marks) says what each came to, and the
    rm whose session was cut after it was sent is unknown and not counted as removed."""
    cut = f"{OUTCOME_UNKNOWN}: cleanup rm session cut after send"

    def cut_after_first(cfg, script, marker, what):  # noqa: ANN001, ANN202 (a RunScript)
        # as cluster_ssh.run_checked answers when the session drops after the first rm's record
        return GatherOutput({"rm:0": ok("started pid 77")}, complete=False, marker=marker), cut

    todo = [_delete()]
    started = start_deletes(todo, ops(cluster()), cut_after_first, "manual__1", "2026-12-06T10:00:00")
    record_acts(tmp_path, rm_acts(todo, started))
    rows = acts_of(read_ledger(tmp_path), "local", "4242", "rm")
    assert [(r["target"], r["outcome"]) for r in rows] == [(TREES[0], "ok"), (TREES[1], "unknown")]
    assert all(r["act"] == "rm" and r["act_cluster"] == "local" and r["run"] == "manual__1" for r in rows)
    view = fold_view(read_ledger(tmp_path), [("local", "4242", NAME)]).jobs["local|4242"]
    lines = [a.line for a in view.acts]
    assert lines[0] == f"rm {TREES[0]}: ok (started pid 77)"
    assert lines[1] == f"rm {TREES[1]}: unknown ({cut}: not sent again; verify looks whether the tree is gone)"
    text, finished = cleanup_record(todo, started, {}, dry=False)
    assert "rm outcome unknown, not counted as removed" in text and finished == set()
    # verify finds the first tree gone and the second still there: the unknown rm stays unknown
    looked = FakeSsh({"cleanup verify": lambda m, s: {"left:1": ok(TREES[1])}})
    at_deadline = iter([0.0, 99.0]).__next__  # one look, then past verify_timeout_s
    report = verify_removed(started, {}, CCFG, ops(cluster()), looked, clock=at_deadline, sleep=lambda _: None)
    assert report["local"]["left"] == [TREES[1]] and confirmed_acts(todo, started, report) == []
    # a later look sees it gone: settled ok on the job's row, and now counted as removed
    report = verify_removed(started, {}, CCFG, ops(cluster()), FakeSsh({"cleanup verify": lambda m, s: {}}))
    record_acts(tmp_path, confirmed_acts(todo, started, report, "manual__1", "2026-12-06T10:05:00"))
    view = fold_view(read_ledger(tmp_path), [("local", "4242", NAME)]).jobs["local|4242"]
    assert [a.line for a in view.acts][2:] == [f"rm {TREES[1]}: ok (verify saw it gone)"]
    assert cleanup_record(todo, started, report, dry=False)[1] == {("local", "4242")}


def test_verify_polls_until_gone_and_stops_at_its_deadline() -> None:
    now = [0.0]
    sleeps: list[float] = []

    def sleep(s: float) -> None:
        sleeps.append(s)
        now[0] += s

    polls = iter([{"left:0": ok(TREES[0])}, {}])
    ssh = FakeSsh({"cleanup verify": lambda m, s: next(polls)})
    started = {"local": {TREES[0]: _rm(TREES[0], R_OK("started pid 1")), TREES[1]: _rm(TREES[1], R_OK("gone"))}}
    report = verify_removed(started, {}, CCFG, ops(cluster()), ssh, clock=lambda: now[0], sleep=sleep)
    assert report["local"]["left"] == [] and report["local"]["removed"] == TREES and sleeps == [5]
    now[0] = 0.0
    stuck = FakeSsh({"cleanup verify": lambda m, s: {"left:0": ok(TREES[0])}})
    report = verify_removed(started, {}, CCFG, ops(cluster()), stuck, clock=lambda: now[0], sleep=sleep)
    assert (
        report["local"]["left"] == [TREES[0]] and len(stuck.calls) == 14
    )  # polls at 0, 5 .. 65 s: past the 60 s deadline


def test_outcome_table_and_which_jobs_leave_the_backlog() -> None:
    gone, live = (
        _delete(),
        CleanupDecision(CleanupTarget("local", "9", "rl__x", "sft-job-cleanup"), "blocked", ["job is RUNNING"]),
    )
    text, finished = cleanup_record(
        [gone, live], {"local": {}}, {"local": {"left": [], "reclaim": ["df -i: freed"]}}, False
    )
    assert "deleted" in text and "job is RUNNING" in text and text.endswith("local: df -i: freed")
    assert finished == {("local", "4242")}
    text, _ = cleanup_record([gone], {}, {}, True)
    assert "would delete (dry run)" in text
    text, finished = cleanup_record([gone], {"local": {TREES[0]: _rm(TREES[0], R_FAILED("refused: x"))}}, {}, False)
    assert "refused on the cluster" in text and finished == set()


def test_the_plans_runner_refuses_a_script_that_acts() -> None:
    """The plan task's runner is read-only (handoff_io.ssh_reader): an rm script given to it is
    refused before any login node is tried, so a plan can only probe."""
    from types import SimpleNamespace

    from sweep_core.handoffs.cleanup.remote import RmItem, build_rm_script
    from sweep_core.slurm.gather import new_marker
    from sweep_operators.handoff_io import ssh_reader

    marker = new_marker()
    script = build_rm_script("sweepx", [RmItem(TREES[0], ROOT, NAME, "4242")], marker)
    limits = SimpleNamespace(connect_timeout_s=1, command_timeout_s=1)
    out, problem = ssh_reader(limits, logging.getLogger("test"))(cluster(), script, marker, "cleanup rm")
    assert out is None and problem == "cleanup rm is an act: refused by a read-only runner, not sent"


# ---- the hub checks stored on the jobs (kernel acts: Act(HUB_CHECK), a Result) ---------------
def _hub_rows(tmp_path: Path, plan: CleanupPlan, run: str) -> list[dict[str, str]]:
    """Store this plan's hub acts as the plan task does; the job's stored hub checks after."""
    acts = hub_acts(plan.decisions, lambda c, j: acts_of(read_ledger(tmp_path), c, j), run=run, at=f"t-{run}")
    if acts:
        record_acts(tmp_path, acts)
    return acts_of(read_ledger(tmp_path), "local", "4242", "hub_check")


def test_a_hub_check_is_stored_on_its_job_only_when_its_answer_changes(tmp_path) -> None:
    ssh, hub = FakeSsh({"cleanup probe": _probe()}), FakeHub()  # not on the hub
    plan = _plan([_job()], ssh, hub, tmp_path)
    assert _why(plan)["4242"][0] == "blocked"
    (row,) = _hub_rows(tmp_path, plan, "r1")
    got = from_row(row)
    assert got.act == Act(ActKind.HUB_CHECK, "", f"org/{NAME}") and got.outcome is Outcome.FAILED
    assert got.run == "r1" and "repo not on the hub" in row["reason"] and got.why == "cleanup blocked"
    assert len(_hub_rows(tmp_path, plan, "r1")) == 1  # the same run again (a retried task): no second row
    for run in ("r2", "r3", "r4"):  # every 30 min the same answer: nothing written
        assert len(_hub_rows(tmp_path, _plan([_job()], ssh, hub, tmp_path), run)) == 1
    hub.ok[f"org/{NAME}"] = None  # the hub stops answering: a change, stored, and never positive evidence
    plan = _plan([_job()], ssh, hub, tmp_path)
    assert _why(plan)["4242"][0] == "blocked"
    rows = _hub_rows(tmp_path, plan, "r5")
    assert [(r["run"], r["outcome"]) for r in rows] == [("r1", "failed"), ("r5", "unknown")]
    assert len(_hub_rows(tmp_path, _plan([_job()], ssh, hub, tmp_path), "r6")) == 2


def test_the_hub_check_a_delete_stands_on_is_stored_each_run_it_deletes(tmp_path) -> None:
    ssh, hub = FakeSsh({"cleanup probe": _probe()}), FakeHub({f"org/{NAME}": True})
    plan = _plan([_job()], ssh, hub, tmp_path)
    assert _why(plan)["4242"][0] == "delete"
    assert plan.decisions[0].hub[0]["outcome"] == "ok"
    _hub_rows(tmp_path, plan, "r1")
    rows = _hub_rows(tmp_path, _plan([_job()], ssh, hub, tmp_path), "r2")  # same answer, but an rm stands on it
    assert [(r["run"], r["outcome"], r["why"]) for r in rows] == [
        ("r1", "ok", "cleanup delete"),
        ("r2", "ok", "cleanup delete"),
    ]


def test_a_hub_entry_the_hub_was_not_asked_for_stores_no_act(tmp_path) -> None:
    """A salvaged job's own upload has no commit recorded yet: the hub is not asked, nothing stored."""
    ssh, hub = FakeSsh({"cleanup probe": _probe()}), FakeHub({f"org/{NAME}": True})
    view = CleanupView(own={("local", "4242"): ""})
    plan = plan_cleanup(
        [_job()], [], dry_run=True, ccfg=CCFG, run_log_dir=tmp_path,
        load_cluster=ops(cluster()), run_script=ssh, hub_check=hub, view=view,
    )  # fmt: skip
    assert _why(plan)["4242"][0] == "blocked" and hub.asked == []
    assert hub_acts(plan.decisions, lambda c, j: [], run="r1", at="t") == []
