"""sweep_cancel's use-cases (sweep_core.handoffs.cancel.usecase) with fake I/O: a malformed entry,
an unknown or inactive cluster and an UNKNOWN squeue are refused with the reason and never reach
scancel; a dry run prints the scancel and contacts nothing; the outcome table."""

from __future__ import annotations

from handoff_fakes import FakeSsh, cluster, lost_after_send, ok, ops, squeue
from helpers import said as texts

from sweep_core.handoffs.cancel.outcome import ActOutcome, Did
from sweep_core.handoffs.cancel.plan import CancelDecision, approval_prompt
from sweep_core.handoffs.cancel.usecase import approval_text, cancel_record, scancel_approved, validate_jobs
from sweep_core.records.remote_result import CommandResult

SACCT_HEAD = "JobID|JobIDRaw|State|ExitCode|Start|End|Elapsed|Partition|NodeList|JobName"


def _job(job_id: str = "11", name: str = "rl__a", c: str = "local", action: str = "kill-approval") -> dict:
    return {"cluster": c, "job_id": job_id, "name": name, "action": action, "evidence": "stale 190 min"}


def _verdicts(ds: list[CancelDecision]) -> dict[str, tuple[str, str]]:
    return {d.request.job_id: (d.verdict, "; ".join(d.reasons)) for d in ds}


def test_validate_refuses_each_case_with_its_reason() -> None:
    ssh = FakeSsh({"cancel validate": lambda m, s: {"squeue": squeue(m, [("11", "RUNNING", "rl__a")])}})
    load = ops(cluster(), cluster("coreweave", scheduler="iris"), cluster("old", status="dropped"))
    jobs = [_job(), _job("12", "rl__b"), {**_job("13"), "job_id": "13; id"}, _job("14", c="nowhere")]
    got = _verdicts(validate_jobs(jobs + [_job("15", c="coreweave"), _job("16", c="old")], load, ssh))
    assert got["11"] == ("cancel", "")
    assert got["12"] == ("blocked", "not in squeue: finished, or not the cluster user's job")
    assert got["?"] == (
        "blocked",
        "flag record field 'job_id': '13; id' is not a Slurm job id (nor an iris /<user>/<job>)",
    )
    assert got["14"][0] == "blocked" and got["14"][1].startswith("ops.md: /ops/nowhere/ops.md")
    assert got["15"] == ("blocked", "coreweave is iris/active: not an active SLURM cluster, not contacted")
    assert got["16"] == ("blocked", "old is slurm/dropped: not an active SLURM cluster, not contacted")
    assert ssh.whats() == [("local", "cancel validate")]  # one squeue, only the active SLURM cluster


def test_an_unknown_squeue_blocks_every_job_of_that_cluster() -> None:
    down = validate_jobs([_job(), _job("12", "rl__b")], ops(cluster()), FakeSsh())
    assert {v for v, _ in _verdicts(down).values()} == {"blocked"}
    assert all(why.startswith("squeue UNKNOWN (unreachable: ") for _, why in _verdicts(down).values())
    bad = FakeSsh({"cancel validate": lambda m, s: {"squeue": CommandResult(1, "", "slurm_load_jobs error")}})
    assert "squeue UNKNOWN" in _verdicts(validate_jobs([_job()], ops(cluster()), bad))["11"][1]


def _validated() -> list[CancelDecision]:
    ssh = FakeSsh({"cancel validate": lambda m, s: {"squeue": squeue(m, [("11", "RUNNING", "rl__a")])}})
    return validate_jobs([_job(), _job("12", "rl__b")], ops(cluster()), ssh)


def test_dry_run_prints_the_scancel_and_contacts_nothing() -> None:
    said: list[str] = []
    ssh = FakeSsh()
    done = scancel_approved(
        _validated(), confirm_timeout_s=5, dry_run=True, load_cluster=ops(cluster()), run_script=ssh, say=said.append
    )
    assert texts(done) == {"local": {"11": "would scancel (dry run)"}}  # the blocked job 12 is not even printed
    assert said == ["DRY RUN: would run on local: scancel -u sweep -n rl__a -t RUNNING -- 11"] and ssh.calls == []


def test_scancel_confirmed_by_sacct_and_not_run_when_unreachable() -> None:
    sacct = ok(f"{SACCT_HEAD}\n11|11|CANCELLED by 1001|0:0|x|x|00:01|p|n|rl__a\n")
    ssh = FakeSsh({"scancel": lambda m, s: {"scancel:0": ok(), "sacct": sacct}})
    kw = {"confirm_timeout_s": 5, "dry_run": False, "load_cluster": ops(cluster()), "say": print}
    assert scancel_approved(_validated(), run_script=ssh, **kw) == {
        "local": {"11": ActOutcome(Did.CANCELLED, "cancelled")}
    }
    assert ssh.whats() == [("local", "scancel")]  # one session re-checks, scancels, waits for sacct
    down = scancel_approved(_validated(), run_script=FakeSsh(), **kw)
    assert down["local"]["11"].did == Did.NOT_RUN and down["local"]["11"].text.startswith("not run: unreachable")


