"""The history and notify tasks in the real sweep DAG (dag.test, no cluster needed): a cluster whose
login node refuses connections is UNREACHABLE (critical). The first sweep tells it to Slack (a local
STUB of Slack's webhook endpoint) and to the pager (a real SMTP server on 127.0.0.1); the second
(and a re-run of it) tells nothing; the third, 2 h after it opened, tells it again with its streak.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest
import yaml
from receivers import free_port, slack_webhook_stub, smtp_server
from sweep_runner import ROOT, run_dag

from sweep_core.history.store import HistoryStore

pytestmark = pytest.mark.dagrun  # whole DAG runs: every run, not --fast

OPS = """---
name: ghost
scheduler: slurm
status: active
connection_id: ssh_ghost
login_nodes:
  - {{name: login01, host: 127.0.0.1, port: {port}}}
user: sweep
log_roots: [/tmp]
artifact_roots: [/tmp/ghost-artifacts]
---
# ghost: nothing listens on its login node
"""


def ghost_sweep(tmp_path: Path, notify: dict, hook_url: str) -> tuple[Path, dict[str, str]]:
    """An ops dir holding only ``ghost`` (nothing listens on its login node), a sweep.yaml (hourly,
    2 s connect timeout, ``notify``) and the env of the runs: the ghost's and the Slack stub's
    Connections."""
    port = free_port()
    ops = tmp_path / "ops"
    (ops / "ghost").mkdir(parents=True)
    (ops / "ghost" / "ops.md").write_text(OPS.format(port=port))
    conf = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text())
    conf["schedule"] = "0 * * * *"
    conf["gather"]["connect_timeout_s"] = 2
    conf["notify"] = notify
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(conf))
    return ops, {
        "SWEEP_CONFIG": str(tmp_path / "sweep.yaml"),
        "AIRFLOW_CONN_SSH_GHOST": json.dumps({"conn_type": "ssh", "host": "127.0.0.1", "port": port, "login": "sweep"}),
        "AIRFLOW_CONN_SLACK_STUB": json.dumps({"conn_type": "slackwebhook", "password": hook_url}),
    }


def test_unreachable_cluster_told_once_then_nothing_then_again_after_the_cooldown(tmp_path) -> None:
    with slack_webhook_stub() as (hook_url, posts), smtp_server() as (smtp_port, mails):
        notify = {
            "cooldown_hours": 2,
            "channels": [
                {"name": "team", "kind": "slack", "conn_id": "slack_stub"},
                {"name": "pager", "kind": "email", "conn_id": "smtp_local", "to": ["pager@x.org"],
                 "severities": ["critical"]},
            ],
        }  # fmt: skip
        ops, env = ghost_sweep(tmp_path, notify, hook_url)
        env["AIRFLOW_CONN_SMTP_LOCAL"] = json.dumps({"conn_type": "smtp", "host": "127.0.0.1", "port": smtp_port,
            "extra": {"from_email": "sweep@x.org", "disable_tls": True, "disable_ssl": True}})  # fmt: skip
        midnight = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        ends = [midnight - dt.timedelta(hours=3 - i) for i in range(3)]

        def sweep(i: int) -> None:
            run = run_dag("monitor_cron_sweep", {}, tmp_path / "logs", ops_dir=ops, logical_date=ends[i],
                          run_after=ends[i], **env)  # fmt: skip
            assert run.task_states["history"] == "success" and run.task_states["notify"] == "success", run.task_states

        sweep(0)
        assert len(posts) == 1 and len(mails) == 1
        header = posts[0]["blocks"][0]["text"]["text"]
        assert "first sweep on record" in header and "1 new" in header
        assert "CRITICAL cluster ghost UNREACHABLE" in json.dumps(posts[0]["blocks"])
        assert (
            mails[0]["X-Envelope-To"] == "pager@x.org" and "UNREACHABLE" in mails[0].get_body(("html",)).get_content()
        )
        sweep(1)
        sweep(1)  # a re-run of the same sweep: replaces its rows, tells nothing either
        assert len(posts) == 1 and len(mails) == 1
        assert len(HistoryStore(tmp_path / "logs" / "history").files()) == 2
        sweep(2)
        assert len(posts) == 2 and len(mails) == 2
        again = json.dumps(posts[1]["blocks"])
        assert "Still open" in again and "3 sweeps in a row" in again and "New" not in again
        assert posts[1]["blocks"][0]["text"]["text"].endswith(": 1 still open")
        assert re.search(r"runs/manual__\d{4}-\d\d-\d\dT\d\d%3A00%3A00%2B00%3A00\|this run", again), again
        out = Path("/tmp/sweep-digests")
        out.mkdir(exist_ok=True)
        (out / "unreachable_payloads.json").write_text(json.dumps(posts, indent=2))
