"""The upload's pure part and its use-case with plain fakes (tests/handoff_fakes.py): the argv and
its guards, the moves from the ledger's acts, the track and submit scripts and their readers, and
what one run submits, records and reports. The real sbatch/sacct/hub path is test_upload_local."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from handoff_fakes import FakeSsh, cluster, lost_after_send, ok, ops

from sweep_core.config.ops_schema import UploadCommand
from sweep_core.handoffs.batch_job.remote import build_submit_script, build_track_script, read_track
from sweep_core.handoffs.cancel.outcome import ActOutcome, Did
from sweep_core.handoffs.cleanup.plan import CleanupDecision, CleanupTarget, cleanup_config
from sweep_core.handoffs.dispatch.views import cleanup_view
from sweep_core.handoffs.upload.plan import (
    GAVE_UP,
    SALVAGE,
    UPLOAD,
    UPLOAD_STATE,
    UploadConfigError,
    next_move,
    render,
    salvage_step,
    story_of,
    submit_argv,
    upload_argv,
)
from sweep_core.handoffs.upload.salvage import open_jobs, salvage_acts, salvaged
from sweep_core.handoffs.upload.usecase import hub_status, run_uploads, upload_settings
from sweep_core.ledger.acts import acts_of, record_acts
from sweep_core.ledger.store import load_ledger
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.gather import GatherOutput

ARGV = ["sbatch", "-J", "upload__{name}", "up.sbatch", "{artifact_dir}", "{hub_repo}", "{step}"]
NAME = "sft__cell_a"


def _up(jid: str, n: int = 1) -> dict:
    return {"kind": UPLOAD, "upload_job": jid, "attempt": str(n), "log": f"/l/{jid}", "flavor": "sft-job-cleanup"}


def _st(jid: str, state: str, why: str = "") -> dict:
    return {"kind": UPLOAD_STATE, "upload_job": jid, "state": state, "why": why}


def test_an_upload_argv_must_be_an_sbatch_job_and_ops_md_overrides_the_flavor() -> None:
    with pytest.raises(UploadConfigError, match="must start with sbatch"):
        upload_argv("sft-job-cleanup", ["python3", "upload.py"], ())
    mine = (UploadCommand(flavor="sft-job-cleanup", argv=("sbatch", "tunnel.sbatch", "{name}")),)
    assert upload_argv("sft-job-cleanup", ARGV, mine) == ("sbatch", "tunnel.sbatch", "{name}")
    assert upload_argv("datagen-job-cleanup", ARGV, mine) == tuple(ARGV)
    assert upload_argv("sft-job-cleanup", (), ()) == ()
    with pytest.raises(UploadConfigError, match="ops.md upload_commands"):
        upload_argv("sft-job-cleanup", ARGV, (UploadCommand(flavor="sft-job-cleanup", argv=("bash", "-c", "x")),))


def test_the_argv_is_filled_and_every_value_quoted_when_the_script_is_built() -> None:
    values = {"name": "n'; rm -rf /", "job_id": "1", "cluster": "c", "root": "/r", "org": "o"}
    values |= {"hub_repo": "o/n", "artifact_dir": "/r/n x", "step": "41"}
    argv = submit_argv([*ARGV, '{"json": 1}'], values, "/r/n x/upload-%j.out")
    assert argv[:3] == ("sbatch", "--parsable", "--output=/r/n x/upload-%j.out")
    assert argv[-1] == '{"json": 1}' and render("{step}/{nope}", values) == "41/{nope}"
    script = build_submit_script([argv], "MARK")
    line = next(x for x in script.splitlines() if x.startswith("run sub:0 "))
    assert shlex.split(line)[2:] == list(argv)  # the shell reads back exactly the argv
    with pytest.raises(ValueError, match="never run on the login node"):
        build_submit_script([("bash", "-c", "huggingface-cli upload")], "MARK")


@pytest.mark.parametrize(
    ("acts", "hub", "move", "attempt"),
    [
        ([], "missing", "submit", 1),
        ([], "unknown", "none", 0),  # an UNKNOWN hub never triggers an upload
        ([], "ok", "none", 0),
        ([_up("7")], "missing", "wait", 0),
        ([_up("7"), _st("7", "RUNNING")], "missing", "wait", 0),
        ([_up("7"), _st("7", "FAILED", "ValueError: x")], "missing", "submit", 2),
        ([_up("7"), _st("7", "COMPLETED")], "missing", "submit", 2),  # landed nowhere: a failure
        ([_up("7"), _st("7", "FAILED"), _up("8", 2), _st("8", "OUT_OF_MEMORY")], "missing", "submit", 3),
        (
            [_up("7"), _st("7", "FAILED"), _up("8", 2), _st("8", "FAILED"), _up("9", 3), _st("9", "FAILED")],
            "missing",
            "give-up",
            0,
        ),
        ([_up("7"), _st("7", "COMPLETED")], "ok", "verified", 0),
        ([_up("7"), _st("7", "VERIFIED")], "ok", "none", 0),
        ([_up("7"), {"kind": GAVE_UP, "why": "x"}], "missing", "none", 0),
        ([_up("7")], "unknown", "wait", 0),
    ],
)
def test_the_move_follows_the_ledger_and_the_hub(acts, hub, move, attempt) -> None:
    got = next_move(story_of(acts), hub, retries=2, has_command=True)
    assert (got.move, got.attempt) == (move, attempt), got.why


def test_a_failure_is_told_with_its_traceback_and_no_command_means_no_upload() -> None:
    got = next_move(story_of([_up("7"), _st("7", "FAILED", "ValueError: no dir")]), "missing", 2, True)
    assert got.why == "upload job 7 FAILED: ValueError: no dir; retry 1 of 2"
    assert next_move(story_of([]), "missing", 2, has_command=False).move == "none"


def test_the_salvage_step_is_the_one_before_the_collapse() -> None:
    assert salvage_step("[rl_collapse] CRITICAL local RL 1 rl__x: step 42: reward drop, entropy") == 41
    assert salvage_step("no step here") is None


def _marker_out(marker: str, records: dict[str, CommandResult]) -> GatherOutput:
    return GatherOutput(records, complete=True, marker=marker)


def test_track_is_one_sacct_and_a_sacct_error_is_unknown_never_failed() -> None:
    script = build_track_script({"12": "/a b/upload-12.out", "11": "/x"}, "MARK", 4096)
    assert script.count("sacct -j") == 1 and "JOB_IDS=11,12" in script and "'/a b/upload-12.out'" in script
    with pytest.raises(ValueError, match="not a Slurm job id"):
        build_track_script({"1;reboot": "/x"}, "MARK", 10)
    bad = read_track(_marker_out("M", {"sacct": CommandResult(1, "", "slurmdbd: connection refused")}), ["11"], "")
    assert bad["11"].state == "" and "connection refused" in bad["11"].problem
    tail = "noise\nTraceback (most recent call last):\n  File x\nValueError: Provided path is not a directory\n"
    got = read_track(
        _marker_out("M", {"sacct": ok("11M FAILEDM upload__n\n12M RUNNINGM upload__m\n"), "tail:11": ok(tail)}),
        ["11", "12", "13"],
        "",
    )
    assert got["11"].state == "FAILED" and got["11"].traceback == "ValueError: Provided path is not a directory"
    assert got["12"].state == "RUNNING" and got["13"].problem.startswith("sacct -j 13 shows no record")


def _decision(job_id: str = "4242", ok_hub: bool | None = False, action: str = "blocked") -> CleanupDecision:
    t = CleanupTarget("local", job_id, NAME, "sft-job-cleanup")
    return CleanupDecision(t, action, hub=[{"repo_id": f"org/{NAME}", "repo_type": "model", "ok": ok_hub}])


def _settings(retries: int = 2):
    raw = {
        "hub_org": "org",
        "upload_retries": retries,
        "flavors": {
            "sft-job-cleanup": {
                "hub": [{"repo": "{org}/{name}", "expected": ["config.json"]}],
                "delete": ["exports"],
                "upload": ARGV,
            }
        },
    }
    return upload_settings(raw), cleanup_config(raw)


def _run(tmp_path: Path, decisions, ssh: FakeSsh, dry_run: bool = False, run_id: str = "r1", **kw):
    us, ccfg = _settings(**kw)
    said: list[str] = []
    rep = run_uploads(
        decisions,
        us=us,
        ccfg=ccfg,
        ledger_dir=tmp_path,
        run_id=run_id,
        now="2026-12-04T08:00:00+00:00",
        dry_run=dry_run,
        load_cluster=ops(cluster()),
        run_script=ssh,
        say=said.append,
    )
    if rep.acts:
        record_acts(tmp_path, rep.acts)
    return rep, said


def test_hub_status_reads_only_a_positive_missing_as_missing() -> None:
    assert hub_status(_decision(ok_hub=False)) == "missing"
    assert hub_status(_decision(ok_hub=None)) == "unknown"
    assert hub_status(_decision(ok_hub=True, action="delete")) == "ok"
    assert hub_status(CleanupDecision(CleanupTarget("local", "1", NAME, "sft-job-cleanup"), "blocked")) == "n/a"


def test_a_dry_run_says_what_it_would_submit_and_submits_nothing(tmp_path) -> None:
    ssh = FakeSsh()
    rep, said = _run(tmp_path, [_decision()], ssh, dry_run=True)
    assert ssh.calls == [] and rep.acts == []
    assert said == [
        "DRY RUN: would submit on local for 4242 sft__cell_a: sbatch --parsable "
        "--output=/work/art/sft__cell_a/upload-%j.out -J upload__sft__cell_a up.sbatch /work/art/sft__cell_a "
        "org/sft__cell_a ''"
    ]


def test_one_run_submits_once_and_the_next_tracks_with_one_sacct(tmp_path) -> None:
    ssh = FakeSsh({"upload submit": lambda m, s: {"sub:0": ok("901\n")}})
    rep, _ = _run(tmp_path, [_decision()], ssh)
    assert [c.what for c in ssh.calls] == ["upload submit"] and rep.rows[0][4:6] == ["901", "submitted"]
    (act,) = acts_of(load_ledger(tmp_path), "local", "4242", UPLOAD)
    assert act["upload_job"] == "901" and act["log"] == "/work/art/sft__cell_a/upload-901.out"
    # an overlapping run of another id finds attempt 1 claimed: nothing submitted twice
    other = FakeSsh({"upload track": lambda m, s: {"sacct": ok(f"901{m}PENDING{m}upload\n")}})
    rep2, _ = _run(tmp_path, [_decision()], other, run_id="r2")
    assert [c.what for c in other.calls] == ["upload track"] and "submitted: the hub is" not in rep2.rows[0][6]
    assert rep2.rows[0][5] == "PENDING"


def test_a_failed_upload_is_retried_then_given_up_once(tmp_path) -> None:
    record_acts(tmp_path, [("local", "4242", NAME, _up("901"))])
    tb = "Traceback (most recent call last):\n  File x\nRuntimeError: hub said 500\n"
    ssh = FakeSsh(
        {
            "upload track": lambda m, s: {
                "sacct": ok(f"{s.split('JOB_IDS=')[1].split()[0]}{m}FAILED{m}u\n"),
                **{f"tail:{j}": ok(tb) for j in ("901", "902")},
            },
            "upload submit": lambda m, s: {"sub:0": ok("902\n")},
        }
    )
    rep, _ = _run(tmp_path, [_decision()], ssh, retries=1)
    assert "upload job 901 FAILED: RuntimeError: hub said 500; retry 1 of 1: job 902" == rep.rows[0][6]
    rep, _ = _run(tmp_path, [_decision()], ssh, retries=1)
    assert rep.rows[0][6].endswith("given up after 2 attempt(s)")
    rep, _ = _run(tmp_path, [_decision()], ssh, retries=1)
    assert rep.rows[0][6].startswith("upload given up: upload job 902 FAILED")  # told, never submitted again
    assert [c.what for c in ssh.calls].count("upload submit") == 1
    kinds = [a["kind"] for a in acts_of(load_ledger(tmp_path), "local", "4242")]
    assert kinds.count(UPLOAD) == 2 and kinds.count(GAVE_UP) == 1


def test_a_failed_submission_releases_its_claim(tmp_path) -> None:
    ssh = FakeSsh({"upload submit": lambda m, s: {"sub:0": CommandResult(1, "", "sbatch: error: invalid partition")}})
    rep, _ = _run(tmp_path, [_decision()], ssh)
    assert "submission FAILED: sbatch exited 1: sbatch: error: invalid partition" in rep.rows[0][6]
    ok_ssh = FakeSsh({"upload submit": lambda m, s: {"sub:0": ok("903")}})
    rep, _ = _run(tmp_path, [_decision()], ok_ssh, run_id="r9")
    assert rep.rows[0][4] == "903"


class _Req:
    def __init__(self, job_id: str, action: str, evidence: str) -> None:
        self.cluster, self.job_id, self.name, self.action, self.evidence = "local", job_id, "rl__x", action, evidence


class _Dec:
    def __init__(self, req: _Req) -> None:
        self.request = req


def test_only_a_confirmed_cancel_salvage_is_recorded_and_it_opens_a_cleanup_target(tmp_path) -> None:
    ev = "[rl_collapse] CRITICAL local RL 5 rl__x: step 42: reward drop"
    decisions = [
        _Dec(_Req("5", "cancel+salvage", ev)),
        _Dec(_Req("6", "cancel+salvage", ev)),
        _Dec(_Req("7", "cancel", ev)),
    ]
    cancelled = ActOutcome(Did.CANCELLED, "cancelled")
    done = {"local": {"5": cancelled, "6": ActOutcome(Did.SENT, "scancel sent; sacct says RUNNING"), "7": cancelled}}
    acts = salvage_acts(decisions, done, "now", lambda name: "rl-agentic-job-cleanup")
    assert [(a[1], a[3]["kind"], a[3]["step"]) for a in acts] == [("5", SALVAGE, "41")]
    ledger = record_acts(tmp_path, acts)
    assert open_jobs(ledger) == [
        {"cluster": "local", "job_id": "5", "name": "rl__x", "flavor": "rl-agentic-job-cleanup"}
    ]
    assert salvaged(ledger) == {("local", "5")}
    assert len(cleanup_view(ledger).with_open([{"cluster": "local", "job_id": "5"}])) == 1


def test_an_attempt_another_run_claimed_is_not_submitted_again(tmp_path) -> None:
    from sweep_core.ledger.given import mark_given
    from sweep_core.ledger.store import update_ledger

    update_ledger(
        tmp_path, lambda lg: (mark_given(lg, "upload#1", [{"cluster": "local", "job_id": "4242"}], "r0"), None)
    )
    ssh = FakeSsh({"upload submit": lambda m, s: {"sub:0": ok("904")}})
    rep, _ = _run(tmp_path, [_decision()], ssh, run_id="r1")
    assert ssh.calls == [] and rep.rows[0][6] == "attempt 1 already submitted by r0"


def test_a_sweep_hands_cleanup_an_open_upload_only_when_cleanup_has_no_work(tmp_path) -> None:
    from sweep_core.handoffs.upload.salvage import follow_open

    empty = {"cleanup": None, "cancel": None}
    assert follow_open(empty, cleanup_view(load_ledger(tmp_path)), dry_run=False, run_log="x") == empty
    ledger = record_acts(tmp_path, [("local", "4242", NAME, _up("901"))])
    got = follow_open(empty, cleanup_view(ledger), dry_run=False, run_log="x")
    assert got["cleanup"] == {"dry_run": False, "run_log": "x", "jobs": [], "reclaim_clusters": []}
    busy = {"cleanup": {"jobs": [{"job_id": "1"}]}}
    assert follow_open(busy, cleanup_view(ledger), dry_run=False, run_log="x") == busy
    record_acts(tmp_path, [("local", "4242", NAME, {"kind": GAVE_UP, "why": "x"})])
    assert follow_open(empty, cleanup_view(load_ledger(tmp_path)), dry_run=False, run_log="x") == empty


def test_a_submission_whose_answer_was_lost_is_unknown_then_found_by_its_name_never_resent(tmp_path) -> None:
    first = FakeSsh()
    rep, _ = _run(tmp_path, [_decision()], lost_after_send(first, "upload submit"))
    assert rep.rows[0][5] == "UNKNOWN" and "not sent again" in rep.rows[0][6]
    (act,) = acts_of(load_ledger(tmp_path), "local", "4242", UPLOAD)
    assert act["outcome"] == "UNKNOWN" and act["job_name"] == "upload__sft__cell_a" and act["upload_job"] == ""
    # the next run (another id) submits nothing: it finds the job sbatch made by its name in sacct
    at = int(act["claimed_at"]) + 2
    row = f"905{{m}}{at}{{m}}PENDING{{m}}upload__sft__cell_a\n"  # squeue only: held by --begin
    found = FakeSsh({"upload find": lambda m, s: {"find": ok(""), "findq": ok(row.replace("{m}", m))}})
    rep2, _ = _run(tmp_path, [_decision()], found, run_id="r2")
    assert [c.what for c in found.calls] == ["upload find"]
    assert "--name upload__sft__cell_a" in found.calls[0].script and rep2.rows[0][4] == "905"
    ups = acts_of(load_ledger(tmp_path), "local", "4242", UPLOAD)
    assert [a["upload_job"] for a in ups] == ["", "905"] and "found by its job name" in ups[1]["found"]
    track = FakeSsh({"upload track": lambda m, s: {"sacct": ok(f"905{m}RUNNING{m}upload\n")}})
    rep3, _ = _run(tmp_path, [_decision()], track, run_id="r3")
    assert [c.what for c in track.calls] == ["upload track"] and rep3.rows[0][5] == "RUNNING"


def test_an_unknown_submission_sacct_never_saw_frees_its_attempt(tmp_path, monkeypatch) -> None:
    _run(tmp_path, [_decision()], lost_after_send(FakeSsh(), "upload submit"))
    none = FakeSsh({"upload find": lambda m, s: {"find": ok(""), "findq": ok("")}})
    rep, _ = _run(tmp_path, [_decision()], none, run_id="r2")  # too soon: sacct may lag
    assert [c.what for c in none.calls] == ["upload find"] and "sacct lists none yet" in rep.rows[0][6]
    import sweep_core.handoffs.batch_job.plan as usecase

    monkeypatch.setattr(usecase, "UNSENT_AFTER_S", -1)
    again = FakeSsh(
        {
            "upload find": lambda m, s: {"find": ok(""), "findq": ok("")},
            "upload submit": lambda m, s: {"sub:0": ok("907\n")},
        }
    )
    rep2, _ = _run(tmp_path, [_decision()], again, run_id="r3")
    assert [c.what for c in again.calls] == ["upload find", "upload submit"] and rep2.rows[0][4] == "907"


def test_a_try_killed_mid_act_leaves_its_claim_unknown_and_its_retry_finds_the_job_never_resends(tmp_path) -> None:
    """A worker killed while sbatch's answer is on its way (the task's try dies after the claim, before
    any answer is recorded): the retry, same run id on another worker, looks the job up by its name."""

    def killed(m: str, s: str) -> dict:
        raise SystemExit("worker lost")  # the process ends mid-act: nothing after the claim runs

    with pytest.raises(SystemExit):
        _run(tmp_path, [_decision()], FakeSsh({"upload submit": killed}))
    (act,) = acts_of(load_ledger(tmp_path), "local", "4242", UPLOAD)  # the claim's in-flight act
    assert act["outcome"] == "UNKNOWN" and act["job_name"] == "upload__sft__cell_a" and "mid-act" in act["why"]
    at = int(act["claimed_at"]) + 1
    row = f"906{{m}}{at}{{m}}PENDING{{m}}upload__sft__cell_a\n"
    retry = FakeSsh(
        {
            "upload find": lambda m, s: {"find": ok(""), "findq": ok(row.replace("{m}", m))},
            "upload submit": lambda m, s: {"sub:0": ok("999\n")},
        }
    )
    rep, _ = _run(tmp_path, [_decision()], retry, run_id="r1")  # the same run's next try
    assert [c.what for c in retry.calls] == ["upload find"] and rep.rows[0][4] == "906"
    ups = acts_of(load_ledger(tmp_path), "local", "4242", UPLOAD)
    assert [a["upload_job"] for a in ups] == ["", "906"]


def test_an_answered_submission_leaves_no_in_flight_act(tmp_path) -> None:
    ssh = FakeSsh({"upload submit": lambda m, s: {"sub:0": ok("901\n")}})
    rep, _ = _run(tmp_path, [_decision()], ssh)
    ups = acts_of(load_ledger(tmp_path), "local", "4242", UPLOAD)
    assert [(a["upload_job"], a.get("outcome", "")) for a in ups] == [("901", "")]
