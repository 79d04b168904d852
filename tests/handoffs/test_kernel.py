"""The hand-off kernel (sweep_core.handoffs.kernel): a result of every act kind survives the stored
form (the flat ledger act) unchanged; a stored act that cannot be read whole reads as UNKNOWN with
its reason and a hand-off waits on it instead of acting again; an rm result that is neither ok nor
failed is unknown and never counted as removed."""

from __future__ import annotations

from pathlib import Path

import pytest
from cancel_fleet import wedged_decision
from handoff_fakes import FakeSsh, cluster, ok, ops

from sweep_core.handoffs.batch_job.plan import Outcome as Sent
from sweep_core.handoffs.batch_job.plan import Submission
from sweep_core.handoffs.cancel.iris import stop_outcome
from sweep_core.handoffs.cancel.outcome import DID_OUTCOME, Act, ActOutcome, Did, not_done
from sweep_core.handoffs.cancel.plan import outcome as scancel_outcome
from sweep_core.handoffs.cancel.remember import outcome_acts
from sweep_core.handoffs.chain.plan import CellState
from sweep_core.handoffs.cleanup.execute import (
    cleanup_record,
    rm_answer,
    rm_result,
    rm_row,
    start_deletes,
    still_there,
    verify_removed,
)
from sweep_core.handoffs.cleanup.plan import CleanupDecision, CleanupTarget, cleanup_config
from sweep_core.handoffs.consolidate.history import KINDS as CONSOLIDATE
from sweep_core.handoffs.db_register.plan import REGISTER
from sweep_core.handoffs.db_register.plan import story_of as register_record
from sweep_core.handoffs.db_register.usecase import RegisterSettings, run_registrations
from sweep_core.handoffs.hub_evidence import HubEvidence
from sweep_core.handoffs.kernel.act import Act as KernelAct
from sweep_core.handoffs.kernel.act import ActKind
from sweep_core.handoffs.kernel.attempt import Attempt, Phase, from_row, record_of, to_row
from sweep_core.handoffs.kernel.hub import hub_attempt, hub_result, stored_result, worth_recording
from sweep_core.handoffs.kernel.machine import submission_result
from sweep_core.handoffs.kernel.result import Outcome, Result, unknown
from sweep_core.handoffs.relaunch.iris import relaunch_outcome
from sweep_core.handoffs.upload.plan import next_move
from sweep_core.handoffs.upload.plan import story_of as upload_record
from sweep_core.ledger.acts import record_acts
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm import failover
from sweep_core.slurm.parse import SacctRow

ROOT = "/scratch/ckpt"
TREE = f"{ROOT}/sft__a/checkpoints"
WORD = {Outcome.OK: "done", Outcome.FAILED: "failed", Outcome.UNKNOWN: "UNKNOWN"}
TARGETS = {
    ActKind.RM: TREE,
    ActKind.SCANCEL: "4242",
    ActKind.REQUEUE: "4242",
    ActKind.SBATCH: "upload__sft__a",
    ActKind.STOP: "/user/iris-job-7",
    ActKind.HUB_CHECK: "org/sft__a",
    ActKind.COMMAND: "register.py",
}


@pytest.mark.parametrize("kind", list(ActKind))
@pytest.mark.parametrize("outcome", list(Outcome))
def test_a_result_of_every_act_kind_round_trips_through_the_stored_act(kind: ActKind, outcome: Outcome) -> None:
    act = KernelAct(kind, "leonardo", TARGETS[kind], "sft__a")
    a = Attempt(
        kind=f"{kind}_act", attempt=2, run="scheduled__2026-12-06", at="2026-12-06T10:00:00+00:00",
        job="" if outcome is Outcome.UNKNOWN else "5151", why="exit 1: 409" if outcome is Outcome.FAILED else "",
        said=WORD[outcome], extra={"target": act.target, "cluster": act.cluster},
    )  # fmt: skip
    row = to_row(a)
    assert all(isinstance(v, str) for v in row.values())  # the stored shape: flat strings
    back = from_row(row)
    assert back == a and to_row(back) == row
    assert back.outcome is outcome and back.phase is Phase.SETTLED and back.get("target") == TARGETS[kind]
    assert str(act) == f"{kind} leonardo:{TARGETS[kind]}"


