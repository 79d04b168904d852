"""Memory across sweeps on the REAL local Slurm (issue 18): scheduled sweeps at consecutive logical
dates whose windows tile (a per-PERIOD cron), real jobs that appear, start, end in every state and
stall; each change told once in the right sweep's run log; a re-run of the same run id tells the
same changes and hands off nothing new; a sweep with slurmctld stopped changes nothing in the
ledger and the next one tells what happened meanwhile; a run by hand over the covered windows
hands no completion to sweep_cleanup a second time.

Each window [E - PERIOD, E) ends at a tick just after its sweep starts: the events of a window
happen after the previous tick, so every job ends inside the window of the sweep that sees it.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from lab import HOME, LAB_CONFIG, USER
from sweep_runner import DagRun, run_dag

from sweep_core.ledger.store import load_ledger

pytestmark = [pytest.mark.cluster, pytest.mark.long(4)]
PERIOD = 60  # seconds: the test schedule's cron step (one-minute windows)
CRON = "* * * * *"
JOBS = HOME / "jobs"


def _tick_after(t: float) -> dt.datetime:
    """The first cron tick at or after ``t`` (epoch seconds)."""
    return dt.datetime.fromtimestamp((int(t) // PERIOD + 1) * PERIOD, dt.UTC)


def _wait_until(when: dt.datetime) -> None:
    delay = when.timestamp() - time.time()
    if delay > 0:
        time.sleep(delay)


def _run(*args: str) -> None:
    res = subprocess.run(list(args), capture_output=True, text=True, check=False)
    assert res.returncode == 0, f"{args}: {res.stdout} {res.stderr}"


def _in_time(end: dt.datetime) -> None:
    """The window's events are over before its end (else they would fall in the next window)."""
    late = time.time() - end.timestamp()
    assert late < 0, f"the events ran {late:.0f}s past their window's end: too slow for {PERIOD}s windows"


def _told_once(told: list[str], *lines: str) -> None:
    for line in lines:
        assert told.count(line) == 1, (line, told)


def _plain(run: DagRun) -> str:
    """The run's run log without Markdown escapes."""
    return re.sub(r"\\(.)", r"\1", Path(run.values["render"]["run_log"]).read_text())


def _changes(run: DagRun) -> list[str]:
    """The run log's "Changes since the previous sweep" lines (Markdown escapes removed)."""
    text = Path(run.values["render"]["run_log"]).read_text()
    section = text.split("## Changes since the previous sweep\n", 1)[1].split("\n## ", 1)[0]
    return [re.sub(r"\\(.)", r"\1", ln[2:]) for ln in section.splitlines() if ln.startswith("- ")]


