"""Tell people (issue 13) over consecutive REAL sweeps of the local Slurm: the digests go through
the Slack provider's webhook notifier to a local STUB of Slack's endpoint and through the SMTP
provider's notifier to a real SMTP server (aiosmtpd) on 127.0.0.1. The first sweep announces, the
second repeats nothing, a change is announced with a resolved flag (told once), a re-run of that
run sends nothing again, the cooldown tells a still-open flag again; a pager channel that hears only CRITICAL gets none of these WARN flags.

Windows are one minute apart and current (a per-minute cron; each sweep starts at its window's end:
a past window's liveness is not judged), the cooldown two minutes: it is crossed in sweeps, as an
hourly schedule with a 2 h cooldown would. Silent jobs are made by setting their log's mtime 3 hours
back (liveness_stale).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from lab import LAB_CONFIG
from receivers import slack_webhook_stub, smtp_server
from sweep_runner import DagRun, run_dag

pytestmark = [pytest.mark.cluster, pytest.mark.long(4)]
DIGESTS = Path(os.environ.get("SWEEP_DIGEST_OUT", "/tmp/sweep-digests"))


def _touch(path: Path, ago: str) -> None:
    subprocess.run(["touch", "-d", ago, str(path)], check=True)


def _lines(payload: dict) -> str:
    return "\n".join(b.get("text", {}).get("text", "") for b in payload["blocks"] if b["type"] == "section")


def test_first_announces_second_repeats_nothing_change_and_resolved_told_once_cooldown_tells_again(
    local_cluster, tag, tmp_path
) -> None:
    c = local_cluster
    with slack_webhook_stub() as (hook_url, posts), smtp_server() as (smtp_port, mails):
        conf = yaml.safe_load(LAB_CONFIG.read_text())
        conf["schedule"] = "* * * * *"
        conf["notify"] = {
            "cooldown_hours": 2 / 60,
            "channels": [
                {"name": "team-slack", "kind": "slack", "conn_id": "slack_stub", "severities": ["critical", "warn"]},
                {"name": "team-mail", "kind": "email", "conn_id": "smtp_local", "to": ["team@example.org"],
                 "severities": ["critical", "warn"]},
                {"name": "pager", "kind": "email", "conn_id": "smtp_local", "to": ["pager@example.org"],
                 "severities": ["critical"], "handoffs": False},
            ],
        }  # fmt: skip
        sweep_yaml = tmp_path / "sweep.yaml"
        sweep_yaml.write_text(yaml.safe_dump(conf))
        env = {
            "SWEEP_CONFIG": str(sweep_yaml),
            "AIRFLOW_CONN_SLACK_STUB": json.dumps({"conn_type": "slackwebhook", "password": hook_url}),
            "AIRFLOW_CONN_SMTP_LOCAL": json.dumps(
                {"conn_type": "smtp", "host": "127.0.0.1", "port": smtp_port,
                 "extra": {"from_email": "sweep@example.org", "disable_tls": True, "disable_ssl": True}}
            ),
        }  # fmt: skip
        names = {k: f"sft__{tag}_{k}" for k in ("a", "b", "c")}
        ids = {k: c.submit(names[k], "echo started; sleep 900") for k in ("a", "b")}
        c.wait_running(*ids.values())
        logs = {k: c.wait_log(v) for k, v in ids.items()}
        for p in logs.values():
            _touch(p, "3 hours ago")
        first_end = dt.datetime.fromtimestamp((int(time.time()) // 60 + 1) * 60, dt.UTC)  # the next minute tick
        ends = [first_end + dt.timedelta(minutes=i) for i in range(4)]

        def sweep(i: int) -> DagRun:
            time.sleep(max(0.0, ends[i].timestamp() - time.time()))  # a current window: it has just ended
            run = run_dag("monitor_cron_sweep", {"clusters": ["local"]}, tmp_path / "logs", logical_date=ends[i],
                          run_after=ends[i], **env)  # fmt: skip
            assert run.task_states["history"] == "success", run.task_states
            assert run.task_states["notify"] == "success", run.task_states
            return run

        # The cluster is shared: another test's job may end (a resolved flag) between two sweeps and
        # be told. Only the messages that name this test's jobs are counted.
        def mine(text: str) -> bool:
            return any(n in text for n in names.values())

        def slack() -> list:
            return [p for p in posts if mine(_lines(p))]

        def team() -> list:
            return [
                m
                for m in mails
                if m["X-Envelope-To"] == "team@example.org" and mine(m.get_body(("html", "plain")).get_content())
            ]

        def paged_ours() -> list:
            return [
                m for m in mails if "pager" in m["X-Envelope-To"] and mine(m.get_body(("html", "plain")).get_content())
            ]

        # 1: both silent jobs announced, to Slack and the team mail; the pager hears no WARN.
        sweep(0)
        assert len(slack()) == 1 and len(team()) == 1, (posts, [m["Subject"] for m in mails])
        first = _lines(slack()[0])
        assert "first sweep on record" in slack()[0]["blocks"][0]["text"]["text"]
        for k in ("a", "b"):
            assert f"[liveness_stale] local SFT {ids[k]} {names[k]}" in first
        assert names["a"] in team()[0].get_body(("html",)).get_content()
        # 2: nothing changed: nothing sent anywhere.
        sweep(1)
        assert len(slack()) == 1 and len(team()) == 1, _lines(slack()[-1]) if slack() else ""
        # 3: a speaks again (resolved), c is new and silent (new), b open 2 h (told again).
        _touch(logs["a"], "now")
        ids["c"] = c.submit(names["c"], "echo started; sleep 900")
        c.wait_running(ids["c"])
        _touch(c.wait_log(ids["c"]), "3 hours ago")
        sweep(2)
        assert len(slack()) == 2 and len(team()) == 2
        changed = slack()[1]
        text = _lines(changed)
        new, rest = text.split("*Still open", 1)
        assert f"{ids['c']} {names['c']}" in new and names["b"] not in new and names["a"] not in new
        still, resolved = rest.split("*Resolved*", 1)
        assert f"{ids['b']} {names['b']}" in still and "3 sweeps in a row" in still
        assert f"{ids['a']} {names['a']}" in resolved
        assert any("runs/manual__" in str(b) for b in changed["blocks"])
        # 3b: the same run again (cleared in the UI, minutes later: its ages differ): nothing sent again.
        sweep(2)
        assert len(slack()) == 2 and len(team()) == 2, _lines(slack()[-1]) if slack() else ""
        # 4: the same again: the resolved flag is not told twice, nothing else changed.
        _touch(logs["a"], "now")
        sweep(3)
        assert len(slack()) == 2 and len(team()) == 2, _lines(slack()[-1]) if slack() else ""
        assert not paged_ours(), [m["Subject"] for m in mails]
        DIGESTS.mkdir(parents=True, exist_ok=True)
        (DIGESTS / "slack_payloads.json").write_text(json.dumps(slack(), indent=2))
        (DIGESTS / "first.txt").write_text(re.sub(r"&gt;", ">", first))
        (DIGESTS / "changed.txt").write_text(re.sub(r"&gt;", ">", text))
        (DIGESTS / "mail_first.html").write_text(team()[0].get_body(("html",)).get_content())