@pytest.mark.parametrize(
    "row",
    [  # as today's code writes them: upload (sent, UNKNOWN, state), consolidate claim, db_register
        {"kind": "upload", "attempt": "1", "upload_job": "77", "log": "/l/u-77.out", "hub_repo": "org/a",
         "run": "r1", "at": "2026-12-05T08:00:00+00:00", "flavor": "sft-job-cleanup"},
        {"kind": "upload", "attempt": "2", "outcome": "UNKNOWN", "job_name": "upload__a", "claimed_at": "1.5",
         "why": "unreachable after send"},
        {"kind": "upload_state", "upload_job": "77", "state": "FAILED", "why": "ValueError: x", "at": "t"},
        {"kind": "consolidate", "job": "", "attempt": "1", "run": "r1", "flavor": "f", "target_job": "9"},
        {"kind": "db_register", "attempt": "1", "outcome": "done", "why": "id=7", "command": "reg 'a b'"},
    ],
)  # fmt: skip
def test_acts_stored_by_todays_code_read_and_write_back_unchanged(row: dict[str, str]) -> None:
    assert to_row(from_row(row)) == row


def test_phases_follow_the_claim_its_job_id_and_its_outcome() -> None:
    assert from_row({"kind": "consolidate", "job": "", "attempt": "1"}).phase is Phase.CLAIMED
    assert from_row({"kind": "consolidate", "job": "88", "attempt": "1"}).phase is Phase.SUBMITTED
    assert from_row({"kind": "db_register", "attempt": "1", "outcome": "failed"}).phase is Phase.SETTLED


@pytest.mark.parametrize(
    ("stored", "reason"),
    [
        (["upload", "77"], "stored act is a list, not an object"),
        ("upload 77", "stored act is a str, not an object"),
        ({"kind": "db_register", "attempt": "x", "outcome": "done"}, "attempt 'x' is not a number"),
        ({"kind": "db_register", "attempt": 1, "outcome": "done"}, "attempt is a int, not a string"),
        ({"attempt": "1", "outcome": "done"}, "it names no kind"),
        ({"kind": "db_register", "attempt": "1", "outcome": "maybe"}, "stored outcome 'maybe' is not ok"),
    ],
)
def test_a_garbled_stored_act_reads_as_unknown_with_its_reason(stored: object, reason: str) -> None:
    a = from_row(stored)
    assert a.outcome is Outcome.UNKNOWN and reason in a.result.reason  # type: ignore[union-attr]
    assert a.phase is Phase.SETTLED


def test_nothing_of_a_garbled_act_is_lost_when_written_back() -> None:
    row = {"kind": "db_register", "attempt": "x", "outcome": "done", "why": "kept"}
    assert to_row(from_row(row)) == row


def test_a_garbled_registration_is_waited_on_never_run_again(tmp_path: Path) -> None:
    """A db_register act whose attempt number is unreadable: no command runs, the row says why."""
    t = CleanupTarget("local", "4242", "sft__a", "sft-job-cleanup")
    record_acts(tmp_path, [("local", "4242", "sft__a", {"kind": REGISTER, "attempt": "one", "outcome": "done"})])
    ssh = FakeSsh({"db register": lambda m, s: {"reg:0": ok("registered")}})
    ccfg = cleanup_config({"hub_org": "org"})
    rep = run_registrations(
        [CleanupDecision(t, "blocked", hub=[{"repo_id": "org/sft__a", "repo_type": "model", "ok": True}])],
        rs=RegisterSettings({"sft-job-cleanup": ("reg", "{name}")}, 2, 60, ()), ccfg=ccfg, ledger_dir=tmp_path,
        run_id="r2", now="2026-12-06T10:00:00+00:00", dry_run=False, load_cluster=ops(cluster()),
        run_script=ssh, say=lambda _: None,
    )  # fmt: skip
    assert ssh.calls == [] and rep.acts == []
    assert "outcome UNKNOWN (stored db_register act unreadable: attempt 'one' is not a number)" in rep.rows[0][-1]


def test_records_answer_the_same_questions_for_every_hand_off() -> None:
    reg = register_record([{"kind": REGISTER, "attempt": "1", "outcome": "failed", "why": "exit 1: 409"},
                           {"kind": REGISTER, "attempt": "2", "outcome": "done", "run": "r2"}])  # fmt: skip
    assert reg.failures == 1 and reg.done is not None and reg.done.run == "r2" and reg.unknown is None
    cons = record_of(CONSOLIDATE, [{"kind": "consolidate", "job": "81", "attempt": "1"},
                                   {"kind": "consolidate_failed", "job": "81", "state": "FAILED"},
                                   {"kind": "consolidate", "job": "", "attempt": "2"},
                                   {"kind": "upload", "upload_job": "5"}])  # fmt: skip
    assert cons.failures == 1 and cons.reserved_without_id is not None and cons.latest_job == ""
    assert len(cons.attempts) == 3  # another hand-off's act is not in this record
    up = upload_record([{"kind": "upload", "attempt": "1", "outcome": "UNKNOWN", "job_name": "upload__a"}])
    assert next_move(up, "missing", 2, True).move == "wait"  # never sent again blind
    found = up.plus([{"kind": "upload", "attempt": "1", "upload_job": "91", "job_name": "upload__a"}])
    assert found.unknown is None and found.last is not None and found.last.job == "91"


