"""The cleanup backlog's line in the real sweep DAG's digest (dag.test, no cluster needed): a job
whose cleanup has been blocked for more than a day is told to Slack (a local STUB of its webhook)
once; the next sweep, with the backlog unchanged, sends nothing; a second blocked job (N changed)
is told again."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from receivers import slack_webhook_stub
from sweep_runner import run_dag
from test_notify_dag import ghost_sweep

from sweep_core.handoffs.cleanup.backlog import BACKLOG
from sweep_core.state.documents import write_document

pytestmark = pytest.mark.dagrun  # whole DAG runs: every run, not --fast

HUB = "hub check failed for model org/sft__a: config.json missing"


def _blocked(job: str, hours: float) -> dict[str, str]:
    since = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=hours)).isoformat(timespec="seconds")
    return {"cluster": "ghost", "job_id": job, "name": f"sft__{job}", "flavor": "sft-job-cleanup", "since": since,
            "reason": HUB}  # fmt: skip


def test_blocked_cleanups_are_told_when_their_number_changes_not_every_sweep(tmp_path) -> None:
    logs = tmp_path / "logs"
    with slack_webhook_stub() as (hook_url, posts):
        team = {"name": "team", "kind": "slack", "conn_id": "slack_stub"}
        ops, env = ghost_sweep(tmp_path, {"cooldown_hours": 24, "channels": [team]}, hook_url)
        midnight = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        ends = [midnight - dt.timedelta(hours=3 - i) for i in range(3)]

        def sweep(i: int) -> None:
            run = run_dag("monitor_cron_sweep", {}, logs, ops_dir=ops, logical_date=ends[i], run_after=ends[i], **env)
            assert run.task_states["notify"] == "success", run.task_states

        logs.mkdir()
        write_document(logs, BACKLOG, json.dumps([_blocked("1", 30), _blocked("2", 2)]))  # job 2: not a day yet
        sweep(0)
        assert len(posts) == 1
        # Slack's escaping: it shows "&gt;" as ">"
        assert "1 cleanup blocked for &gt; 24 h (1 not on the hub)" in json.dumps(posts[0]["blocks"])
        sweep(1)  # the backlog unchanged (the unreachable cluster still open): nothing sent
        assert len(posts) == 1
        write_document(logs, BACKLOG, json.dumps([_blocked("1", 31), _blocked("2", 26)]))
        sweep(2)
        assert len(posts) == 2
        told = json.dumps(posts[1]["blocks"])
        assert "2 cleanups blocked for &gt; 24 h (2 not on the hub)" in told and "Still open" not in told
        assert posts[1]["blocks"][0]["text"]["text"].endswith(": 1 backlog")
