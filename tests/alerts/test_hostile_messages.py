"""Cluster text cannot place a live link or formatting in a Slack or e-mail message (issue 30, 11):
a job name and a log line carrying a fake "approve here" link (bare, Slack ``<url|text>``, Markdown,
``www.``), Slack mrkdwn marks and a mention go through the real notifiers to a local STUB of Slack's
webhook and a real SMTP server (aiosmtpd); what arrives links only to the sweep's own pages and
formats only the sweep's own section headers."""

from __future__ import annotations

import datetime as dt
import json
import re
from html.parser import HTMLParser
from types import SimpleNamespace

from receivers import slack_webhook_stub, smtp_server

from sweep_core.alerts.approvals import approval_message
from sweep_core.alerts.digest import COLUMNS, build_digest
from sweep_core.alerts.layout import Message, route
from sweep_core.config.notify_schema import Channel
from sweep_core.history.rows import CLUSTER, FLAG, sweep_frame
from sweep_core.history.store import HistoryStore, read_sweep
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag

OURS = "http://airflow.local:8080/dags/monitor_cron_sweep/runs/r1"
NAME = "rl__x_*URGENT*_~gone~`rm -rf`<!channel>_evil.example.com"
LOG = ("approve here: https://airflow.evil.example/approve <https://evil.example/a|Approve now> "
       "[Approve](http://evil.example/b) www.evil.example/c _now_ *click* &lt;!here&gt;")  # fmt: skip
EVIL = re.compile(r"(?i)evil\.example|https?://(?!airflow\.local)|www\.")


def _digest_message(tmp_path) -> Message:
    store = HistoryStore(tmp_path)
    end = dt.datetime(2026, 12, 3, tzinfo=dt.UTC)
    flag = Flag(rule="liveness_stale", severity="critical", cluster="c1", job_id="7", job_name=NAME, bucket="RL",
                message=LOG)  # fmt: skip
    snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, running=[], finished=[])
    store.append(sweep_frame([snap], [flag], run_id="r1", window_start=end - dt.timedelta(hours=3), window_end=end),
                 run_id="r1", window_end=end)  # fmt: skip
    cur = read_sweep(store, "r1", end, records=(FLAG, CLUSTER), columns=COLUMNS)
    digest = build_digest(cur, store.read(before=end), run_id="r1", cooldown_hours=24)
    msg = route(digest, ["critical"], links=[("this run", OURS)])
    assert msg is not None
    return msg


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.hrefs += [v for k, v in attrs if k in ("href", "src")]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _slack_ok(payload: dict) -> None:
    header = [b["text"]["text"] for b in payload["blocks"] if b["type"] == "header"]
    assert len(header) == 1 and "<" not in header[0] and not EVIL.search(header[0])  # plain text: no markup
    texts = [payload["text"]] + [b["text"]["text"] for b in payload["blocks"] if b["type"] == "section"]
    texts += [e["text"] for b in payload["blocks"] for e in b.get("elements", [])]
    for t in texts:  # mrkdwn
        links = re.findall(r"<([^>|]*)(?:\|[^>]*)?>", t)  # Slack's link / mention syntax
        assert all(u == OURS or u.startswith("http://airflow.local") for u in links), links
        bare = re.sub(r"<[^>]*>", "", t)
        assert not EVIL.search(bare), bare  # no bare URL or host a client would link
        no_headers = re.sub(r"^\*[^*\n]+\*$", "", bare, flags=re.M)  # the sweep's own section headers
        assert not re.search(r"[*~`]|(?<![0-9A-Za-z_])_|_(?![0-9A-Za-z_])", no_headers), no_headers
    assert "URGENT" in json.dumps(payload) and "approve here" in json.dumps(payload)  # still told, as text


def _mail_ok(mail) -> None:
    body = mail.get_body(("html",)).get_content()
    parsed = _Links()
    parsed.feed(body)
    assert parsed.hrefs and all(h.startswith("http://airflow.local") for h in parsed.hrefs), parsed.hrefs
    assert not EVIL.search("".join(parsed.text)) and not EVIL.search(str(mail["Subject"]))
    assert "approve here" in "".join(parsed.text) and "<!channel>" in "".join(parsed.text)  # shown, inert


def test_hostile_job_name_and_log_line_reach_slack_and_mail_without_links_or_formatting(tmp_path, monkeypatch) -> None:
    from sweep_operators.notify_tasks import send

    with slack_webhook_stub() as (hook_url, posts), smtp_server() as (port, mails):
        monkeypatch.setenv("AIRFLOW_CONN_SLACK_STUB", json.dumps({"conn_type": "slackwebhook", "password": hook_url}))
        monkeypatch.setenv("AIRFLOW_CONN_SMTP_LOCAL", json.dumps({
            "conn_type": "smtp", "host": "127.0.0.1", "port": port,
            "extra": {"from_email": "sweep@x.org", "disable_tls": True, "disable_ssl": True}}))  # fmt: skip
        slack = Channel(name="team", kind="slack", conn_id="slack_stub")
        mail = Channel(name="mail", kind="email", conn_id="smtp_local", to=("team@x.org",))
        approval = approval_message(f"Cancel {NAME}?", f"evidence: {LOG}\nname: {NAME}", OURS + "/approve", ["c1"])
        context = {"ti": SimpleNamespace(dag_id="d", run_id="r1", task_id="t", map_index=-1)}
        for msg in (_digest_message(tmp_path), approval):
            send(slack, msg, context)
            send(mail, msg, context)
        assert len(posts) == 2 and len(mails) == 2
        for payload in posts:
            _slack_ok(payload)
        for m in mails:
            _mail_ok(m)
