"""``sweep-state``: migrations from an empty database, the one-time import of the file-based memory
(nothing lost, the files renamed not deleted, a second import a no-op that says so), and the Airflow
Connection a deployment names in sweep.yaml ``state.conn_id`` turned into the store's URL."""

from __future__ import annotations

import json

import sqlalchemy as sa

from sweep_core.handoffs.cleanup.backlog import load_backlog
from sweep_core.ledger.entries import Ledger, LedgerEntry
from sweep_core.ledger.given import mark_given
from sweep_core.ledger.store import fold_run, ledger_for_run, load_ledger
from sweep_core.state import db, migrate
from sweep_core.state.cli import main
from sweep_core.state.documents import read_document


def test_upgrade_from_an_empty_database_creates_the_schema_in_its_own_version_table(tmp_path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    assert migrate.current(db.new_engine(url)) is None
    assert main(["upgrade", "--url", url]) == 0
    assert (
        f"at {migrate.head()} (upgraded from empty through 0001, 0002, 0003, 0004, 0005, {migrate.head()})"
        in capsys.readouterr().out
    )
    tables = set(sa.inspect(db.new_engine(url)).get_table_names())
    # nothing of Airflow's, no alembic_version
    ledger = {"sweep_state_ledger", "sweep_state_jobs", "sweep_state_acts", "sweep_state_claims"}
    chain = {"sweep_state_chain_cells"}
    assert tables == {"sweep_state_version", "sweep_state_documents"} | ledger | chain
    assert main(["upgrade", "--url", url]) == 0
    assert "(already there)" in capsys.readouterr().out


def _old_store(tmp_path) -> tuple[dict, dict, list]:
    """What the file-based store left: a ledger with a hand-off given, the ledger before run r2, a backlog."""
    entry = LedgerEntry("leo", "7", "sft__seven", state="COMPLETED")
    ledger = Ledger(run_id="r2", window_end="2026-12-04T03:00:00+00:00", jobs={"leo|7": entry})
    mark_given(ledger, "cleanup", [{"cluster": "leo", "job_id": "7"}], "r2")
    before = {"run_id": "r2", "window_end": "2026-12-04T03:00:00+00:00", "ledger": Ledger().to_dict()}
    backlog = [{"cluster": "leo", "job_id": "7", "name": "sft__seven"}]
    folder = tmp_path / ".sweep-state"
    folder.mkdir()
    for name, obj in (("ledger.json", ledger.to_dict()), ("ledger.before.json", before),
                      ("cleanup_backlog.json", backlog)):  # fmt: skip
        (folder / name).write_text(json.dumps(obj, sort_keys=True))
    return ledger.to_dict(), before, backlog


def test_import_json_moves_the_files_in_once_and_a_second_import_says_there_is_nothing(tmp_path, capsys) -> None:
    ledger, before, backlog = _old_store(tmp_path)
    assert main(["import-json", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("imported ") == 3 and "ledger.json -> ledger.json.imported-" in out
    assert load_ledger(tmp_path).to_dict() == ledger and load_ledger(tmp_path).hold == ""
    assert read_document(tmp_path, "ledger.before.json") is None  # rows, not a document
    assert load_backlog(tmp_path) == backlog
    # a re-run of r2 folds against the ledger before it, keeping the hand-off given since
    assert ledger_for_run(tmp_path, "r2", "2026-12-04T03:00:00+00:00").jobs == {}
    fold_run(tmp_path, "r2", "2026-12-04T03:00:00+00:00", lambda led: (led, None))
    assert load_ledger(tmp_path).jobs["leo|7"].handoffs == {"cleanup": "r2"}
    left = sorted(p.name.split(".imported-")[0] for p in (tmp_path / ".sweep-state").glob("*.imported-*"))
    assert left == ["cleanup_backlog.json", "ledger.before.json", "ledger.json"]  # renamed, not deleted
    assert not (tmp_path / ".sweep-state" / "ledger.json").exists()
    assert main(["import-json", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "nothing to import" in out and "imported before: cleanup_backlog.json.imported-" in out
    assert load_backlog(tmp_path) == backlog


def test_import_never_overwrites_what_the_database_holds(tmp_path, capsys) -> None:
    _old_store(tmp_path)
    fold_run(tmp_path, "r3", "2026-12-04T06:00:00+00:00", lambda led: (led, None))  # a sweep ran before the import
    held = load_ledger(tmp_path).to_dict()
    assert main(["import-json", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "NOT imported" in out and "already holds a ledger" in out and "imported " in out  # the backlog went in
    assert load_ledger(tmp_path).to_dict() == held
    assert (tmp_path / ".sweep-state" / "ledger.json").exists()  # left for a person to compare


def test_a_postgres_connection_becomes_the_store_url(monkeypatch) -> None:
    from sweep_core.config.sweep import SweepConfig
    from sweep_operators import state_db

    conn = {"conn_type": "postgres", "login": "sweep", "password": "p@ss word", "host": "db.internal",
            "port": 5433, "schema": "sweep_state"}  # fmt: skip
    monkeypatch.setenv("AIRFLOW_CONN_SWEEP_STATE_TEST", json.dumps(conn))
    state_db.connection_url.cache_clear()
    url = sa.make_url(state_db.connection_url("sweep_state_test"))
    assert (url.drivername, url.username, url.password, url.host, url.port, url.database) == (
        "postgresql+psycopg2", "sweep", "p@ss word", "db.internal", 5433, "sweep_state")  # fmt: skip
    config = SweepConfig.model_validate({"buckets": [{"name": "Catch-all"}], "state": {"conn_id": "sweep_state_test"}})
    try:
        state_db.use_state_db(config)
        assert db.state_url("/anywhere") == url.render_as_string(hide_password=False)
    finally:
        db.use_url(None)
    assert db.state_url("/anywhere") == db.default_url("/anywhere")
