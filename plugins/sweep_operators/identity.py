"""Who a DAG run's person is, as Airflow tells a task: the user who triggered the run (the
requester every approval leaves out, sweep_core.alerts.approvals.may_answer) and whether the
configured auth manager's user ids are the user names (HITL ``assigned_users`` is checked by id).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SIMPLE = "SimpleAuthManager"  # the auth manager whose user id is the user name


def requester(context: Mapping[str, Any]) -> str:
    """The user who triggered this run: Airflow's DagRun ``triggering_user_name`` (the user NAME
    under every auth manager; a run a task triggered inherits its parent run's; "" = scheduled)."""
    return str(getattr(context.get("dag_run"), "triggering_user_name", None) or "")


def ids_are_names() -> bool:
    """Whether ``[core] auth_manager`` is the simple auth manager (user id = user name); False for
    FAB (numeric ids) and any other."""
    from airflow.configuration import conf

    return str(conf.get("core", "auth_manager", fallback="")).rsplit(".", 1)[-1] == SIMPLE
