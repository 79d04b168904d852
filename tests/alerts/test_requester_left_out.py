"""issue 39: every act that needs approval (cancel, relaunch, snapshots, hygiene) leaves out the user
who triggered its run, through one function (sweep_core.alerts.approvals.may_answer / answer_counts),
and people are compared by their user NAME under every auth manager: FAB's user id is a number.

Each hand-off's approval operator is resumed as Airflow resumes it (``execute_complete`` of a fresh
instance) with the event Airflow builds from the answer (``HITLDetail.as_resume_event_payload``, the
model the REST route writes ``responded_by`` into), the run's ``triggering_user_name`` as Airflow
gives it to a task. The same users under both auth managers: ``ana`` (FAB id 7) and ``bob`` (FAB id 8).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sweep_core.alerts.approvals import hitl_assignees, may_answer
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest, job_key

ROOT = Path(__file__).resolve().parents[2]
IDS = {"simple": {"ana": "ana", "bob": "bob"}, "fab": {"ana": "7", "bob": "8"}}  # get_id() of each
JOB = job_key("tacc", "4242")


class _Ti:
    def __init__(self, validated: dict[str, Any]) -> None:
        self.validated, self.pushed = validated, {}

    def xcom_pull(self, task_ids: str, key: str = "return_value", **_: Any) -> Any:
        assert task_ids == "validate" and key == "return_value"
        return self.validated

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def _event(manager: str, user: str, chosen: list[str]) -> dict[str, Any]:
    """The resume event of ``user``'s answer, built by Airflow's own model from what the REST route stores."""
    from airflow.models.hitl import HITLDetail

    detail = HITLDetail(chosen_options=chosen, params_input={}, responded_at=dt.datetime.now(dt.UTC),
                        responded_by={"id": IDS[manager][user], "name": user})  # fmt: skip
    return detail.as_resume_event_payload()


@pytest.fixture
def sweep_yaml(tmp_path: Path) -> Path:
    text = (ROOT / "include" / "sweep.yaml").read_text()
    assert "\nnotify:" not in text
    path = tmp_path / "sweep.yaml"
    path.write_text(text + "\nnotify:\n  approver_users: {'*': [ana, bob]}\n")
    return path


def _context(validated: dict[str, Any], requester: str) -> dict[str, Any]:
    run = SimpleNamespace(triggering_user_name=requester)
    return {"ti": _Ti(validated), "params": {"dry_run": True}, "dag_run": run}


def _cancel(sweep_yaml: Path, manager: str, user: str, chosen: str, *, by_hand: bool) -> dict[str, Any]:
    from sweep_operators.cancel_tasks import CancelApprovalOperator

    d = CancelDecision(CancelRequest("tacc", "4242", "rl__x", "kill-approval"), "cancel", state="RUNNING",
                       by_hand=by_hand)  # fmt: skip
    ctx = _context({"decisions": [d.to_dict()], "asked": [JOB], "requested_by": "ana"}, "ana")
    op = CancelApprovalOperator(task_id="approve", sweep_yaml=str(sweep_yaml), job_key=JOB)
    op.execute_complete(ctx, _event(manager, user, [chosen]))
    return ctx["ti"].pushed["answer"]


def _snapshots(sweep_yaml: Path, manager: str, user: str) -> dict[str, Any]:
    from sweep_operators.snapshot_tasks import SnapshotApprovalOperator

    ctx = _context({"cluster": "tacc", "ask": ["old:1"], "fresh": {"reason": "at the cap"}}, "ana")
    op = SnapshotApprovalOperator(task_id="approve", sweep_yaml=str(sweep_yaml))
    op.execute_complete(ctx, _event(manager, user, ["old:1"]))
    return ctx["ti"].pushed["answer"]


def _hygiene(sweep_yaml: Path, manager: str, user: str) -> dict[str, Any]:
    from sweep_operators.hygiene_tasks import HygieneApprovalOperator
    from sweep_operators.task_ids import Hygiene

    ctx = _context({"checked": [{"cluster": "tacc", "offer": True}], "clusters": ["tacc"]}, "ana")
    op = HygieneApprovalOperator(task_id="approve", sweep_yaml=str(sweep_yaml))
    op.execute_complete(ctx, _event(manager, user, [Hygiene.option("tacc")]))
    return ctx["ti"].pushed["answer"]


@pytest.mark.parametrize("manager", ["simple", "fab"])
@pytest.mark.parametrize("handoff", ["cancel", "relaunch", "cancel of the sweep's request", "snapshots", "hygiene"])
def test_the_requester_answering_her_own_request_is_not_counted_an_approver_is(sweep_yaml, manager, handoff) -> None:
    def ask(user: str) -> tuple[bool, str]:
        if handoff == "snapshots":
            got = _snapshots(sweep_yaml, manager, user)
            return got["chosen"] == ["old:1"], got["refused"]
        if handoff == "hygiene":
            got = _hygiene(sweep_yaml, manager, user)
            return got["chosen"] == ["tacc"], got["refused"]
        option = "Cancel and relaunch" if handoff == "relaunch" else "Cancel"
        got = _cancel(sweep_yaml, manager, user, option, by_hand=handoff != "cancel of the sweep's request")
        return got["refused"] == "" and got["chosen_options"] == [option], got["refused"]

    counted, why = ask("ana")  # she triggered the run
    assert not counted and why == "answered by ana, who requested it: not counted"
    counted, why = ask("bob")
    assert counted and why == ""


def test_the_prompt_is_assigned_by_id_only_where_ids_are_names() -> None:
    users = may_answer("tacc", {"*": ["ana", "bob"]}, requester="ana")
    assert users == ["bob"]
    assert hitl_assignees(users, ids_are_names=True) == [{"id": "bob", "name": "bob"}]
    assert hitl_assignees(users, ids_are_names=False) is None  # FAB: checked by name on the answer
    assert hitl_assignees(None, ids_are_names=True) is None


def test_the_auth_manager_decides_whether_ids_are_names(monkeypatch) -> None:
    from sweep_operators.identity import ids_are_names

    simple = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
    fab = "airflow.providers.fab.auth_manager.fab_auth_manager.FabAuthManager"
    monkeypatch.setenv("AIRFLOW__CORE__AUTH_MANAGER", simple)
    assert ids_are_names()
    monkeypatch.setenv("AIRFLOW__CORE__AUTH_MANAGER", fab)
    assert not ids_are_names()
