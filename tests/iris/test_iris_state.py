"""iris state mapping, CLI JSON parsing (outputs recorded from the real local controller,
tests/fixtures/iris), and the snapshot rules (UNKNOWN, silent wedge, window, bring-up notes)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from helpers import FIXTURES

from sweep_core.iris.records import job_from_cli
from sweep_core.iris.state import (
    IrisJob,
    IrisStateError,
    PodCount,
    iris_snapshot,
    iris_state_name,
    sanitize_label_value,
)
from sweep_core.records.models import ClusterStatus

T0 = dt.datetime(2026, 12, 2, 12, tzinfo=dt.UTC)
T1 = T0 + dt.timedelta(hours=3)
NOW = T1.timestamp()


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        (3, "RUNNING"),
        ("JOB_STATE_FAILED", "FAILED"),
        ("succeeded", "SUCCEEDED"),
        ("8", "UNSCHEDULABLE"),
        (7, "WORKER_FAILED"),
    ],
)
def test_state_names(raw: object, name: str) -> None:
    assert iris_state_name(raw) == name


@pytest.mark.parametrize("bad", [0, 9, "JOB_STATE_WEIRD", True, None])
def test_unknown_states_are_errors(bad: object) -> None:
    with pytest.raises(IrisStateError):
        iris_state_name(bad)


def test_label_value_matches_iris() -> None:
    assert sanitize_label_value("/sweep/rl__a b") == "sweep.rl__a.b"
    assert len(sanitize_label_value("/u/" + "x" * 100)) == 63


def test_recorded_cli_json() -> None:
    listed = json.loads((FIXTURES / "iris" / "cli_job_list.json").read_text())
    text = (FIXTURES / "iris" / "cli_job_summary.json").read_text()
    summary, _ = json.JSONDecoder().raw_decode(text)
    by_id = {row["job_id"]: row for row in listed}
    failed = job_from_cli(by_id["/sweep/rl__fail"], summary)
    assert failed.state == "FAILED" and failed.tasks[0].exit_code == 1
    assert failed.finished_at_ms == 1796220268731  # epoch_ms strings become ints
    assert job_from_cli(by_id["/sweep/rl__demo"], None).state == "RUNNING"


def ij(name: str, state: str, **kw) -> IrisJob:
    return IrisJob(job_id=f"/sweep/{name}", state=state, **kw)


def test_snapshot_states_window_and_exit_codes() -> None:
    from sweep_core.iris.state import IrisTask

    in_window = int((T0 + dt.timedelta(hours=1)).timestamp() * 1000)
    before = int((T0 - dt.timedelta(hours=5)).timestamp() * 1000)
    jobs = [
        ij("rl__run", "RUNNING", started_at_ms=in_window, log_mtime=NOW - 60),
        ij(
            "sft__fail", "FAILED", finished_at_ms=in_window, tasks=[IrisTask("/sweep/sft__fail/0", "failed", 3, "boom")]
        ),
        ij("eval-old", "SUCCEEDED", finished_at_ms=before),
        ij("datagen__q", "BUILDING"),
        ij("rl__killed", "KILLED", finished_at_ms=in_window),
    ]
    snap = iris_snapshot("cw", jobs, {}, now=NOW, window_start=T0, window_end=T1, source="iris client")
    assert snap.status == ClusterStatus.OK
    assert [j.name for j in snap.running] == ["rl__run"]
    fin = {j.name: j for j in snap.finished}
    assert set(fin) == {"sft__fail", "rl__killed"}  # eval-old ended before the window
    assert fin["sft__fail"].exit_code == "3:0" and fin["rl__killed"].state == "CANCELLED"
    assert [j.name for j in snap.pending] == ["datagen__q"]


def test_controller_down_is_unknown_not_empty() -> None:
    snap = iris_snapshot(
        "cw",
        None,
        {},
        now=NOW,
        window_start=T0,
        window_end=T1,
        source="iris client",
        error="ConnectError UNAVAILABLE: Connection refused",
    )
    assert snap.status == ClusterStatus.UNKNOWN and snap.running is None and "Connection refused" in snap.notes[0]


def test_zero_pods_is_terminal_but_unknown_pods_is_not() -> None:
    jobs = [
        ij("rl__wedge", "RUNNING"),
        ij("rl__unknown", "RUNNING"),
        ij("rl__gated", "RUNNING", log_tail="shm_broadcast: waited 60 s\n"),
    ]
    pods = {
        "/sweep/rl__wedge": PodCount(0),
        "/sweep/rl__unknown": PodCount(None, error="API timeout"),
        "/sweep/rl__gated": PodCount(4, gated=4),
    }
    snap = iris_snapshot("cw", jobs, pods, now=NOW, window_start=T0, window_end=T1, source="iris client")
    wedge = next(j for j in snap.finished if j.name == "rl__wedge")
    # issue 17: its own state, iris words, no exit code or end time invented
    assert wedge.state == "WEDGED" and "iris RUNNING, 0 pods" in wedge.reason and "silent wedge" in wedge.reason
    assert wedge.exit_code == "" and wedge.end == ""
    running = {j.name: j for j in snap.running}
    assert "pod count unknown: API timeout" in running["rl__unknown"].reason
    assert "Kueue gang admission (normal)" in running["rl__gated"].reason
    assert "shm_broadcast 60s wait: benign" in running["rl__gated"].reason


def test_a_gated_job_says_its_pod_count_once_and_error_text_drops_separator_lines() -> None:
    from sweep_core.iris.state import IrisTask

    jobs = [
        ij("rl__gated", "RUNNING"),
        ij("rl__half", "RUNNING"),
        ij("rl__plain", "RUNNING"),
        ij(
            "sft__dead",
            "FAILED",
            finished_at_ms=int((T0 + dt.timedelta(hours=1)).timestamp() * 1000),
            tasks=[IrisTask("/sweep/sft__dead/0", "failed", 1, "ChildFailedError:\n" + "=" * 60 + "\n")],
        ),
    ]
    pods = {
        "/sweep/rl__gated": PodCount(4, gated=4),
        "/sweep/rl__half": PodCount(4, gated=3),
        "/sweep/rl__plain": PodCount(2),
    }
    snap = iris_snapshot("cw", jobs, pods, now=NOW, window_start=T0, window_end=T1, source="iris client")
    running = {j.name: j.reason for j in snap.running}
    assert running["rl__gated"] == "4 pod(s) SchedulingGated: awaiting Kueue gang admission (normal)"
    assert running["rl__half"] == "3 of 4 pod(s) SchedulingGated: awaiting Kueue gang admission (normal)"
    assert running["rl__plain"] == "2 pod(s)"
    assert snap.finished[0].reason == "ChildFailedError:"  # no "=====" tail


def test_a_past_window_is_read_from_the_controllers_times_not_from_now() -> None:
    """Backfill of 12:00-15:00 run the next day: what ran at 15:00 is RUNNING (as it was then),
    what started later or still waits is not this window's, a 0-pod reading today wedges nothing."""
    from sweep_core.iris.state import IrisTask

    def ms(hours: float) -> int:
        return int((T0 + dt.timedelta(hours=hours)).timestamp() * 1000)

    now = NOW + 24 * 3600
    jobs = [
        ij("rl__then_and_now", "RUNNING", submitted_at_ms=ms(0), started_at_ms=ms(1)),
        ij(
            "sft__ran_past_end",
            "FAILED",
            started_at_ms=ms(2),
            finished_at_ms=ms(5),
            tasks=[IrisTask("/sweep/sft__ran_past_end/0", "failed", 1, "boom")],
        ),  # fmt: skip
        ij("eval-ended_in_it", "SUCCEEDED", started_at_ms=ms(0.5), finished_at_ms=ms(2)),
        ij("rl__started_after", "RUNNING", submitted_at_ms=ms(4), started_at_ms=ms(4)),
        ij("datagen__waits", "PENDING", submitted_at_ms=ms(1)),
        ij("rl__no_start", "KILLED", submitted_at_ms=ms(1)),
    ]
    pods = {"/sweep/rl__then_and_now": PodCount(0)}  # today's reading: says nothing about 15:00
    snap = iris_snapshot("cw", jobs, pods, now=now, window_start=T0, window_end=T1, source="iris client")
    running = {j.name: j for j in snap.running}
    assert set(running) == {"rl__then_and_now", "sft__ran_past_end", "rl__no_start"}
    assert running["rl__then_and_now"].state == "RUNNING" and running["rl__then_and_now"].elapsed == "02:00:00"
    assert "now iris RUNNING" in running["rl__then_and_now"].note
    assert running["sft__ran_past_end"].state == "RUNNING" and "now iris FAILED" in running["sft__ran_past_end"].note
    assert running["rl__no_start"].state == "UNKNOWN" and "no start time" in running["rl__no_start"].note
    assert all("past window" in j.log_note and not j.log_tail for j in snap.running)
    assert [(j.name, j.state) for j in snap.finished] == [("eval-ended_in_it", "COMPLETED")]
    assert snap.pending is None  # not listed: nothing is told about them
    assert any("past window: read from the controller's job times" in n for n in snap.notes)


