"""Datagen consolidate (sweep_core.handoffs.consolidate) with fake SSH and hub, a real ledger file
and a real git tracker clone: the guards before a submission, submitted once, tracked with one
sacct, FAILED reported with its traceback and retried at most N times, the tracker row advanced
and committed, cleanup's trees held until then, the sweep keeps polling while one is in flight."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
from handoff_fakes import ROOT, FakeHub, FakeSsh, cluster, lost_after_send, ok, ops, squeue
from pydantic import ValidationError

from sweep_core.config.consolidate_schema import ConsolidateSection
from sweep_core.handoffs.cleanup.plan import CleanupDecision, CleanupTarget, cleanup_config
from sweep_core.handoffs.cleanup.usecase import apply_hold
from sweep_core.handoffs.consolidate.history import open_consolidations
from sweep_core.handoffs.consolidate.usecase import consolidate_record, hold_of, run_consolidate
from sweep_core.handoffs.dispatch.keep_tracking import keep_tracking
from sweep_core.handoffs.dispatch.views import cleanup_view
from sweep_core.handoffs.harvest.plan import tracker_settings
from sweep_core.handoffs.kernel.attempt import from_row
from sweep_core.handoffs.kernel.hub import hub_act
from sweep_core.ledger.acts import acts_of, read_ledger
from sweep_core.records.models import ClusterSnapshot, ClusterStatus
from sweep_core.records.remote_result import CommandResult

NAME = "datagen__mix_v3"
ARRAY = "500"
CCFG = cleanup_config({"hub_org": "org"})
ARGV = ["sbatch", "--parsable", "-J", "{job_name}", "/opt/consolidate.sbatch", "{root}/{name}", "{org}/{name}", "it's"]
CONS = ConsolidateSection.model_validate(
    {"flavors": {"datagen-job-cleanup": {"argv": ARGV, "max_retries": 1}}, "tracker": "datagen/TRACKER.md"}
)
SHA = "c0ffee" + "0" * 34
LOG = f"consolidated 3 rows\nhttps://hub.example/datasets/org/{NAME}/commit/{SHA}\n"  # its own upload
TRACEBACK = (
    'Traceback (most recent call last):\n  File "consolidate.py", line 9, in <module>\n'
    "pyarrow.lib.ArrowInvalid: chunk 7 has a different schema\n"
)


def _job() -> dict:
    return {"cluster": "local", "job_id": f"{ARRAY}_1", "name": NAME, "flavor": "datagen-job-cleanup"}


def _probe(chunks=("COMPLETED", "COMPLETED", "COMPLETED"), cons: dict | None = None, squeue_ok=True, live=(), tail=""):
    """The consolidate probe's answer: squeue, one sacct for the chunks (+ consolidate jobs), the trees."""

    def answer(marker: str, script: str) -> dict[str, CommandResult]:
        rows = [f"{ARRAY}_{k + 1}{marker}{st}{marker}{NAME}" for k, st in enumerate(chunks)]
        rows += [f"{j}{marker}{st}{marker}consolidate__{NAME}" for j, st in (cons or {}).items()]
        recs = {
            "squeue": squeue(marker, live)
            if squeue_ok
            else CommandResult(1, "", "slurm_load_jobs error: Socket timed out on send/recv operation"),
            "sacct": ok("\n".join(rows) + "\n"),
            "dir:0": ok(),
        }
        if tail:
            recs["tail:0"] = ok(tail)
        return recs

    return answer


def _submit(job_id: str = "777"):
    return lambda marker, script: {"sub:0": ok(f"{job_id}\n")}


@pytest.fixture
def tracker_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "clone"
    (repo / "datagen").mkdir(parents=True)
    (repo / "datagen" / "TRACKER.md").write_text(
        "# Datagen\n\n| Dataset | Cluster | Array job | Consolidate job | Status | Note |\n"
        f"|---|---|---|---|---|---|\n| {NAME} | local | {ARRAY} |  | ⏳ | launched |\n| other | local | 9 |  | ⏳ | |\n"
    )
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "init"], check=True
    )
    return repo


