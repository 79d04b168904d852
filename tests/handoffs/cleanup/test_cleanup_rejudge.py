"""Every sweep re-judges the cleanup backlog (sweep_core.handoffs.cleanup.rejudge) with fake I/O: a
blocked entry stays with this sweep's reason and its first-blocked age, an unblocked one is handed
off to sweep_cleanup once (a ledger claim), never again by a later sweep until a cleanup run judged
it blocked anew; the hub is asked at most ``cleanup.backlog_hub_asks`` times per sweep, oldest first."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from handoff_fakes import FakeHub

from sweep_core.alerts.backlog_line import blocked_line
from sweep_core.config.sweep_schema import SweepConfig
from sweep_core.handoffs.cleanup.backlog import judge, load_backlog, update_backlog
from sweep_core.handoffs.cleanup.rejudge import give_backlog
from sweep_core.handoffs.dispatch.views import cleanup_view
from sweep_core.handoffs.upload.plan import SALVAGE
from sweep_core.ledger.acts import record_acts
from sweep_core.ledger.store import load_ledger
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

NAME = "sft__qwen_tulu3"
REPO = f"org/{NAME}"
SINCE = "2026-01-01T00:00:00+00:00"
NOW = dt.datetime(2026, 1, 3, tzinfo=dt.UTC)


def _config(**cleanup: object) -> SweepConfig:
    return SweepConfig.model_validate({"buckets": [{"name": "Catch-all"}], "cleanup": {"hub_org": "org", **cleanup}})


def _entry(job_id: str = "4242", name: str = NAME, since: str = SINCE, reason: str = "") -> dict[str, str]:
    why = reason or f"hub check failed for model {REPO}: model {REPO}: repo not on the hub"
    e = {"cluster": "local", "job_id": job_id, "name": name, "flavor": "sft-job-cleanup", "since": since}
    return {**e, "reason": why, "judged": since}


def _snap(*live: tuple[str, str, str], status: ClusterStatus = ClusterStatus.OK) -> ClusterSnapshot:
    jobs = [Job("local", jid, name, state, "squeue") for jid, name, state in live]
    return ClusterSnapshot("local", "slurm", status, running=jobs, pending=[])


def _sweep(tmp_path: Path, hub: FakeHub, run_id: str, *snaps: ClusterSnapshot, config=None, dry_run=False):
    return give_backlog(
        {"cleanup": None},
        list(snaps or (_snap(),)),
        config or _config(),
        tmp_path,
        hub,
        view=cleanup_view(load_ledger(tmp_path)),
        run_id=run_id,
        run_log="run.md",
        dry_run=dry_run,
        now=NOW,
    )


def _held(tmp_path: Path, job_id: str = "4242") -> dict[str, str]:
    (entry,) = [b for b in load_backlog(tmp_path) if b["job_id"] == job_id]
    return entry


def test_a_blocked_entry_stays_with_this_sweeps_reason_and_its_first_age(tmp_path) -> None:
    update_backlog(tmp_path, lambda _: [_entry()])
    hub = FakeHub()
    # a live rerun of the same name: still blocked for that, the hub not even asked
    confs, lines = _sweep(tmp_path, hub, "sweep-1", _snap(("5000", NAME, "RUNNING")))
    assert confs["cleanup"] is None and hub.asked == []
    held = _held(tmp_path)
    assert "live job 5000 (RUNNING) of the same name" in held["reason"] and held["since"] == SINCE
    assert "1 entry still blocked" in lines[-1]
    assert (
        blocked_line(load_backlog(tmp_path), NOW)
        == "1 cleanup blocked for > 24 h (1 held back for a live same-name job)"
    )
    # the twin ended: the hub is asked again, still lacks it: blocked for that now, same age
    confs, _ = _sweep(tmp_path, hub, "sweep-2")
    assert confs["cleanup"] is None and [a[0] for a in hub.asked] == [REPO]
    held = _held(tmp_path)
    assert held["reason"].startswith(f"hub check failed for model {REPO}") and held["since"] == SINCE
    assert held["judged"] == NOW.isoformat(timespec="seconds")
    # the hub cannot say: UNKNOWN, never handed off on it
    hub.ok[REPO] = None
    confs, _ = _sweep(tmp_path, hub, "sweep-3")
    assert confs["cleanup"] is None and _held(tmp_path)["reason"].startswith("hub check UNKNOWN")


def test_an_unblocked_entry_is_handed_off_once_and_not_by_the_next_sweep(tmp_path) -> None:
    update_backlog(tmp_path, lambda _: [_entry()])
    hub = FakeHub({REPO: True})
    confs, lines = _sweep(tmp_path, hub, "sweep-1")
    job = {"cluster": "local", "job_id": "4242", "name": NAME, "flavor": "sft-job-cleanup"}
    assert confs["cleanup"] == {"dry_run": False, "run_log": "run.md", "jobs": [job], "reclaim_clusters": []}
    assert any("4242" in x and "handed off to sweep_cleanup" in x for x in lines)
    held = _held(tmp_path)  # stays until a cleanup run confirms its trees gone, with its age
    assert held["handed"] == "sweep-1" and held["since"] == SINCE and "awaiting its cleanup run" in held["reason"]
    assert "1 handed off again, its cleanup run pending" in blocked_line(load_backlog(tmp_path), NOW)
    # the next sweep, before the cleanup run judged it: not handed off again, the hub not asked
    asked = len(hub.asked)
    confs, _ = _sweep(tmp_path, hub, "sweep-2")
    assert confs["cleanup"] is None and len(hub.asked) == asked
    # the cleanup run found it blocked anew (rm refused): the sweeps judge it again and may hand it off
    update_backlog(
        tmp_path, lambda items: judge(items, {("local", "4242"): "refused on the cluster"}, "2026-01-02T00:00:00+00:00")
    )
    assert "handed" not in _held(tmp_path)
    confs, _ = _sweep(tmp_path, hub, "sweep-3")
    assert confs["cleanup"]["jobs"] == [job] and _held(tmp_path)["handed"] == "sweep-3"


def test_the_ledger_claim_keeps_a_racing_sweep_from_handing_it_off_twice(tmp_path) -> None:
    update_backlog(tmp_path, lambda _: [_entry()])
    hub = FakeHub({REPO: True})
    confs, _ = _sweep(tmp_path, hub, "sweep-1")
    assert confs["cleanup"]["jobs"]
    assert any(k.startswith("cleanup_backlog@") for k in load_ledger(tmp_path).jobs["local|4242"].handoffs)
    update_backlog(tmp_path, lambda _: [_entry()])  # a sweep that read the backlog before sweep-1 marked it
    confs, lines = _sweep(tmp_path, hub, "sweep-2")
    assert confs["cleanup"] is None
    assert any("already handed off by sweep-1" in x for x in lines)


def test_the_hub_is_asked_at_most_n_times_per_sweep_oldest_first(tmp_path) -> None:
    days = {"3": "2026-01-01", "1": "2025-12-30", "2": "2025-12-31"}
    update_backlog(tmp_path, lambda _: [_entry(j, f"sft__run{j}", f"{d}T00:00:00+00:00") for j, d in days.items()])
    hub = FakeHub({"org/sft__run1": True})
    confs, lines = _sweep(tmp_path, hub, "sweep-1", config=_config(backlog_hub_asks=2))
    assert [a[0] for a in hub.asked] == ["org/sft__run1", "org/sft__run2"]  # the oldest two
    assert [j["job_id"] for j in confs["cleanup"]["jobs"]] == ["1"]
    assert any("1 entry not re-judged this sweep: at most 2 hub asks per sweep" in x for x in lines)
    assert _held(tmp_path, "3")["judged"] == SINCE  # the cut one keeps its last verdict


def test_an_unread_cluster_and_an_open_upload_are_not_rejudged(tmp_path) -> None:
    update_backlog(tmp_path, lambda _: [_entry()])
    hub = FakeHub({REPO: True})
    confs, lines = _sweep(tmp_path, hub, "sweep-1", _snap(status=ClusterStatus.UNREACHABLE))
    assert confs["cleanup"] is None and hub.asked == [] and _held(tmp_path)["reason"] == _entry()["reason"]
    assert any("squeue of local not read by this sweep" in x for x in lines)
    # a salvage open in the ledger: sweep_cleanup follows it every sweep, the backlog does not ask for it
    record_acts(
        tmp_path, [("local", "4242", NAME, {"kind": SALVAGE, "flavor": "sft-job-cleanup", "step": "1", "at": "t"})]
    )
    confs, _ = _sweep(tmp_path, hub, "sweep-2")
    assert confs["cleanup"] is None and hub.asked == []


def test_a_dry_run_hands_off_in_its_conf_and_writes_nothing(tmp_path) -> None:
    update_backlog(tmp_path, lambda _: [_entry()])
    confs, _ = _sweep(tmp_path, FakeHub({REPO: True}), "sweep-1", dry_run=True)
    assert confs["cleanup"]["dry_run"] is True and confs["cleanup"]["jobs"][0]["job_id"] == "4242"
    assert load_backlog(tmp_path) == [_entry()] and "local|4242" not in load_ledger(tmp_path).jobs


def test_an_entry_its_first_cleanup_run_has_not_judged_yet_is_left_to_that_run(tmp_path) -> None:
    """A job handed off by a sweep joins the backlog when its cleanup run starts; a sweep meanwhile
    (a cron run beside a backfill) must not hand it off again (seen in the fleet deployment test:
    one job in two cleanup runs). After FIRST_RUN_GRACE with no run's judgement, it is judged."""
    fresh = {"cluster": "local", "job_id": "4242", "name": NAME, "flavor": "sft-job-cleanup"}
    update_backlog(tmp_path, lambda _: [{**fresh, "since": (NOW - dt.timedelta(minutes=2)).isoformat()}])
    hub = FakeHub({REPO: True})
    confs, _ = _sweep(tmp_path, hub, "sweep-1")
    assert confs["cleanup"] is None and hub.asked == []  # not handed off, the hub not even asked
    update_backlog(tmp_path, lambda _: [{**fresh, "since": (NOW - dt.timedelta(hours=7)).isoformat()}])
    confs, _ = _sweep(tmp_path, hub, "sweep-2")  # its run never judged it (paused, crashed): judged now
    assert confs["cleanup"]["jobs"] == [fresh]
