"""The next sweep knows a relaunch as the same run (issue 20): an ops.md relaunch command's new job
id is read from its output (sbatch --parsable, or its "Submitted batch job" line), the ledger links
old -> new (same series), and a requeued link whose successors depend on it is said to hold its
chain (an ops.md relaunch: their dependency names the old id)."""

from __future__ import annotations

from pathlib import Path

import yaml

from sweep_core.handoffs.cancel.outcome import ActOutcome, Did
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest
from sweep_core.handoffs.relaunch.remote import RelaunchJob, read_requeue
from sweep_core.ledger.acts import relaunched_from, series_key
from sweep_core.ledger.entries import LedgerEntry
from sweep_core.ledger.store import load_ledger, update_ledger
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.gather import GatherOutput

ROOT = Path(__file__).resolve().parents[3]


def _out(records: dict[str, CommandResult]) -> GatherOutput:
    return GatherOutput(records=records, complete=True, marker="MK")


def test_the_new_id_of_an_ops_md_relaunch_is_read_from_its_output() -> None:
    jobs = [RelaunchJob("11", "rl__a", command=("sbatch", "--parsable", "r.sbatch")),
            RelaunchJob("12", "rl__b", command=("sbatch", "r.sbatch")),
            RelaunchJob("13", "rl__c", command=("./relaunch.sh",))]  # fmt: skip
    out = _out({
        "relaunch:0": CommandResult(0, "4242;leo\n", ""),
        "relaunch:1": CommandResult(0, "Submitted batch job 4243\n", ""),
        "relaunch:2": CommandResult(0, "done, see the log\n", ""),
    })  # fmt: skip
    res = read_requeue(out, jobs, "")
    assert res["11"].text == "cancelled and relaunched by the ops.md command as job 4242"
    assert res["11"].new_job_id == "4242" and res["12"].new_job_id == "4243"
    assert res["13"].new_job_id == "" and "no new job id in its output" in res["13"].text
    assert all(r.did == Did.RELAUNCHED and r.relaunch_attempt for r in res.values())


def test_a_requeued_link_with_successors_is_said_to_hold_its_chain() -> None:
    after = "JobId=11 JobName=rl__a JobState=PENDING Restarts=1 StartTime=2026-12-04T08:00:00"
    deps = "20MKafterok:11(unfulfilled)MK\n21MKafterany:110(unfulfilled)MK\n22MKafterok:11_3(unfulfilled)MK\n"  # not 110, not a task of an array 11
    out = _out({"relaunch:0": CommandResult(0, "", ""), "after:0": CommandResult(0, after, ""),
                "deps": CommandResult(0, deps, "")})  # fmt: skip
    res = read_requeue(out, [RelaunchJob("11", "rl__a")], "")["11"].text
    assert res.endswith("; holds its chain: successor(s) 20 wait on it (dependency) until it ends again"), res
    cmd = RelaunchJob("11", "rl__a", command=("sbatch", "--parsable", "r.sbatch"))
    out.records["relaunch:0"] = CommandResult(0, "4242\n", "")
    res = read_requeue(out, [cmd], "")["11"].text
    assert "as job 4242; successor(s) 20 depend on the OLD id 11" in res


def test_the_ledger_links_the_new_id_to_the_old_in_the_same_series(tmp_path, monkeypatch) -> None:
    from sweep_operators.relaunch_tasks import remember

    conf = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text())
    conf["run_log_dir"] = str(tmp_path)
    monkeypatch.setenv("SWEEP_RUN_LOG_DIR", str(tmp_path))  # beats sweep.yaml: an earlier sweep test may have set it
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(conf))

    def seed(ledger):
        ledger.jobs["local|11"] = LedgerEntry("local", "11", "rl__a", series="rl__a-series", state="RUNNING")
        return ledger, None

    update_ledger(tmp_path, seed)
    req = CancelRequest("local", "11", "rl__a", "kill-approval", "[liveness_stale] x", rule="liveness_stale")
    ev = {"step": 5, "remote_now": 100, "last_output": 40}
    d = CancelDecision(req, "cancel", state="RUNNING", offer={"relaunch": True, "series": "rl__a-series"}, evidence=ev)
    said = "cancelled and relaunched by the ops.md command as job 4242"
    done = {"local": {"11": ActOutcome(Did.RELAUNCHED, said, new_job_id="4242")}}
    ctx = {"run_id": "c1"}
    remember(str(tmp_path / "sweep.yaml"), ctx, [d], done, {"chosen_options": ["Cancel and relaunch"]}, {}, False)
    led = load_ledger(tmp_path)
    old = [a for a in led.jobs["local|11"].acts if a["kind"] == "relaunch"]
    assert old[-1]["new_job_id"] == "4242" and old[-1]["step"] == "5"
    assert relaunched_from(led, "local", "4242") == "local|11"
    new = led.jobs["local|4242"]
    assert series_key(new, "local", new.name) == "rl__a-series"  # its relaunches count against the same cap
    assert load_ledger(tmp_path).to_dict()["jobs"]["local|4242"]["name"] == "rl__a"
