"""The relaunch scripts' builders and readers: every value quoted (a hostile name, an ops.md argv),
an array task requeued by its task id, the outcome only "requeued" when scontrol shows it."""

from __future__ import annotations

import shlex

import pytest

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.config.relaunch_schema import RelaunchCommand
from sweep_core.handoffs.cancel.fresh import Evidence
from sweep_core.handoffs.cancel.outcome import Act, ActOutcome, Did
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest
from sweep_core.handoffs.relaunch.plan import relaunch_plan
from sweep_core.handoffs.relaunch.remote import (
    RelaunchJob,
    build_requeue_script,
    read_requeue,
    requeue_line,
)
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.gather import GatherOutput


def test_the_requeue_line_names_an_array_task_by_its_task_id_never_the_array() -> None:
    j = RelaunchJob("8587_1", "rl__a b", signal="USR1", grace_s=30, set_requeue=True)
    line = requeue_line("sweep", j)
    assert line == ("scancel --signal=USR1 --batch -u sweep -n 'rl__a b' -- 8587_1; sleep 30; "
                    "scontrol update JobId=8587_1 Requeue=1; scontrol requeue 8587_1")  # fmt: skip
    with pytest.raises(ValueError):
        RelaunchJob("8587", "x", signal="USR1; rm -rf /")
    with pytest.raises(ValueError):
        RelaunchJob("8587; id", "x")


def test_an_ops_md_command_is_used_instead_with_every_value_quoted() -> None:
    cmd = RelaunchCommand.model_validate({"match": "^rl__", "argv": ["sbatch", "-J", "{name}", "relaunch.sbatch"]})
    req = CancelRequest("local", "12", "rl__a=1+b.2", "kill-approval", "[liveness_stale] x", rule="liveness_stale")
    d = CancelDecision(req, "cancel", state="RUNNING")
    plan = relaunch_plan(d, Evidence("12", req.name, requeue="1"), CancelConfig(), [cmd])
    assert plan.command == ("sbatch", "-J", "rl__a=1+b.2", "relaunch.sbatch")
    assert shlex.split(plan.command_line()) == list(plan.command)  # one word each, nothing expanded
    script = build_requeue_script("sweep", [plan], "MK", 30)
    assert "CMDS=(" in script and "sbatch -J rl__a=1+b.2 relaunch.sbatch" in script


def test_a_job_name_that_is_not_plain_never_fills_an_ops_md_command() -> None:
    cmd = RelaunchCommand.model_validate({"match": "^rl__", "argv": ["sbatch", "-J", "{name}", "relaunch.sbatch"]})
    for name in ("rl__$(touch /tmp/x)", "rl__x; touch F #", "rl__../../etc", "rl__a b"):
        d = CancelDecision(
            CancelRequest("local", "12", name, "kill-approval", "[liveness_stale] x", rule="liveness_stale"), "cancel"
        )
        with pytest.raises(ValueError, match="is not a plain name"):
            relaunch_plan(d, Evidence("12", name, requeue="1"), CancelConfig(), [cmd])
        with pytest.raises(ValueError, match="is not a plain name"):
            RelaunchJob("12", name, command=("sbatch", "x.sbatch"))
    assert RelaunchJob("12", "rl__x; touch F #").command == ()  # a plain requeue: the name is only quoted


def _out(records: dict[str, CommandResult]) -> GatherOutput:
    return GatherOutput(records=records, complete=True, marker="MK")


def test_read_requeue_says_requeued_only_with_scontrol_s_word() -> None:
    jobs = [RelaunchJob("11", "rl__a"), RelaunchJob("12", "rl__b"), RelaunchJob("13", "rl__c", set_requeue=True)]
    after = (
        "JobId=11 JobName=rl__a JobState=PENDING Reason=BeginTime Requeue=1 Restarts=1 StartTime=2026-12-03T20:10:32"
    )
    out = _out({
        "relaunch:0": CommandResult(0, "", ""),
        "after:0": CommandResult(0, after, ""),
        "relaunch:1": CommandResult(2, "squeue (exit 0) shows [], expected [12|RUNNING|rl__b]", ""),
        "setreq:2": CommandResult(1, "", "Access/permission denied"),
    })  # fmt: skip
    got = read_requeue(out, jobs, "")
    said = "requeued (PENDING, Restarts=1, starts again ~2026-12-03T20:10:32)"
    assert got["11"] == ActOutcome(Did.REQUEUED, said, Act.RELAUNCH) and got["11"].relaunch_attempt
    assert got["12"].did == Did.REFUSED and got["12"].text.startswith(
        "refused before relaunch: squeue (exit 0) shows []"
    )
    assert got["13"] == ActOutcome(Did.REFUSED, "Requeue=1 refused: Access/permission denied", Act.RELAUNCH)
    assert not got["12"].relaunch_attempt and not got["13"].relaunch_attempt and not got["13"].cancelled
