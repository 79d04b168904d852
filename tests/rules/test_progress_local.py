"""progress_stalled on the REAL local Slurm (issue 14): sweeps in a row over real jobs — one prints a
heartbeat every 2 s with its step frozen (stalled on the second sweep, not the first), one advances
(never), and a chain restart continues its series' step in a new link (not stalled)."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from lab import LAB_CONFIG, LOGS, USER
from ledger.test_ledger_local import PERIOD, _tick_after, _wait_until
from sweep_runner import DagRun, run_dag

from sweep_core.ledger.store import load_ledger

pytestmark = [pytest.mark.cluster, pytest.mark.long(4)]
COUNT = 'i={start}; while true; do i=$((i+1)); echo "Training Step Progress: $i/100000"; sleep 2; done'


def _stalled(run: DagRun) -> dict[str, str]:
    """job id -> the progress_stalled line of the run log (Markdown escapes removed)."""
    text = re.sub(r"\\(.)", r"\1", Path(run.values["render"]["run_log"]).read_text())
    return {m[1]: m[0] for m in re.finditer(r"\[progress_stalled\] WARN local RL (\d+) [^\n]*", text)}


def test_a_frozen_step_that_keeps_printing_is_stalled_from_the_second_sweep(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    conf = yaml.safe_load(LAB_CONFIG.read_text())
    conf["schedule"] = "* * * * *"
    for b in conf["buckets"]:
        if b["name"] == "RL":
            b["cadence_minutes"] = 1  # a log 1 min silent is stale; a new link is judged after 1 min
    sweep_yaml = tmp_path / "sweep.yaml"
    sweep_yaml.write_text(yaml.safe_dump(conf))

    def sweep(end: dt.datetime) -> DagRun:
        _wait_until(end)
        run = run_dag("monitor_cron_sweep", {"clusters": ["local"]}, tmp_path / "logs", logical_date=end,
                      run_after=end, SWEEP_CONFIG=str(sweep_yaml))  # fmt: skip
        assert run.task_states["render"] == "success", run.task_states
        return run

    names = {k: f"rl__{tag}_{k}" for k in ("wedge", "healthy", "chain")}
    beat = 'echo "Training Step Progress: 3/100"; while true; do echo "heartbeat: waiting for rollouts"; sleep 2; done'
    ids = {
        "wedge": c.submit(names["wedge"], beat),
        "healthy": c.submit(names["healthy"], COUNT.format(start=0)),
        "chain": c.submit(names["chain"], COUNT.format(start=0)),
    }
    c.wait_running(*ids.values())
    for j in ids.values():
        c.wait_log(j)
    end = _tick_after(time.time() + 3)
    first = sweep(end)
    assert _stalled(first) == {}  # one sighting: nothing to compare with

    # The chain link ends; its restart continues from the step the first link reached.
    subprocess.run(["runuser", "-u", USER, "--", "scancel", ids["chain"]], check=True)
    log1 = LOGS / f"{names['chain']}-{ids['chain']}.out"
    resume = "i=$(grep -o 'Progress: [0-9]*' " + str(log1) + " | tail -1 | cut -d' ' -f2); " + COUNT.format(start="$i")
    ids["link2"] = c.submit(f"{names['chain']}_resume1", resume)
    c.wait_running(ids["link2"])
    c.wait_log(ids["link2"])
    end = _tick_after(time.time() + PERIOD)  # the new link has run past its cadence (1 min)
    second = sweep(end)
    stalled = _stalled(second)
    assert set(stalled) == {ids["wedge"]}, stalled
    line = stalled[ids["wedge"]]
    assert f"{names['wedge']}: progress stalled: step 3 unchanged since " in line
    assert re.search(r"\(2 sweeps, \d+ min\) while the log kept being written \(last output 0 min ago\)", line)
    assert "last lines: 'heartbeat: waiting for rollouts' ×" in line  # what kept the log fresh
    assert line.endswith("→ investigate")
    ledger = load_ledger(tmp_path / "logs")
    link2 = ledger.jobs[f"local|{ids['link2']}"]
    assert link2.counter_from == f"local|{ids['chain']}" and link2.counter_sweeps == 1
    assert link2.counter_value > ledger.jobs[f"local|{ids['chain']}"].counter_value > 0

    third = sweep(end + dt.timedelta(seconds=PERIOD))
    stalled = _stalled(third)
    assert set(stalled) == {ids["wedge"]}, stalled
    assert re.search(r"\(3 sweeps, \d+ min\)", stalled[ids["wedge"]])
    assert (
        ledger.jobs[f"local|{ids['wedge']}"].counter_since
        == load_ledger(tmp_path / "logs").jobs[f"local|{ids['wedge']}"].counter_since
    )