@pytest.mark.exclusive  # stops a daemon or cuts sessions: alone, not beside the lanes
def test_every_change_told_once_across_tiled_sweeps_rerun_blind_sweep_and_run_by_hand(
    local_cluster, tag, tmp_path
) -> None:
    c = local_cluster
    conf = yaml.safe_load(LAB_CONFIG.read_text())
    conf["schedule"] = CRON
    sweep_yaml = tmp_path / "sweep.yaml"
    sweep_yaml.write_text(yaml.safe_dump(conf))
    logs = tmp_path / "logs"

    def sweep(end: dt.datetime | None = None, run_after: dt.datetime | None = None, **params) -> DagRun:
        """A scheduled-like sweep of the window ending ``end`` (run id ``manual__<run_after or end>``)."""
        run = run_dag(
            "monitor_cron_sweep",
            {"clusters": ["local"], **params},
            logs,
            logical_date=end,
            run_after=run_after or end,
            SWEEP_CONFIG=str(sweep_yaml),
        )
        assert run.task_states["render"] == "success", run.task_states
        return run

    def gate(name: str) -> Path:
        return JOBS / f"{tag}-{name}.go"

    def wait_for(name: str, then: str) -> str:
        return f"echo started; while [ ! -e {gate(name)} ]; do sleep 1; done; {then}"

    names = {k: f"sft__{tag}_{k}" for k in ("held", "cancel", "timeout", "done", "fail", "paused")}
    names |= {"quiet": f"rl__{tag}_quiet", "new": f"eval-{tag}_new", "late": f"ft__{tag}_late"}
    ids = {
        "held": c.submit(names["held"], "echo held; sleep 900", "-H"),
        "cancel": c.submit(names["cancel"], "echo started; sleep 900"),
        "timeout": c.submit(names["timeout"], "echo started; sleep 900"),
        "done": c.submit(names["done"], wait_for("done", "echo 'Training Step Progress: 5/5'; exit 0")),
        "late": c.submit(names["late"], wait_for("late", "echo 'Training Step Progress: 5/5'; exit 0")),
        "fail": c.submit(names["fail"], wait_for("fail", "echo 'RuntimeError: boom' >&2; exit 1")),
        "quiet": c.submit(names["quiet"], "echo started; sleep 900"),
        "paused": c.submit(names["paused"], "echo started; sleep 900"),
    }
    c.wait_running(*[v for k, v in ids.items() if k != "held"])
    quiet_log, paused_log = c.wait_log(ids["quiet"]), c.wait_log(ids["paused"])
    end = _tick_after(time.time() + 5)
    first = sweep(end)
    assert _changes(first) == ["first sweep on record: no previous sweep to compare with"]
    runs = {"first": first}

    # Window 2: a held job released, one cancelled, one completed, a new one, a stall starting.
    _wait_until(end)
    _run("scontrol", "release", ids["held"])
    _run("runuser", "-u", USER, "--", "scancel", ids["cancel"])
    gate("done").touch()
    gate("late").touch()
    ids["new"] = c.submit(names["new"], "echo started; sleep 900")
    _run("touch", "-d", "3 hours ago", str(quiet_log))
    c.wait_running(ids["held"], ids["new"])
    for k in ("cancel", "done", "late"):
        c.wait_windowed(ids[k])
    end += dt.timedelta(seconds=PERIOD)
    _in_time(end)
    runs["second"] = second = sweep(end)
    told = _changes(second)
    label = {k: f"{'RL' if k == 'quiet' else 'Eval' if k == 'new' else 'SFT'} {ids[k]} {names[k]}" for k in ids}
    _told_once(
        told,
        f"state: local {label['held']} PENDING → RUNNING",
        f"ended: local {label['cancel']} (CANCELLED; was RUNNING)",
        f"completed: local {label['done']}",
        f"new: local {label['new']} (RUNNING)",
        f"new stall: local {label['quiet']}",
    )
    cleanup = second.values["handoffs"]["cleanup"]
    assert [j["job_id"] for j in cleanup["jobs"]] == [ids["done"]]

    # A re-run of the same run id (Airflow "clear") after a config fix: ft__ names are SFT now, so
    # the re-run finds a completion to clean up that its first run did not. The same changes (that
    # job's label aside), its own report replaced; the completion its cleanup run already holds is
    # not given again, the new one goes to a follow-up cleanup run of this sweep.
    conf["buckets"][[b["name"] for b in conf["buckets"]].index("SFT")]["patterns"].append("^ft__")
    sweep_yaml.write_text(yaml.safe_dump(conf))
    again = sweep(end)
    assert again.run_id == second.run_id and again.values["render"]["run_log"] == second.values["render"]["run_log"]
    assert [ln for ln in _changes(again) if names["late"] not in ln] == [ln for ln in told if names["late"] not in ln]
    assert [j["job_id"] for j in again.values["handoffs"]["cleanup"]["jobs"]] == [ids["late"]]
    assert again.values["handoffs"]["cleanup_run_id"] == f"{second.run_id}__cleanup__2"
    assert again.task_states["trigger_cleanup"] == "success", again.task_states
    assert "already handed off by" not in _plain(again)
    assert f"cleanup: local {ids['done']} {names['done']} in this run's hand-off run already" in _plain(again)
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as s:
        confs = {r.run_id: r.conf for r in s.query(DagRun).filter(DagRun.dag_id == "sweep_cleanup")}
    assert [j["job_id"] for j in confs[f"{second.run_id}__cleanup"]["jobs"]] == [ids["done"]]
    assert [j["job_id"] for j in confs[f"{second.run_id}__cleanup__2"]["jobs"]] == [ids["late"]]
    told = _changes(again)
    # `dags test` again at the same logical date (a new run id, the same window): the same changes,
    # and the completion is not handed off a second time.
    retest = sweep(end, run_after=end + dt.timedelta(seconds=1))
    assert retest.run_id != second.run_id and _changes(retest) == told
    assert retest.values["handoffs"]["cleanup"] is None
    assert f"already handed off by {second.run_id}" in _plain(retest)
    assert load_ledger(logs).jobs[f"local|{ids['done']}"].handoffs == {"cleanup": second.run_id}
    assert load_ledger(logs).jobs[f"local|{ids['late']}"].handoffs == {"cleanup": second.run_id}

    # Window 3: a time limit hit, a failure, the stall cleared by new output, a job suspended (its
    # log silent for hours: a suspended job's silence is not a stall).
    _wait_until(end)
    _run("scontrol", "suspend", ids["paused"])
    _run("touch", "-d", "3 hours ago", str(paused_log))
    _run("scontrol", "update", f"JobId={ids['timeout']}", "TimeLimit=1")
    gate("fail").touch()
    _run("touch", str(quiet_log))
    c.wait_finished(ids["timeout"], "TIMEOUT", timeout=90)
    for k in ("timeout", "fail"):
        c.wait_windowed(ids[k])
    end += dt.timedelta(seconds=PERIOD)
    _in_time(end)
    runs["third"] = third = sweep(end)
    told = _changes(third)
    _told_once(
        told,
        f"ended: local {label['timeout']} (TIMEOUT; was RUNNING)",
        f"new failure: local {label['fail']} (FAILED; was RUNNING)",
        f"stall cleared: local {label['quiet']} (output again)",
        f"state: local {label['paused']} RUNNING → SUSPENDED",
    )
    assert not any(names["paused"] in ln and "stall" in ln for ln in told), told
    assert not [ln for ln in _plain(third).splitlines() if "[liveness_stale]" in ln and names["paused"] in ln]
    assert not any(names["cancel"] in ln or names["done"] in ln for ln in told)  # each said once

    # Window 4: the new job ends, then slurmctld is down for the sweep: the ledger's jobs are unchanged.
    _wait_until(end)
    _run("runuser", "-u", USER, "--", "scancel", ids["new"])
    c.wait_windowed(ids["new"])
    jobs_before = json.dumps(load_ledger(logs).to_dict()["jobs"], sort_keys=True)
    end += dt.timedelta(seconds=PERIOD)
    _in_time(end)
    c.stop("slurmctld")
    try:
        runs["blind"] = blind = sweep(end)
    finally:
        c.start("slurmctld")
    assert _changes(blind) == ["cluster local: OK → UNKNOWN"]
    assert json.dumps(load_ledger(logs).to_dict()["jobs"], sort_keys=True) == jobs_before

    # Window 5: the cluster is read again; what happened meanwhile is told, with its end state: the
    # sweep's sacct reaches back to the end of the last window that was read.
    _wait_until(end)
    end += dt.timedelta(seconds=PERIOD)
    runs["after"] = after = sweep(end)
    told = _changes(after)
    assert "cluster local: UNKNOWN → OK" in told
    _told_once(told, f"ended: local {label['new']} (CANCELLED; was RUNNING)")
    assert not any(ln.startswith("gone:") for ln in told), told
    assert "sacct window widened back to" in _plain(after)

    # Nothing that ended was dropped: every ended job is told, with its state, in some sweep.
    every = [ln for r in runs.values() for ln in _changes(r)]
    for k in ("cancel", "timeout", "done", "fail", "new", "late"):
        assert any(f"{ids[k]} {names[k]}" in ln for ln in every), (k, every)

    # A run by hand over the covered windows: the completion is not handed to sweep_cleanup again.
    by_hand = sweep(None, lookback_hours=0.2)
    # (other tests' completions may be in its 12-minute sacct window: those are its to hand off)
    handed = (by_hand.values["handoffs"]["cleanup"] or {}).get("jobs", [])
    assert ids["done"] not in [j["job_id"] for j in handed], handed
    note = f"cleanup: local {ids['done']} {names['done']} already handed off by {second.run_id}"
    assert note in _plain(by_hand)
    assert _changes(blind) == ["cluster local: OK → UNKNOWN"]  # its run log is its own still
    print("\n".join(f"--- {k}\n" + "\n".join(f"- {ln}" for ln in _changes(r)) for k, r in runs.items()))