@pytest.mark.parametrize(
    ("answer", "problem", "outcome"),
    [
        (CommandResult(0, "started pid 4711", ""), "", Outcome.OK),
        (CommandResult(0, "gone", ""), "", Outcome.OK),
        (CommandResult(2, "refused: job 9 is still listed by squeue", ""), "", Outcome.FAILED),
        (None, "unreachable: login1: connection refused", Outcome.FAILED),
        (None, f"{failover.OUTCOME_UNKNOWN}: session cut after send", Outcome.UNKNOWN),
        (CommandResult(0, "started pid", ""), "", Outcome.UNKNOWN),
        (CommandResult(0, "rm: cannot remove", ""), "", Outcome.UNKNOWN),
    ],
)
def test_an_rm_answer_is_a_kernel_result_that_round_trips_through_its_stored_attempt(
    answer: CommandResult | None, problem: str, outcome: Outcome
) -> None:
    r = rm_answer(answer, problem)
    assert r.outcome is outcome and (r.reason != "") is (outcome is not Outcome.OK)
    row = rm_row("local", TREE, r, "scheduled__2026-12-06", "2026-12-06T10:00:00+00:00")
    a = from_row(row)
    assert a.act == KernelAct(ActKind.RM, "local", TREE) and a.outcome is outcome and to_row(a) == row
    assert rm_result(row) == r  # outcome, reason and evidence: nothing lost on the way


@pytest.mark.parametrize(
    "row",
    [
        None,
        "started pid 4711",  # the string an older delete task returned: not an attempt
        {"kind": "rm"},
        {"kind": "rm", "outcome": "ok", "why": ""},  # names no act
        {"kind": "rm", "act": "scancel", "target": "4242", "outcome": "ok"},
        {"kind": "rm", "act": "rm", "target": TREE, "outcome": "maybe"},
    ],
)
def test_a_missing_or_garbled_rm_attempt_reads_unknown_never_removed(row: object) -> None:
    assert rm_result(row).outcome is Outcome.UNKNOWN and rm_result(row).reason


def test_submissions_read_as_results() -> None:
    assert submission_result(Submission(Sent.SUBMITTED, "5151")) == Result(Outcome.OK, "", "5151")
    assert submission_result(Submission(Sent.REFUSED, why="sbatch: invalid partition")).outcome is Outcome.FAILED
    assert submission_result(Submission(Sent.UNKNOWN, why="answer lost")).outcome is Outcome.UNKNOWN


def _delete() -> CleanupDecision:
    t = CleanupTarget("local", "4242", "sft__a", "sft-job-cleanup")
    return CleanupDecision(t, "delete", [], [TREE], {TREE: ROOT})


def test_an_rm_neither_ok_nor_failed_is_never_counted_as_removed() -> None:
    """The rm session answered rc 0 with words the rm script never prints: the tree is looked at
    by verify; while nobody has looked, the target stays in the backlog with the reason."""
    started = start_deletes([_delete()], ops(cluster()), FakeSsh({"cleanup rm": lambda m, s: {"rm:0": ok("?!")}}))
    assert rm_result(started["local"][TREE]).outcome is Outcome.UNKNOWN
    text, finished = cleanup_record([_delete()], started, {}, dry=False)
    assert finished == set() and "rm outcome unknown, not counted as removed" in text
    assert (
        "neither started, gone, refused nor not run"
        in still_there([_delete()], started, {}, dry=False)[("local", "4242")]
    )
    ccfg = cleanup_config({"hub_org": "org", "verify_timeout_s": 60, "verify_poll_s": 5})
    looked = FakeSsh({"cleanup verify": lambda m, s: {}})  # verify: nothing left
    report = verify_removed(started, {}, ccfg, ops(cluster()), looked, clock=lambda: 0.0, sleep=lambda _: None)
    assert report["local"]["removed"] == [TREE] and TREE in looked.calls[0].script
    _, finished = cleanup_record([_delete()], started, report, dry=False)
    assert finished == {("local", "4242")}  # verify saw it gone: now it is removed


