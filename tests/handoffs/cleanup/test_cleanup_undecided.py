"""An SFT completion whose launch YAML cannot be read (HF-only or DB-registered cannot be told) is
never forgotten: it joins the cleanup backlog with its reason and age, is never planned by
sweep_cleanup while undecided, its YAML is read again every later sweep, and once it can be told it
is handed off (DB-registered) or leaves the backlog (HF-only: the HF chain's); the digest's
blocked line counts it while it waits. Fake I/O (the launch reader, the hub); the real reader runs
in test_cleanup_undecided_local.py and over real bash below."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from handoff_fakes import NO_JOB_SQUEUE, FakeHub, cluster, local_bash, ops

from sweep_core.alerts.backlog_line import blocked_line
from sweep_core.config.sweep_schema import SweepConfig
from sweep_core.handoffs.chain.hf_only import HfOnly
from sweep_core.handoffs.cleanup.backlog import jobs_to_plan, load_backlog
from sweep_core.handoffs.cleanup.rejudge import give_backlog
from sweep_core.handoffs.cleanup.undecided import launch_reader
from sweep_core.handoffs.dispatch.views import cleanup_view
from sweep_core.ledger.store import load_ledger
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job
from sweep_core.records.vocab import Action, Bucket, Flavor, Severity

NAME = "sft__qwen_unread"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _config() -> SweepConfig:
    return SweepConfig.model_validate({"buckets": [{"name": "Catch-all"}], "cleanup": {"hub_org": "org"}})


def _snap(finished: list[Job] | None = None) -> ClusterSnapshot:
    return ClusterSnapshot("local", "slurm", ClusterStatus.OK, running=[], pending=[], finished=finished or [])


def _held_flag(job_id: str = "77") -> Flag:
    msg = (f"SFT completed: cleanup held back, HF-only or not cannot be told (unknown: launch YAML /c/{NAME}.yaml "
           "not readable): not handed to sft-job-cleanup; kept in the cleanup backlog")  # fmt: skip
    return Flag(rule="completion_cleanup", severity=Severity.INFO, cluster="local", job_id=job_id, job_name=NAME,
                bucket=Bucket.SFT, message=msg, action=Action.CLEANUP_UNDECIDED)  # fmt: skip


class Reader:
    """ReadLaunch answering ``verdict`` for every job; records each call (cluster, jobs)."""

    def __init__(self, verdict: HfOnly) -> None:
        self.verdict, self.calls = verdict, []

    def __call__(self, cluster_name: str, jobs):  # type: ignore[no-untyped-def]
        self.calls.append((cluster_name, list(jobs)))
        return {jid: self.verdict for jid, _, _ in jobs}


def _sweep(tmp: Path, run_id: str, now: dt.datetime, reader: Reader | None, hub: FakeHub, flags=(), snap=None):
    return give_backlog(
        {"cleanup": None}, [snap or _snap()], _config(), tmp, hub, view=cleanup_view(load_ledger(tmp)), run_id=run_id, run_log="run.md",
        dry_run=False, now=now, flags=list(flags), read_launch=reader,
    )  # fmt: skip


def test_an_unreadable_launch_yaml_waits_in_the_backlog_and_is_handed_off_once_readable(tmp_path: Path) -> None:
    job = Job("local", "77", NAME, "COMPLETED", "sacct", stdout_path=f"/logs/{NAME}-77.out")
    unknown = Reader(HfOnly(None, "unknown: launch YAML /c/x.yaml not readable"))
    hub = FakeHub({f"org/{NAME}": True})

    confs, lines = _sweep(tmp_path, "s1", T0, unknown, hub, flags=[_held_flag()], snap=_snap([job]))
    assert confs["cleanup"] is None  # never handed to sft-job-cleanup while undecided
    assert unknown.calls == []  # the gather just read it: not read twice in one sweep
    assert any("77" in line and "kept" in line for line in lines)
    (entry,) = load_backlog(tmp_path)
    assert entry["undecided"] and entry["since"] == T0.isoformat() and entry["log"] == f"/logs/{NAME}-77.out"
    assert "cannot be told" in entry["reason"]
    # a reclaim of the cluster never plans it: which cleanup it gets is not known
    assert jobs_to_plan([], load_backlog(tmp_path), ["local"]) == []

    later = T0 + dt.timedelta(hours=30)
    confs, _ = _sweep(tmp_path, "s2", later, unknown, hub)  # out of the window: no flag any more
    assert confs["cleanup"] is None
    assert unknown.calls == [("local", [("77", NAME, f"/logs/{NAME}-77.out")])]  # read again, ONE call
    (entry,) = load_backlog(tmp_path)
    assert entry["since"] == T0.isoformat() and entry["judged"] == later.isoformat()  # its age is kept
    assert "not readable" in entry["reason"]
    assert blocked_line(load_backlog(tmp_path), later) == (
        "1 cleanup blocked for > 24 h (1 launch YAML unreadable (HF-only or not))"
    )

    readable = Reader(HfOnly(False, "launch YAML /c/x.yaml says enable_db_registration: true"))
    confs, lines = _sweep(tmp_path, "s3", later + dt.timedelta(hours=1), readable, hub)
    assert [j["job_id"] for j in confs["cleanup"]["jobs"]] == ["77"]
    assert confs["cleanup"]["jobs"][0]["flavor"] == Flavor.SFT
    (entry,) = load_backlog(tmp_path)
    assert "undecided" not in entry and entry["handed"] == "s3"  # a plain entry now, awaiting its cleanup run
    assert any("judged on as sft-job-cleanup" in line for line in lines)


def test_a_yaml_that_says_hf_only_leaves_the_backlog_for_the_hf_chain(tmp_path: Path) -> None:
    hub = FakeHub({f"org/{NAME}": True})
    _sweep(tmp_path, "s1", T0, None, hub, flags=[_held_flag()])
    confs, lines = _sweep(tmp_path, "s2", T0 + dt.timedelta(hours=1), Reader(HfOnly(True, "says false: HF-only")), hub)
    assert confs["cleanup"] is None and load_backlog(tmp_path) == []
    # any enable_db_registration: false series is chained (issue 41): handed to sweep_hf_chain's found series
    assert [j["name"] for j in confs["hf_chain"]["found"]] == [NAME]
    assert any("HF-only: handed to sweep_hf_chain" in line for line in lines)
    assert any("leaves the backlog" in line and "HF chain" in line for line in lines)
    assert hub.asked == []  # never judged as sft-job-cleanup


def test_a_dry_run_keeps_nothing_and_a_held_job_is_kept_once(tmp_path: Path) -> None:
    hub = FakeHub()
    _, lines = give_backlog({"cleanup": None}, [_snap()], _config(), tmp_path, hub, view=cleanup_view(load_ledger(tmp_path)), run_id="d", run_log="r",
                            dry_run=True, now=T0, flags=[_held_flag()])  # fmt: skip
    assert load_backlog(tmp_path) == [] and any("dry run: not written" in line for line in lines)
    _sweep(tmp_path, "s1", T0, None, hub, flags=[_held_flag()])
    _sweep(tmp_path, "s2", T0 + dt.timedelta(hours=1), None, hub, flags=[_held_flag()])  # still in the window
    (entry,) = load_backlog(tmp_path)
    assert entry["since"] == T0.isoformat()


def test_the_reader_judges_as_the_gather_does_over_real_bash(tmp_path: Path) -> None:
    """launch_reader's script under real bash: a banner naming a readable YAML decides; a YAML
    that does not exist, or a log that does not exist, stays unknown with why."""
    conf, logs = tmp_path / "conf", tmp_path / "logs"
    conf.mkdir()
    logs.mkdir()
    (conf / "db.yaml").write_text("train:\n  enable_db_registration: true\n")
    (conf / "hf.yaml").write_text("enable_db_registration: false\n")
    (logs / "a.out").write_text(f"Loading config from {conf}/db.yaml\n")
    (logs / "b.out").write_text(f"config: {conf}/hf.yaml\n")
    (logs / "c.out").write_text(f"config: {conf}/gone.yaml\n")
    cfg = cluster(log_pattern=f"{logs}/%x.out")
    # scontrol as for jobs that have left slurmctld (no Slurm runs in this tier: a real one would retry)
    read = launch_reader(ops(cfg), local_bash(tmp_path, {"squeue": NO_JOB_SQUEUE, "scontrol": NO_JOB_SQUEUE}))
    got = read("local", [("1", "a", f"{logs}/a.out"), ("2", "b", ""), ("3", "c", ""), ("4", "d", "")])
    assert got["1"].hf_only is False and "enable_db_registration: true" in got["1"].why
    assert got["2"].hf_only is True  # no StdOut stored: ops.md log_pattern with its name
    assert got["3"].hf_only is None and "gone.yaml not readable" in got["3"].why
    assert got["4"].hf_only is None and "d.out is not a readable file" in got["4"].why
    assert read("elsewhere", [("5", "e", "")])["5"].hf_only is None  # no ops.md: unknown, said
