"""Two worker processes giving the same hand-offs and folding runs into one ledger at the same
moment: every claim is given exactly once and no fold is lost, on the default SQLite file and on
PostgreSQL (a throwaway server this test starts: slow)."""

from __future__ import annotations

import pytest
import throwaway_pg
from state_race import check, race

postgres_url = throwaway_pg.postgres_url  # the fixture


def test_two_processes_claiming_at_once_on_one_sqlite_file_give_each_claim_once(tmp_path) -> None:
    got = race(str(tmp_path))
    check(str(tmp_path), got)


@pytest.mark.slow
def test_two_processes_claiming_at_once_on_postgresql_give_each_claim_once(tmp_path, postgres_url, monkeypatch) -> None:
    from sweep_core.state import db, migrate

    with pytest.raises(db.StateSchemaError, match="sweep-state upgrade"):  # never used before its upgrade
        db.engine_for(postgres_url)
    assert migrate.upgrade(db.new_engine(postgres_url))[-1] == migrate.head()
    monkeypatch.setenv("SWEEP_STATE_URL", postgres_url)
    got = race(str(tmp_path), postgres_url)
    check(str(tmp_path), got)
