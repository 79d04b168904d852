"""The iris relaunch's pure part (issue 20): no ops.md command = never relaunched; a job the stop did
not end (refused, or not KILLED) is never relaunched; the command's output names the new id."""

from __future__ import annotations

from sweep_core.config.ops import parse_ops_text
from sweep_core.handoffs.cancel.outcome import Act, ActOutcome, Did
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest
from sweep_core.handoffs.relaunch.iris import relaunch_iris, relaunch_outcome

OPS = (
    "---\nscheduler: iris\nstatus: active\nuser: sweep\ncontroller_url: http://127.0.0.1:1\n"
    "relaunch_commands:\n  - match: '^rl__'\n    argv: [iris, job, run, --name, '{name}', --controller, '{controller}']\n"
    "---\n"
)


def _d(job_id: str, name: str) -> CancelDecision:
    return CancelDecision(
        CancelRequest("cw", job_id, name, "kill-approval", "[wedged] x", rule="wedged"), "cancel", state="RUNNING"
    )


def test_only_a_job_the_stop_killed_is_relaunched_and_only_by_its_command() -> None:
    cfg = parse_ops_text(OPS, "cw/ops.md", "cw")
    ran: list[list[str]] = []

    def stop(_cfg, jobs, _t):
        return {"/sweep/rl__a": {"rc": 0, "state": "KILLED"}, "/sweep/rl__b": {"rc": 2, "text": "not listed"}}, ""

    def run_local(_cfg, argv, _t):
        ran.append(list(argv))
        return 0, "submitted\n/sweep/rl__a\n"

    jobs = [_d("/sweep/rl__a", "rl__a"), _d("/sweep/rl__b", "rl__b"), _d("/sweep/sft__c", "sft__c")]
    out = relaunch_iris(cfg, jobs, confirm_timeout_s=5, command_timeout_s=5, dry_run=False, stop_iris=stop,
                        run_local=run_local, say=print)  # fmt: skip
    assert out["/sweep/rl__a"].text.endswith("as job /sweep/rl__a (the same id) after iris job stop (KILLED)")
    assert out["/sweep/rl__a"].did == Did.RELAUNCHED and out["/sweep/rl__a"].new_job_id == "/sweep/rl__a"
    assert out["/sweep/rl__b"] == ActOutcome(Did.NOT_RELAUNCHED, "not relaunched: refused before stop: not listed",
                                             Act.RELAUNCH)  # fmt: skip
    assert out["/sweep/sft__c"].text.startswith("not relaunched: iris has no requeue")
    assert ran == [["iris", "job", "run", "--name", "rl__a", "--controller", "http://127.0.0.1:1"]]
    said: list[str] = []
    dry = relaunch_iris(cfg, jobs[:1], confirm_timeout_s=5, command_timeout_s=5, dry_run=True, stop_iris=stop,
                        run_local=run_local, say=said.append)  # fmt: skip
    assert dry == {"/sweep/rl__a": ActOutcome(Did.DRY_RUN, "would stop and relaunch (dry run)", Act.RELAUNCH)}
    assert len(ran) == 1
    assert said[0].startswith("DRY RUN: would run for cw: iris job stop /sweep/rl__a")


def test_a_failed_command_is_said_with_its_output() -> None:
    got = relaunch_outcome("/sweep/x", 1, "Traceback ...\nConnectError\n")
    assert got.text.startswith("stopped (iris KILLED); relaunch command FAILED (exit 1): Traceback")
    assert got.cancelled and not got.relaunch_attempt  # the ledger records the stop, not a relaunch


def test_a_name_that_is_not_plain_is_neither_stopped_nor_relaunched() -> None:
    cfg = parse_ops_text(OPS, "cw/ops.md", "cw")
    stopped: list[list[dict]] = []

    def stop(_cfg, jobs, _t):
        stopped.append(jobs)
        return {}, ""

    def run_local(_cfg, argv, _t):
        raise AssertionError(f"ran {argv}")

    out = relaunch_iris(cfg, [_d("/sweep/x", "rl__x; touch F #")], confirm_timeout_s=5, command_timeout_s=5,
                        dry_run=False, stop_iris=stop, run_local=run_local, say=print)  # fmt: skip
    assert out["/sweep/x"].text.startswith("not relaunched: job name 'rl__x; touch F #' is not a plain name")
    assert stopped == []  # refused before the stop: the job keeps running
