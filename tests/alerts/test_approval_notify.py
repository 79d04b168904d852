"""Kill approvals and overruns reach people (issue 13): sweep_cancel's approval operator carries the
notifier; the approvers named for the job's cluster get the evidence and the Required Actions link by
e-mail (a real SMTP server on 127.0.0.1) and Slack (a local STUB of Slack's webhook endpoint); cluster
text is not Jinja-rendered. The overrun Deadline Alert's callback tells the channels that hear critical."""

from __future__ import annotations

import json
from types import SimpleNamespace

import yaml
from receivers import slack_webhook_stub, smtp_server
from sweep_runner import ROOT

from sweep_core.alerts.approvals import approvers_for
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest, approval_prompt


def test_approvers_are_named_per_cluster_with_a_default() -> None:
    names = {"hpc": ("a@x", "b@x"), "*": ("oncall@x",)}
    assert approvers_for(["hpc"], names) == ["a@x", "b@x"]
    assert approvers_for(["hpc", "other"], names) == ["a@x", "b@x", "oncall@x"]
    assert approvers_for(["other"], {"hpc": ("a@x",)}) == []


def _config(tmp_path, smtp_port: int, hook_url: str, monkeypatch) -> str:
    conf = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text())
    conf["notify"] = {
        "channels": [{"name": "pager", "kind": "email", "conn_id": "smtp_local", "to": ["pager@x.org"],
                      "severities": ["critical"]}],
        "approvers": {"local": ["lead@x.org"], "*": ["oncall@x.org"]},
        "approval_conn_id": "smtp_local",
        "approval_slack_conn_id": "slack_stub",
    }  # fmt: skip
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(conf))
    monkeypatch.setenv("AIRFLOW_CONN_SLACK_STUB", json.dumps({"conn_type": "slackwebhook", "password": hook_url}))
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_LOCAL", json.dumps({
        "conn_type": "smtp", "host": "127.0.0.1", "port": smtp_port,
        "extra": {"from_email": "sweep@x.org", "disable_tls": True, "disable_ssl": True}}))  # fmt: skip
    return str(path)


def test_approval_notifier_tells_the_clusters_approvers_with_evidence_and_link(tmp_path, monkeypatch) -> None:
    from sweep_operators.approval_notify import ApprovalNotifier
    from sweep_operators.cancel_tasks import CancelApprovalOperator

    with slack_webhook_stub() as (hook_url, posts), smtp_server() as (port, mails):
        sweep_yaml = _config(tmp_path, port, hook_url, monkeypatch)
        req = CancelRequest("local", "42", "rl__x{{ 7*7 }}<!channel>", "cancel+salvage", "reward fell 0.9 -> 0.1")
        decisions = [CancelDecision(req, "cancel", state="RUNNING", elapsed="01:00:00", nodes="2", by_hand=False)]
        op = CancelApprovalOperator(task_id="approve", sweep_yaml=sweep_yaml,
                                    notifiers=[ApprovalNotifier(sweep_yaml=sweep_yaml)])  # fmt: skip
        op.subject, op.body = approval_prompt(decisions, dry_run=False, timeout_minutes=60)
        ti = SimpleNamespace(dag_id="sweep_cancel", run_id="r1", task_id="approve", map_index=-1,
                             xcom_pull=lambda task_ids, **_: {"decisions": [d.to_dict() for d in decisions]})  # fmt: skip
        for notifier in op.notifiers:  # as HITLOperator.execute calls them
            notifier({"task": op, "ti": ti, "task_instance": ti})
        assert [m["X-Envelope-To"] for m in mails] == ["lead@x.org"]
        body = mails[0].get_body(("html",)).get_content()
        assert "reward fell 0.9 -&gt; 0.1" in body and "{{ 7*7 }}" in body and "&lt;!channel&gt;" in body
        link = "/dags/sweep_cancel/runs/r1/tasks/approve/required_actions"
        assert link in body and "Approval needed (local)" in mails[0]["Subject"]
        assert len(posts) == 1 and link in json.dumps(posts[0]) and "<!channel>" not in json.dumps(posts[0])


def test_overrun_alert_goes_to_the_channels_that_hear_critical(tmp_path, monkeypatch) -> None:
    from sweep_operators.approval_notify import overrun_alert, overrun_deadline

    with slack_webhook_stub() as (hook_url, _), smtp_server() as (port, mails):
        sweep_yaml = _config(tmp_path, port, hook_url, monkeypatch)
        overrun_alert(sweep_yaml=sweep_yaml, intervals=1,
                      context={"dag_run": {"dag_id": "monitor_cron_sweep", "run_id": "scheduled__x"}})  # fmt: skip
        assert [m["X-Envelope-To"] for m in mails] == ["pager@x.org"]
        assert "scheduled__x has not finished 1 interval" in mails[0]["Subject"]
    alert = overrun_deadline(sweep_yaml, "0 */3 * * *", 2)
    assert alert.interval.total_seconds() == 6 * 3600


def test_a_critical_alert_no_channel_hears_is_a_warning_line_of_the_task_log(monkeypatch) -> None:
    """The overrun and failing-sweep alerts: with no channel hearing critical, the alert is still
    written where a person sees it (the task log), whole, with how to add a channel."""
    from sweep_core.alerts.approvals import failing_message
    from sweep_core.config.notify_schema import Channel
    from sweep_operators import approval_notify

    warned: list[str] = []
    monkeypatch.setattr(approval_notify.log, "warning", lambda fmt, *args: warned.append(fmt % args))
    msg = failing_message("monitor_cron_sweep", 3, "", "http://airflow/x")
    pager = Channel(name="pager", kind="slack", conn_id="c", severities=("critical",))
    team = Channel(name="team", kind="slack", conn_id="c", severities=("warn",))
    assert approval_notify._hear_critical([team, pager], msg) == [pager] and warned == []
    assert approval_notify._hear_critical([team], msg) == []
    assert len(warned) == 1 and warned[0].startswith("ALERT (no notify channel configured")
    assert "3 sweeps in a row" in warned[0] and "\n" not in warned[0]
