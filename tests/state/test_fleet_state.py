"""A fleet keeps ONE memory (issue 38): under an executor whose tasks can land on several machines
(Celery, Kubernetes), a local SQLite state store is refused when a task opens it, naming
state.conn_id; a PostgreSQL URL, a local executor, or SWEEP_STATE_ONE_HOST=1 (every worker on one
machine: scripts/deploy_local.sh) is fine."""

from __future__ import annotations

import pytest

from sweep_core.state import db


@pytest.fixture(autouse=True)
def _reset():
    yield
    db.use_url(None)


@pytest.mark.parametrize(
    ("executor", "fleet"),
    [
        ("CeleryExecutor", True),
        ("KubernetesExecutor", True),
        ("LocalExecutor,KubernetesExecutor", True),
        ("airflow.providers.celery.executors.celery_executor.CeleryExecutor", True),
        ("LocalExecutor", False),
        ("airflow.executors.local_executor.LocalExecutor", False),
        (None, False),
    ],
)
def test_which_executors_span_hosts(executor, fleet) -> None:
    assert db.spans_hosts(executor) is fleet


def test_sqlite_is_refused_under_celery_naming_state_conn_id(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(db.ENV, raising=False)
    monkeypatch.delenv(db.ONE_HOST_ENV, raising=False)
    db.use_url(None, "CeleryExecutor")
    with pytest.raises(
        db.NoStateDatabase,
        match=r"SQLite file .* CeleryExecutor: each worker host would keep its own memory.*state\.conn_id",
    ):
        db.state_url(tmp_path)
    db.use_url(f"sqlite:///{tmp_path / 'shared.db'}", "KubernetesExecutor")  # an sqlite Connection: the same
    with pytest.raises(db.NoStateDatabase, match="state.conn_id"):
        db.state_url(tmp_path)
    pg = "postgresql+psycopg2://sweep:pw@db.internal/sweep_state"
    db.use_url(pg, "CeleryExecutor")
    assert db.state_url(tmp_path) == pg
    monkeypatch.setenv(db.ONE_HOST_ENV, "1")  # every worker on this one machine
    db.use_url(None, "CeleryExecutor")
    assert db.state_url(tmp_path).startswith("sqlite:///")
    monkeypatch.delenv(db.ONE_HOST_ENV)
    db.use_url(None, "LocalExecutor")
    assert db.state_url(tmp_path).startswith("sqlite:///")