def test_a_chain_cells_failed_legs_are_kernel_attempts_and_its_stored_row_round_trips() -> None:
    def leg(kind: str, n: int, job: str) -> dict[str, str]:
        said = {"kind": kind, "attempt": str(n), "job": job, "outcome": "failed"}
        return said | {"act": "sbatch", "target": "111", "act_cluster": "leo"}

    garbage = {"entry": "garbage", "unreadable": "failed leg entry 'garbage' is not <leg>:<id>"}
    rows = [leg("chain_upload", 1, "222"), leg("chain_upload", 2, "223"), leg("chain_eval", 1, "9"), garbage]
    cell_of = {"leg": "upload", "sft_job": "111", "upload_job": "223", "eval_job": "", "note": "n"}
    stored = cell_of | {"failed": rows, "escalated": ""}
    cell = CellState.from_dict(stored)
    assert cell.failures("upload") == ["222", "223"] and cell.failures("eval") == ["9"]
    assert [a.attempt for a in cell.failed if a.kind == "chain_upload"] == [1, 2]
    assert all(
        a.outcome is Outcome.FAILED and a.act == KernelAct(ActKind.SBATCH, "leo", "111") for a in cell.failed[:3]
    )
    assert cell.failed[-1].outcome is Outcome.UNKNOWN and "garbage" in cell.failed[-1].result.reason  # type: ignore[union-attr]
    assert cell.to_dict() == stored  # nothing lost, the garbled entry too
    cell.fail("upload", "223", "leo")  # counted once
    cell.fail("eval", "10", "leo")
    assert cell.failures("eval") == ["9", "10"] and cell.to_dict()["failed"][-2:] == [
        garbage,
        leg("chain_eval", 2, "10"),
    ]


# cancel and relaunch: scancel, requeue, sbatch (the ops.md relaunch command) and iris stop results
# are the kernel's Result, and the act each stored attempt says it is of reads back the same.
def _sacct(state: str) -> SacctRow:
    return SacctRow("11", "11", state, "0:0", "", "", "", "gpu", "2", "rl__x")


def _scancel(state: str) -> ActOutcome:
    return scancel_outcome(wedged_decision("leo", "11", "rl__x"), 0, "", {"11": _sacct(state)})


LOST = f"{failover.OUTCOME_UNKNOWN}: the session ended after the act was sent"
PRODUCED = [  # (what the hand-off's own code returned, the act stored, its outcome)
    (_scancel("CANCELLED by 0"), ActKind.SCANCEL, Outcome.OK),
    (stop_outcome({"rc": 0, "text": "", "state": "KILLED"}, ""), ActKind.STOP, Outcome.OK),
    (relaunch_outcome("11", 1, "sbatch: error: QOS"), ActKind.STOP, Outcome.OK),  # stopped, command failed
    (relaunch_outcome("11", 0, "Submitted job /user/rl__x-2"), ActKind.SBATCH, Outcome.OK),
    (ActOutcome(Did.REQUEUED, "requeued (PENDING, Restarts=1)", Act.RELAUNCH), ActKind.REQUEUE, Outcome.OK),
    (ActOutcome(Did.RELAUNCHED, "cancelled and relaunched as job 12", Act.RELAUNCH, "12"), ActKind.SBATCH, Outcome.OK),
    (ActOutcome(Did.COMMAND_FAILED, "cancelled; the ops.md relaunch command failed", Act.RELAUNCH), ActKind.SBATCH,
     Outcome.FAILED),
    (not_done(LOST), ActKind.SCANCEL, Outcome.UNKNOWN),
    (not_done(LOST, Act.RELAUNCH), ActKind.REQUEUE, Outcome.UNKNOWN),
]  # fmt: skip


