"""A verl-format run's curve from two real sweeps of the bundled cluster (issue 43): a Slurm job prints
verl's console lines (the ``Training Progress`` bar and ``step:N - k:v - …`` per step, as
volcengine/verl prints them: tests/fixtures/logs/profiles/verl.out cites the code) for steps 1-30,
the first ``monitor_cron_sweep`` run reads them, the job prints steps 31-60, the second run reads
those from its cursor; the history's ``point`` rows hold every (step, reward) the log printed, at the
step its own line printed, and the last point is the row's table value (step 60, reward -0.2). The
job row's ``m.series`` carries the printed steps too (it had reward -0.2 at step 44 before: the verl
lines gave no step and the cut series numbered them by index)."""

from __future__ import annotations

import json
import re
import shlex
import time

import pytest
from lab import LOGS
from sweep_runner import minute_config, minute_sweeps

from sweep_core.history.rows import JOB
from sweep_core.history.series import job_series
from sweep_core.history.store import HistoryStore

pytestmark = [pytest.mark.cluster, pytest.mark.long(1)]

# verl's console, one step per line (verl/utils/logger/aggregate_logger.py concat_dict_to_str) under
# its tqdm bar (verl/trainer/ppo/ray_trainer.py desc='Training Progress'); the reward is -0.8 + s/100
VERL = (
    "awk -v a={a} -v b={b} 'BEGIN{{for(s=a;s<=b;s++){{printf \"Training Progress: %3d%%|#| %d/100 [00:%02d<01:00, "
    '1.00s/it]\\n", s, s, s % 60; printf "step:%d - actor/entropy:%.4f - actor/grad_norm:%.4f - actor/pg_loss:%.4f - '
    'critic/rewards/mean:%.4f - training/global_step:%d - training/epoch:0\\n", s, 0.9-s/200, 2/(1+s/10), '
    "0.01-s/1000, -0.8+s/100, s}}}}'"
)


def _printed(text: str) -> list[tuple[int, float]]:
    """(step, reward) of every verl step line of the log, read here by a regex of its own."""
    return [(int(m[1]), float(m[2])) for m in re.finditer(r"^step:(\d+) - .*critic/rewards/mean:([-\d.]+)", text, re.M)]


def test_a_verl_runs_points_are_the_steps_and_rewards_its_log_printed(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    name = f"rl__{tag}_verlcurve"
    go = LOGS / f"{name}.go"  # the test's signal to print steps 31-60 (after the first sweep)
    script = (f"{VERL.format(a=1, b=30)}; while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.5; done; "
              f"{VERL.format(a=31, b=60)}; exec sleep 900")  # fmt: skip
    job = c.submit(name, script)
    c.wait_running(job)
    log = c.wait_log(job)
    deadline = time.time() + 20
    while "step:30 -" not in log.read_text() and time.time() < deadline:
        time.sleep(0.2)
    sweep_yaml = minute_config(tmp_path / "sweep.yaml")

    def print_the_rest(_: int) -> None:  # steps 31-60, read by the second sweep from its cursor
        go.touch()
        deadline = time.time() + 30
        while "step:60 -" not in log.read_text() and time.time() < deadline:
            time.sleep(0.3)

    minute_sweeps(tmp_path / "logs", between=print_the_rest, SWEEP_CONFIG=str(sweep_yaml))
    printed = _printed(log.read_text())
    assert [s for s, _ in printed] == list(range(1, 61))

    store = HistoryStore(tmp_path / "logs" / "history")
    series = job_series(store, "local", job)
    got = series["reward"]
    assert [s for s, _ in got] == [s for s, _ in printed]  # every step the log printed, at its own step
    assert all(v == pytest.approx(w, abs=1e-9) for (_, v), (_, w) in zip(got, printed, strict=True))
    assert series["entropy"][-1] == (60, pytest.approx(0.6))

    rows = store.read(records=[JOB])
    mine = rows[rows["job_id"] == job]
    assert len(mine) == 2  # one row per sweep
    first, last = mine.iloc[0], mine.iloc[-1]
    assert (first["m.step"], first["m.reward"]) == (30, pytest.approx(-0.5))  # the first sweep's table row
    assert (last["m.step"], last["m.reward"]) == (60, pytest.approx(-0.2))  # the second's
    assert got[-1] == (int(last["m.step"]), pytest.approx(last["m.reward"]))  # the curve ends at the table's value
    row_series = json.loads(last["m.series"])  # the rules' bounded series: each point at its printed step
    assert row_series[-1]["step"] == 60 and row_series[-1]["reward"] == pytest.approx(-0.2)
    assert all(dict(printed)[int(p["step"])] == pytest.approx(p["reward"]) for p in row_series if "reward" in p)