def _run(
    ssh: FakeSsh,
    hub: FakeHub,
    tmp_path: Path,
    *,
    dry_run=False,
    jobs=None,
    repo: Path | None = None,
    said=None,
    run_id="manual__1",
):
    trackers = tracker_settings({"repo": str(repo)}, env={}) if repo else None
    return run_consolidate(
        [_job()] if jobs is None else jobs,
        ccfg=CCFG,
        cons=CONS,
        trackers=trackers,
        dry_run=dry_run,
        run_id=run_id,
        run_log_dir=tmp_path / "logs",
        load_cluster=ops(cluster(log_pattern="/logs/%x-%j.out")),
        run_script=ssh,
        hub_check=hub,
        say=(said.append if said is not None else print),
    )


def _step(got: dict) -> dict:
    assert len(got["steps"]) == 1, got
    return got["steps"][0]


def test_one_chunk_not_done_submits_nothing(tmp_path) -> None:
    ssh, hub = FakeSsh({"consolidate probe": _probe(chunks=("COMPLETED", "FAILED", "COMPLETED"))}), FakeHub()
    s = _step(_run(ssh, hub, tmp_path))
    assert s["action"] == "blocked" and "not every chunk is COMPLETED (2/3" in s["reasons"][0]
    assert ssh.whats() == [("local", "consolidate probe")] and hub.asked == []


def test_a_chunk_still_listed_by_squeue_submits_nothing(tmp_path) -> None:
    ssh = FakeSsh({"consolidate probe": _probe(live=((f"{ARRAY}_3", "RUNNING", NAME),))})
    s = _step(_run(ssh, FakeHub(), tmp_path))
    assert s["action"] == "blocked" and "still has a chunk RUNNING" in s["reasons"][0]
    assert ("local", "consolidate submit") not in ssh.whats()


def test_unknown_squeue_does_nothing_and_asks_no_hub(tmp_path) -> None:
    ssh, hub = FakeSsh({"consolidate probe": _probe(squeue_ok=False)}), FakeHub()
    s = _step(_run(ssh, hub, tmp_path))
    assert s["action"] == "blocked" and "squeue UNKNOWN" in s["reasons"][0]
    assert hub.asked == [] and ("local", "consolidate submit") not in ssh.whats()


def test_unreachable_or_inactive_cluster_does_nothing(tmp_path) -> None:
    s = _step(_run(FakeSsh(), FakeHub(), tmp_path))
    assert s["action"] == "blocked" and "unreachable" in s["reasons"][0]
    got = run_consolidate(
        [_job()],
        ccfg=CCFG,
        cons=CONS,
        trackers=None,
        dry_run=False,
        run_id="r",
        run_log_dir=tmp_path,
        load_cluster=ops(cluster(status="skipped")),
        run_script=FakeSsh(),
        hub_check=FakeHub(),
        say=print,
    )
    assert "local is slurm/skipped" in _step(got)["reasons"][0]


def test_dry_run_says_what_it_would_submit_and_submits_nothing(tmp_path) -> None:
    ssh, said = FakeSsh({"consolidate probe": _probe(), "consolidate submit": _submit()}), []
    got = _run(ssh, FakeHub(), tmp_path, dry_run=True, said=said)
    s = _step(got)
    assert s["action"] == "would submit"
    assert s["argv"][4:] == ["/opt/consolidate.sbatch", f"{ROOT}/{NAME}", f"org/{NAME}", "it's"]
    assert s["argv"][3] == f"consolidate__{NAME}"
    assert said and said[0].startswith("DRY RUN: local: would submit consolidate for " + NAME)
    assert ("local", "consolidate submit") not in ssh.whats()
    assert open_consolidations(read_ledger(tmp_path / "logs")) == []
    assert "DRY RUN: nothing submitted" in consolidate_record(got)


def test_submitted_once_then_tracked_with_one_sacct(tmp_path) -> None:
    ssh = FakeSsh({"consolidate probe": _probe(), "consolidate submit": _submit("777")})
    s = _step(_run(ssh, FakeHub(), tmp_path))
    assert s["action"] == "submitted" and s["job"] == "777"
    sub = [c for c in ssh.calls if c.what == "consolidate submit"]
    assert len(sub) == 1 and shlex.quote("it's") in sub[0].script and shlex.quote(f"{ROOT}/{NAME}") in sub[0].script
    assert open_consolidations(read_ledger(tmp_path / "logs")) == [_job()]

    # the next run (overlapping window, handed the same array again): tracked, never resubmitted
    ssh2 = FakeSsh({"consolidate probe": _probe(cons={"777": "RUNNING"}), "consolidate submit": _submit("778")})
    s2 = _step(_run(ssh2, FakeHub(), tmp_path))
    assert s2["action"] == "wait" and s2["job"] == "777" and "RUNNING" in s2["reasons"][0]
    assert ssh2.whats() == [("local", "consolidate probe")]
    probe = ssh2.calls[0].script
    assert "JOB_IDS=500,777" in probe and probe.count("sacct -j") == 1


