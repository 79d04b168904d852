"""sweep_snapshots' approval answer (the HITL operator's resume, as Airflow calls it on a fresh
instance): only names validate asked about may be chosen; a timeout, "Delete none" or an answer
from someone not allowed deletes nothing; the answer the delete task reads is kept as XCom."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ASK = ["harbor-tb2-py311:2026.04.11", "broken-build"]


class _Ti:
    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_pull(self, task_ids: str, key: str = "return_value", **_: Any) -> Any:
        assert task_ids == "validate"
        return {"cluster": "tacc", "ask": ASK, "fresh": {"reason": "7 snapshots, at the HARD cap of 7"}}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def _answer(sweep_yaml: Path, chosen: list[str], user: str = "ana", timed_out: bool = False) -> dict[str, Any]:
    from sweep_operators.snapshot_tasks import SnapshotApprovalOperator

    op = SnapshotApprovalOperator(task_id="approve", sweep_yaml=str(sweep_yaml))  # fresh: options [Delete none]
    ti = _Ti()
    event = {"chosen_options": chosen, "params_input": {}, "responded_at": dt.datetime.now(dt.UTC),
             "responded_by_user": {"id": user, "name": user}, "timedout": timed_out}  # fmt: skip
    op.execute_complete({"ti": ti, "params": {"dry_run": True}}, event)
    return ti.pushed["answer"]


@pytest.fixture
def sweep_yaml(tmp_path: Path) -> Path:
    text = (ROOT / "include" / "sweep.yaml").read_text()
    path = tmp_path / "sweep.yaml"
    assert "\nnotify:" not in text  # the shipped config names no approvers: this test names one
    path.write_text(text + "\nnotify:\n  approver_users: {tacc: [ana]}\n")
    return path


def test_the_names_an_approver_chose_are_kept_and_delete_none_is_never_a_name(sweep_yaml) -> None:
    from sweep_operators.task_ids import Snapshots

    got = _answer(sweep_yaml, [ASK[1], Snapshots.NONE])
    assert got["chosen"] == [ASK[1]] and got["refused"] == "" and got["responded_by"] == "ana"


def test_a_timeout_or_someone_not_allowed_deletes_nothing(sweep_yaml) -> None:
    assert _answer(sweep_yaml, ASK, timed_out=True)["chosen"] == []
    got = _answer(sweep_yaml, ASK, user="bob")
    assert got["chosen"] == [] and "not an approver of this job (ana)" in got["refused"]


def test_a_name_validate_did_not_ask_about_is_refused(sweep_yaml) -> None:
    with pytest.raises(ValueError, match="not in"):
        _answer(sweep_yaml, ["pinned-eval-env:v1"])
