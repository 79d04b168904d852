"""A sweep that keeps failing tells nobody anything through its digest, so its failing is itself
told (notify.failed_sweeps): real DAG runs (dag.test, no cluster needed) of a sweep whose one
cluster has a configuration ERROR (an iris ops.md naming a python that is not on this worker: the
verdict task fails the run). The DAG's failure callback records each failed run in the ledger; the
2nd failed run in a row tells the critical channel (a local STUB of Slack's webhook endpoint), the
3rd does not, the 4th does again; a re-run of a failed run counts once; a success clears the streak.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
import yaml
from receivers import slack_webhook_stub
from sweep_runner import ROOT, run_dag

from sweep_core.ledger.store import load_ledger

pytestmark = pytest.mark.dagrun  # whole DAG runs: every run, not --fast

OPS = """---
name: cw
scheduler: iris
status: active
user: sweep
controller_url: http://127.0.0.1:9
iris_python: {python}
iris_timeout_s: 5
quota:
  kind: none
---
# cw: its iris python is {python}
"""


def pager_config(tmp_path, hook_url: str, failed_sweeps: int, **sections: Any) -> dict[str, str]:
    """The shipped sweep.yaml with ``sections`` replaced and one channel that hears critical (the
    Slack webhook stub at ``hook_url``), written in ``tmp_path``; the environment a run needs for it."""
    conf = {**yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text()), **sections}
    conf["notify"] = {"failed_sweeps": failed_sweeps,
                      "channels": [{"name": "pager", "kind": "slack", "conn_id": "slack_stub",
                                    "severities": ["critical"]}]}  # fmt: skip
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(conf))
    return {
        "SWEEP_CONFIG": str(tmp_path / "sweep.yaml"),
        "AIRFLOW_CONN_SLACK_STUB": json.dumps({"conn_type": "slackwebhook", "password": hook_url}),
    }


def test_failed_sweeps_in_a_row_are_told_every_second_one_and_a_success_clears_them(tmp_path) -> None:
    ops = tmp_path / "ops"
    (ops / "cw").mkdir(parents=True)
    with slack_webhook_stub() as (hook_url, posts):
        env = pager_config(tmp_path, hook_url, schedule="0 * * * *", failed_sweeps=2)
        midnight = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        ends = [midnight - dt.timedelta(hours=6 - i) for i in range(6)]

        def sweep(i: int, python: str = "/nonexistent/bin/python") -> str:
            (ops / "cw" / "ops.md").write_text(OPS.format(python=python))
            run = run_dag("monitor_cron_sweep", {}, tmp_path / "logs", ops_dir=ops, logical_date=ends[i],
                          run_after=ends[i], **env)  # fmt: skip
            return run.state

        def alerts() -> list[str]:
            return [p["text"] for p in posts if "sweeps in a row have failed" in p.get("text", "")]

        assert sweep(0) == "failed" and alerts() == []
        assert sweep(0) == "failed" and alerts() == []  # a re-run of the same failed run: still one
        assert load_ledger(tmp_path / "logs").failing == [f"manual__{ends[0].isoformat()}"]
        assert sweep(1) == "failed"
        (told,) = alerts()
        assert "monitor_cron_sweep: 2 sweeps in a row have failed (no successful sweep on record)" in told
        assert sweep(2) == "failed" and len(alerts()) == 1
        assert sweep(3) == "failed" and len(alerts()) == 2 and "4 sweeps in a row" in alerts()[1]
        assert sweep(4, python=ROOT / ".venv-iris" / "bin" / "python") in ("success",)  # found: no ERROR
        ledger = load_ledger(tmp_path / "logs")
        assert ledger.failing == [] and ledger.last_success.startswith(f"manual__{ends[4].isoformat()} ")
        assert sweep(5) == "failed" and len(alerts()) == 2  # one failure after a success: not yet told