def test_completed_on_the_hub_advances_the_tracker_row_and_releases_cleanup(tmp_path, tracker_repo) -> None:
    _run(FakeSsh({"consolidate probe": _probe(), "consolidate submit": _submit("777")}), FakeHub(), tmp_path)
    hub = FakeHub({f"org/{NAME}@{SHA}": True})  # the commit its log names
    # COMPLETED but not on the hub yet: held
    got = _run(
        FakeSsh({"consolidate probe": _probe(cons={"777": "COMPLETED"}, tail=LOG)}),
        FakeHub(),
        tmp_path,
        repo=tracker_repo,
    )
    assert (
        _step(got)["action"] == "blocked" and "COMPLETED but the dataset is not on the hub" in _step(got)["reasons"][0]
    )
    assert got["release"] == []
    got = _run(
        FakeSsh({"consolidate probe": _probe(cons={"777": "COMPLETED"}, tail=LOG)}), hub, tmp_path, repo=tracker_repo
    )
    s = _step(got)
    assert s["action"] == "advance" and got["release"] == [f"local|{ARRAY}"]
    text = (tracker_repo / "datagen" / "TRACKER.md").read_text()
    assert f"| {NAME} | local | {ARRAY} | 777 | ✅ | launched; consolidated; on the hub: org/{NAME} |" in text
    assert "| other | local | 9 |  | ⏳ | |" in text
    log = subprocess.run(["git", "-C", str(tracker_repo), "log", "--oneline"], capture_output=True, text=True).stdout
    assert f"datagen consolidate: {NAME} ✅" in log
    assert open_consolidations(read_ledger(tmp_path / "logs")) == []
    # cleanup: the delete stands for the released array, is held for another
    d_ok = CleanupDecision(CleanupTarget("local", f"{ARRAY}_1", NAME, "datagen-job-cleanup"), "delete", paths=["/x"])
    d_held = CleanupDecision(
        CleanupTarget("local", "600_1", "datagen__b", "datagen-job-cleanup"), "delete", paths=["/y"]
    )
    d_rl = CleanupDecision(CleanupTarget("local", "700", "rl__a", "rl-agentic-job-cleanup"), "delete", paths=["/z"])
    apply_hold([d_ok, d_held, d_rl], hold_of(CONS, got))
    assert [d.action for d in (d_ok, d_held, d_rl)] == ["delete", "blocked", "delete"]
    assert d_held.paths == [] and "consolidate not finished" in d_held.reasons[0]
    # a later run: done earlier, nothing submitted again, still released
    again = _run(
        FakeSsh({"consolidate probe": _probe(cons={"777": "COMPLETED"}, tail=LOG)}), hub, tmp_path, repo=tracker_repo
    )
    assert _step(again)["action"] == "done" and again["release"] == [f"local|{ARRAY}"]


def test_a_dataset_of_the_same_name_already_on_the_hub_is_not_this_arrays(tmp_path, tracker_repo) -> None:
    """A reused datagen name: the hub holds an earlier dataset under {org}/{name}. This array is
    consolidated anyway, and its COMPLETED job advances only on the commit its own log names."""
    earlier = FakeHub({f"org/{NAME}": True})
    ssh = FakeSsh({"consolidate probe": _probe(), "consolidate submit": _submit("777")})
    got = _run(ssh, earlier, tmp_path, repo=tracker_repo)
    assert _step(got)["action"] == "submitted" and got["release"] == []
    assert earlier.asked == []  # never asked to skip a consolidation
    # COMPLETED, but its log names no commit (or one of another repo): held, whatever the name holds
    other = f"done\nhttps://hub.example/datasets/org/other/commit/{SHA}\n"
    got = _run(FakeSsh({"consolidate probe": _probe(cons={"777": "COMPLETED"}, tail=other)}), earlier, tmp_path,
               repo=tracker_repo)  # fmt: skip
    s = _step(got)
    assert s["action"] == "blocked" and "names no commit to it" in s["reasons"][0] and got["release"] == []
    assert "| ⏳ |" in (tracker_repo / "datagen" / "TRACKER.md").read_text()
    # its own commit on the hub: advanced, cleanup released
    own = FakeHub({f"org/{NAME}@{SHA}": True})
    got = _run(FakeSsh({"consolidate probe": _probe(cons={"777": "COMPLETED"}, tail=LOG)}), own, tmp_path,
               repo=tracker_repo)  # fmt: skip
    assert _step(got)["action"] == "advance" and got["release"] == [f"local|{ARRAY}"]
    assert own.asked == [(f"org/{NAME}", "dataset", ("**/*.parquet",), SHA)]