def test_outcome_table_says_the_approval_and_leaves_blocked_jobs_alone() -> None:
    ds = _validated()
    approved = approval_text({"chosen_options": ["Approve"], "responded_by": "ana", "timed_out": False}, True)
    assert approved == "approved by ana"
    assert approval_text({"timed_out": True}, False) == "approval timed out: rejected"
    assert approval_text({}, False) == "no approval (not asked, or the approval task failed)"
    table = cancel_record(ds, {"local": {"11": ActOutcome(Did.CANCELLED, "cancelled")}}, approved)
    assert "blocked: left alone" in table and "cancelled" in table
    assert "requested by hand (not verified): stale 190 min" in " ".join(table.split())  # never as evidence
    rejected = cancel_record(ds, {}, approval_text({"responded_by": "bo"}, False))
    assert "not cancelled: rejected by bo" in rejected


def test_an_iris_job_is_validated_by_its_controller_and_stopped_through_the_client() -> None:
    """issue 17: the same guards as scancel (listed now, same name, allowed state), iris words."""
    from sweep_core.iris.state import IrisJob

    load = ops(cluster("cw", scheduler="iris"))
    listed = [IrisJob("/sweep/rl__a", "RUNNING"), IrisJob("/sweep/rl__b", "SUCCEEDED")]
    jobs = [_job("/sweep/rl__a", "rl__a", c="cw"), _job("/sweep/rl__b", "rl__b", c="cw"), _job("/sweep/x", "x", c="cw")]
    got = _verdicts(validate_jobs(jobs, load, FakeSsh(), lambda cfg: (listed, "")))
    assert got["/sweep/rl__a"] == ("cancel", "")
    assert got["/sweep/rl__b"] == ("blocked", "COMPLETED: action 'kill-approval' cancels only RUNNING")
    assert got["/sweep/x"] == ("blocked", "not in the iris controller: finished, or not the cluster user's job")
    down = _verdicts(validate_jobs(jobs[:1], load, FakeSsh(), lambda cfg: (None, "controller http://c: refused")))
    assert down["/sweep/rl__a"][1] == (
        "the iris controller UNKNOWN (controller http://c: refused): nothing is cancelled on this cluster"
    )
    sent = []

    def stop(cfg, approved, timeout):
        sent.append(approved)
        return {"/sweep/rl__a": {"rc": 0, "text": "terminate sent", "state": "KILLED"}}, ""

    decisions = validate_jobs(jobs[:1], load, FakeSsh(), lambda cfg: (listed, ""))
    subject, body = approval_prompt(decisions, dry_run=False, timeout_minutes=30)
    assert subject == "[BY HAND] iris job stop 1 job(s) on cw?" and "scancel" not in body  # no sweep hand-off
    kw = {"confirm_timeout_s": 5, "load_cluster": load, "run_script": FakeSsh(), "stop_iris": stop}
    lines: list[str] = []
    assert texts(scancel_approved(decisions, dry_run=True, say=lines.append, **kw)) == {
        "cw": {"/sweep/rl__a": "would stop (dry run)"}
    }
    assert sent == [] and lines == [
        "DRY RUN: would run on cw: iris job stop /sweep/rl__a (re-checked RUNNING under its name first)"
    ]
    done = scancel_approved(decisions, dry_run=False, say=lines.append, **kw)
    assert done == {"cw": {"/sweep/rl__a": ActOutcome(Did.STOPPED, "stopped (iris KILLED)")}}
    assert sent == [[{"job_id": "/sweep/rl__a", "name": "rl__a", "state": "RUNNING"}]]


def test_a_scancel_whose_session_dropped_after_it_was_sent_is_unknown_not_not_run() -> None:
    kw = {"confirm_timeout_s": 5, "dry_run": False, "load_cluster": ops(cluster()), "say": print}
    lost = scancel_approved(_validated(), run_script=lost_after_send(FakeSsh(), "scancel"), **kw)
    got = lost["local"]["11"]
    assert got.did == Did.UNKNOWN and got.text.startswith("UNKNOWN: outcome UNKNOWN") and "not sent again" in got.text
    assert got.cancelled and not got.relaunch_attempt  # recorded as a cancel (counted), never sent again


def test_an_iris_job_flagged_for_its_silence_is_stopped_only_if_its_log_stayed_silent() -> None:
    """validate keeps the controller's newest log line time; the stop gets it for a silence flag and
    a job whose log was written after it comes back left alone (the real re-check: test_iris_stop_recheck)."""
    from dataclasses import replace

    from sweep_core.iris.state import IrisJob

    load = ops(cluster("cw", scheduler="iris"))
    listed = [IrisJob("/sweep/rl__a", "RUNNING", log_mtime=1_782_864_000.25)]
    decisions = validate_jobs([_job("/sweep/rl__a", "rl__a", c="cw")], load, FakeSsh(), lambda cfg: (listed, ""))
    assert decisions[0].evidence == {"last_output_ms": 1_782_864_000_250}
    assert "newest log line at 2026-07-01 00:00:00Z" in approval_prompt(decisions, dry_run=False, timeout_minutes=30)[1]
    decisions[0].request = replace(decisions[0].request, rule="liveness_stale")  # the sweep's own flag (authority)
    sent = []

    def stop(cfg, approved, timeout):
        sent.append(approved)
        return {
            "/sweep/rl__a": {"rc": 4, "text": "moved since the flag: its log was written at …", "state": "RUNNING"}
        }, ""

    kw = {"confirm_timeout_s": 5, "load_cluster": load, "run_script": FakeSsh(), "stop_iris": stop}
    done = scancel_approved(decisions, dry_run=False, say=print, **kw)
    assert sent == [
        [{"job_id": "/sweep/rl__a", "name": "rl__a", "state": "RUNNING", "quiet_since_ms": 1_782_864_000_250}]
    ]
    assert done["cw"]["/sweep/rl__a"].did == Did.LEFT_ALONE