def test_a_past_iris_window_hands_nothing_to_cancel_and_judges_no_liveness() -> None:
    """The same multi-node RL job, its log silent for 5 h: asked about now it is judged (stale: an
    investigate note, never a kill: liveness on iris is the state poll, issue 41); asked about
    yesterday's window it is listed, not judged, handed to nobody."""
    from sweep_core.config.sweep import load_sweep_config
    from sweep_core.handoffs.dispatch.triggers import plan_handoffs
    from sweep_core.pipeline.steps import run_fan_in

    config = load_sweep_config(str(FIXTURES.parents[1] / "include" / "sweep.yaml"))
    started = int((T0 - dt.timedelta(hours=20)).timestamp() * 1000)

    def sweep(now: float) -> tuple[object, dict]:
        job = ij("rl__wedged", "RUNNING", started_at_ms=started, log_mtime=now - 5 * 3600,
                 log_tail="Training Step Progress: 3/600\n")  # fmt: skip
        snap = iris_snapshot("cw", [job], {job.job_id: PodCount(4)}, now=now, window_start=T0,
                             window_end=dt.datetime.fromtimestamp(now, dt.UTC) if now == NOW else T1,
                             source="iris client")  # fmt: skip
        result = run_fan_in([snap], config)
        return snap, plan_handoffs([snap], result.flags, dry_run=True, run_log="", trackers=False, hf_chain=False)

    snap, confs = sweep(NOW)
    assert snap.running[0].stale and confs["cancel"] is None  # the present: judged, a note, handed to nobody
    assert snap.running[0].minutes_since_output == 300
    snap, confs = sweep(NOW + 24 * 3600)
    assert snap.running[0].state == "RUNNING" and not snap.running[0].stale
    assert snap.running[0].minutes_since_output is None and confs["cancel"] is None


def test_a_past_windows_running_row_says_its_output_is_not_judged() -> None:
    from sweep_core.config.sweep import load_sweep_config
    from sweep_core.pipeline.steps import run_fan_in

    started = int((T0 - dt.timedelta(hours=1)).timestamp() * 1000)
    job = ij("rl__then", "RUNNING", started_at_ms=started)
    snap = iris_snapshot("cw", [job], {}, now=NOW + 24 * 3600, window_start=T0, window_end=T1, source="iris client")
    result = run_fan_in([snap], load_sweep_config(str(FIXTURES.parents[1] / "include" / "sweep.yaml")))
    rl = " ".join(result.rendered.tables["RL"].split())
    assert "running at the window's end" in rl and "last output ?" not in rl