def test_failed_consolidate_reported_with_its_traceback_and_retried_at_most_n_times(tmp_path) -> None:
    _run(FakeSsh({"consolidate probe": _probe(), "consolidate submit": _submit("777")}), FakeHub(), tmp_path)
    ssh = FakeSsh(
        {"consolidate probe": _probe(cons={"777": "FAILED"}, tail=TRACEBACK), "consolidate submit": _submit("778")}
    )
    s = _step(_run(ssh, FakeHub(), tmp_path))
    assert s["action"] == "submitted" and s["job"] == "778" and s["attempt"] == 2
    assert "consolidate job 777 FAILED: pyarrow.lib.ArrowInvalid: chunk 7 has a different schema" in s["reasons"][0]
    assert "/logs/consolidate__datagen__mix_v3-777.out" in ssh.calls[0].script  # the log tail asked for
    # max_retries 1: the second failure gives up; nothing is submitted again, ever
    ssh = FakeSsh(
        {"consolidate probe": _probe(cons={"778": "FAILED"}, tail=TRACEBACK), "consolidate submit": _submit("779")}
    )
    s = _step(_run(ssh, FakeHub(), tmp_path))
    assert s["action"] == "gave-up" and "ArrowInvalid" in s["traceback"]
    assert ("local", "consolidate submit") not in ssh.whats()
    assert open_consolidations(read_ledger(tmp_path / "logs")) == []
    later = _step(_run(FakeSsh({"consolidate probe": _probe()}), FakeHub(), tmp_path))
    assert later["action"] == "gave-up"


def test_sbatch_refusal_is_a_failed_attempt_and_a_lost_session_is_never_resubmitted(tmp_path) -> None:
    refused = lambda m, s: {"sub:0": CommandResult(1, "", "sbatch: error: invalid partition")}  # noqa: E731
    s = _step(_run(FakeSsh({"consolidate probe": _probe(), "consolidate submit": refused}), FakeHub(), tmp_path))
    assert s["action"] == "failed" and "invalid partition" in s["reasons"][-1]
    unreached = FakeSsh({"consolidate probe": _probe()})  # no login node took the submit: nothing sent
    s = _step(_run(unreached, FakeHub(), tmp_path))
    assert s["action"] == "blocked" and "not submitted: unreachable" in s["reasons"][-1]
    lost = lost_after_send(FakeSsh({"consolidate probe": _probe()}), "consolidate submit")  # sent, then dropped
    s = _step(_run(lost, FakeHub(), tmp_path))
    assert s["action"] == "blocked" and "outcome unknown" in s["reasons"][-1]
    s = _step(_run(FakeSsh({"consolidate probe": _probe(), "consolidate submit": _submit()}), FakeHub(), tmp_path))
    assert s["action"] == "blocked" and "never resubmitted by itself" in s["reasons"][0]


def test_no_consolidate_configured_or_other_flavors_are_left_alone(tmp_path) -> None:
    ssh = FakeSsh()
    rl = {"cluster": "local", "job_id": "9", "name": "rl__x", "flavor": "rl-agentic-job-cleanup"}
    assert _run(ssh, FakeHub(), tmp_path, jobs=[rl])["steps"] == [] and ssh.calls == []


def test_the_sweep_triggers_cleanup_while_a_consolidation_is_in_flight(tmp_path) -> None:
    _run(FakeSsh({"consolidate probe": _probe(), "consolidate submit": _submit("777")}), FakeHub(), tmp_path)
    view = cleanup_view(read_ledger(tmp_path / "logs"))
    ok_snap = ClusterSnapshot(cluster="local", scheduler="slurm", status=ClusterStatus.OK)
    unknown = ClusterSnapshot(cluster="local", scheduler="slurm", status=ClusterStatus.UNKNOWN)
    confs, notes = keep_tracking({"cleanup": None}, [ok_snap], view, dry_run=False, run_log="r.md")
    assert confs["cleanup"] == {"dry_run": False, "run_log": "r.md", "jobs": [], "reclaim_clusters": []}
    assert notes and "in flight" in notes[0]
    confs, _ = keep_tracking({"cleanup": None}, [unknown], view, dry_run=False, run_log="r.md")
    assert confs["cleanup"] is None
    given = {"cleanup": {"jobs": [_job()]}}
    assert keep_tracking(given, [ok_snap], view, dry_run=False, run_log="r.md")[0] == given