@pytest.mark.parametrize(("res", "kind", "outcome"), PRODUCED, ids=[f"{r.did}-{k}" for r, k, _ in PRODUCED])
def test_a_cancel_or_relaunch_result_is_the_kernels_and_its_stored_act_reads_back(
    res: ActOutcome, kind: ActKind, outcome: Outcome
) -> None:
    d = wedged_decision("leo", "11", "rl__x")
    d.offer = {"relaunch": res.act == Act.RELAUNCH, "series": "leo|rl__x"}
    assert res.result.outcome is outcome and res.result.evidence == res.text
    assert (res.result.reason == "") is (outcome is Outcome.OK)  # not ok: the reason says what was done
    acts, _ = outcome_acts([d], {"11": res}, "scheduled__1", "2026-12-06T10:00:00+00:00", "ana")
    (row,) = [a for c, j, _, a in acts if (c, j) == ("leo", "11")]
    assert all(isinstance(v, str) for v in row.values())
    back = from_row(row)
    assert to_row(back) == row and back.problem == ""
    assert back.result == res.result  # the outcome, reason and evidence read back exactly
    assert back.act == KernelAct(kind, "leo", "11") == res.kernel_act("leo", "11")
    assert (row["act"], row["target"], row["act_cluster"]) == (str(kind), "11", "leo")


def test_a_stored_act_naming_no_known_act_is_unknown_with_its_reason_and_kept_whole() -> None:
    row = {"kind": "cancel", "did": "cancelled", "result": "cancelled", "act": "nuke", "target": "11"}
    back = from_row(row)
    assert back.outcome is Outcome.UNKNOWN and "act 'nuke' is not one of" in back.result.reason
    assert to_row(back) == row and back.act is None


def test_every_did_is_one_kernel_outcome() -> None:
    assert set(DID_OUTCOME) == set(Did)
    assert _scancel("RUNNING").result.outcome is Outcome.UNKNOWN  # sent, sacct not yet CANCELLED
    assert scancel_outcome(wedged_decision("leo", "11", "rl__x"), 2, "moved", {}).result.outcome is Outcome.FAILED


# ---- a hub check as an act (kernel.hub) ---------------------------------------------------------
@pytest.mark.parametrize(
    ("ev", "outcome"),
    [
        (HubEvidence(True, "all 2 present", ("config.json", "*.bin"), (), 5, "main", "ab12"), Outcome.OK),
        (
            HubEvidence(False, "missing on the hub: *.bin", ("config.json",), ("*.bin",), 3, "main", "ab12"),
            Outcome.FAILED,
        ),
        (HubEvidence(False, "repo not on the hub", missing=("config.json",), revision="main"), Outcome.FAILED),
        (HubEvidence(None, "hub unreachable: HTTP 502", revision="main"), Outcome.UNKNOWN),
        (HubEvidence(None, "no expected files configured: cannot confirm the artifact", files=4), Outcome.UNKNOWN),
    ],
)
def test_every_hub_answer_is_one_kernel_result_with_its_reason_and_evidence(ev: HubEvidence, outcome: Outcome) -> None:
    res = hub_result(ev)
    assert res.outcome is outcome and res.ok is (ev.ok is True) and res.reason == ev.reason
    assert ("commit ab12" in res.evidence) is bool(ev.sha)
    assert all(f"missing {m}" in res.evidence for m in ev.missing)
    back = from_row(to_row(hub_attempt("org/sft__a", res, run="r1", at="t")))
    assert back.act == KernelAct(ActKind.HUB_CHECK, "", "org/sft__a") and stored_result(back) == res


def test_a_hub_check_is_worth_storing_once_a_run_when_it_changed_or_an_act_stands_on_it() -> None:
    ok_ab = hub_result(HubEvidence(True, "present", ("x",), (), 1, "main", "ab12"))
    ok_cd = hub_result(HubEvidence(True, "present", ("x",), (), 1, "main", "cd34"))  # a new commit
    past = [to_row(hub_attempt("org/a", ok_ab, run="r1", at="t1"))]
    assert worth_recording([], hub_attempt("org/a", ok_ab, run="r1", at="t"), False)
    assert not worth_recording(past, hub_attempt("org/a", ok_ab, run="r2", at="t"), False)  # the same answer
    assert worth_recording(past, hub_attempt("org/a", ok_ab, run="r2", at="t"), True)  # an rm stands on it
    assert not worth_recording(past, hub_attempt("org/a", ok_ab, run="r1", at="t"), True)  # once a run
    assert worth_recording(past, hub_attempt("org/a", ok_cd, run="r2", at="t"), False)
    assert worth_recording(past, hub_attempt("org/b", ok_ab, run="r2", at="t"), False)  # another repo
    flaky = [to_row(hub_attempt("org/a", unknown("hub unreachable: HTTP 502"), run="r3", at="t"))]
    again = hub_attempt("org/a", unknown("hub unreachable: ConnectError"), run="r4", at="t")
    assert not worth_recording(past + flaky, again, False)  # an unknown answer's wording is no change