@pytest.mark.parametrize(
    ("argv", "why"),
    [(["bash", "x.sh"], "must start with sbatch"), (["sbatch", "x.sbatch"], "--parsable")],
)
def test_a_consolidate_command_must_be_an_sbatch_with_parsable(argv, why) -> None:
    with pytest.raises(ValidationError, match=why):
        ConsolidateSection.model_validate({"flavors": {"datagen-job-cleanup": {"argv": argv}}})


def _commit_all(repo: Path, msg: str) -> None:
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", msg], check=True
    )


@pytest.mark.parametrize("link", ["file", "dir"])
def test_a_tracker_symlink_committed_in_the_clone_is_refused_and_the_outside_file_untouched(
    tmp_path, tracker_repo, link
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "TRACKER.md"
    victim.write_text("my notes, not a tracker\n")
    if link == "file":  # datagen/TRACKER.md -> a file outside the clone
        (tracker_repo / "datagen" / "TRACKER.md").unlink()
        (tracker_repo / "datagen" / "TRACKER.md").symlink_to(victim)
    else:  # datagen -> a dir outside the clone
        subprocess.run(["rm", "-r", str(tracker_repo / "datagen")], check=True)
        (tracker_repo / "datagen").symlink_to(outside)
    _commit_all(tracker_repo, "a colleague's symlink")
    head = subprocess.run(["git", "-C", str(tracker_repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    _run(FakeSsh({"consolidate probe": _probe(), "consolidate submit": _submit("777")}), FakeHub(), tmp_path)
    hub = FakeHub({f"org/{NAME}@{SHA}": True})
    got = _run(
        FakeSsh({"consolidate probe": _probe(cons={"777": "COMPLETED"}, tail=LOG)}), hub, tmp_path, repo=tracker_repo
    )
    s = _step(got)
    assert s["action"] == "blocked" and "is a symlink" in s["reasons"][-1] and "not followed" in s["reasons"][-1]
    assert victim.read_text() == "my notes, not a tracker\n"
    assert sorted(p.name for p in outside.iterdir()) == ["TRACKER.md"]
    after = subprocess.run(["git", "-C", str(tracker_repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert after == head  # nothing committed
    assert got["release"] == []  # cleanup's trees stay held: the row was not advanced


def test_the_hub_checks_of_a_completed_consolidation_are_stored_on_its_array_when_they_change(
    tmp_path, tracker_repo
) -> None:
    _run(FakeSsh({"consolidate probe": _probe(), "consolidate submit": _submit("777")}), FakeHub(), tmp_path)
    done = {"consolidate probe": _probe(cons={"777": "COMPLETED"}, tail=LOG)}
    for run in ("r2", "r3", "r4"):  # COMPLETED, its commit not on the hub yet: the same answer each run
        got = _run(FakeSsh(done), FakeHub(), tmp_path, repo=tracker_repo, run_id=run)
        assert _step(got)["action"] == "blocked"
    rows = acts_of(read_ledger(tmp_path / "logs"), "local", ARRAY, "hub_check")
    assert [(r["run"], r["outcome"]) for r in rows] == [("r2", "failed")]
    first = from_row(rows[0])
    assert first.act == hub_act(f"org/{NAME}") and first.why == "consolidate job 777"
    assert f"revision {SHA}" in rows[0]["evidence"]  # the commit its log names, asked for
    got = _run(FakeSsh(done), FakeHub({f"org/{NAME}@{SHA}": None}), tmp_path, repo=tracker_repo, run_id="r5")
    assert _step(got)["action"] == "blocked" and got["release"] == []  # an unknown answer releases nothing
    got = _run(FakeSsh(done), FakeHub({f"org/{NAME}@{SHA}": True}), tmp_path, repo=tracker_repo, run_id="r6")
    assert _step(got)["action"] == "advance"
    rows = acts_of(read_ledger(tmp_path / "logs"), "local", ARRAY, "hub_check")
    assert [(r["run"], r["outcome"]) for r in rows] == [("r2", "failed"), ("r5", "unknown"), ("r6", "ok")]
