"""Whether the two scheduled DAGs are paused, read from Airflow's metadata DB (its ``dag`` table,
read-only) without importing Airflow: what ``check-config`` says beside their schedules. Both DAGs
are created paused (Airflow's default); the watch is off until someone unpauses it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import sqlalchemy as sa

from sweep_core.config.locate import airflow_home, airflow_setting

SWEEP_DAG = "monitor_cron_sweep"
WATCH_DAG = "monitor_cron_watch"


def metadata_url(env: Mapping[str, str]) -> str:
    """Airflow's ``[database] sql_alchemy_conn`` as Airflow reads it (default: SQLite in AIRFLOW_HOME)."""
    return airflow_setting(env, "database", "sql_alchemy_conn") or f"sqlite:///{airflow_home(env) / 'airflow.db'}"


def paused_states(dag_ids: list[str], env: Mapping[str, str]) -> tuple[dict[str, bool], str]:
    """(dag_id -> is_paused for the DAGs the metadata DB knows, why nothing could be read or "")."""
    try:
        url = sa.make_url(metadata_url(env))
    except sa.exc.ArgumentError as exc:
        return {}, f"the metadata DB URL is not readable ({exc})"
    if url.get_backend_name() == "sqlite":
        if not url.database or not Path(url.database).is_file():
            return {}, f"no metadata DB at {url.database}"
        url = url.set(database=f"file:{url.database}?mode=ro", query={"uri": "true"})
    try:
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT dag_id, is_paused FROM dag WHERE dag_id IN :ids").bindparams(
                    sa.bindparam("ids", expanding=True)
                ),
                {"ids": dag_ids},
            ).all()
        engine.dispose()
    except Exception as exc:  # noqa: BLE001 (no driver, no route, no table: said, never a crash)
        return {}, f"the metadata DB could not be read ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})"
    return {str(d): bool(p) for d, p in rows}, ""


def schedule_lines(schedule: str | None, watch_schedule: str | None, env: Mapping[str, str]) -> list[str]:
    """One line per scheduled DAG: its cron and whether it is paused, and what to do when it is."""
    states, why = paused_states([SWEEP_DAG, WATCH_DAG], env)
    out = []
    for dag_id, cron, key in ((SWEEP_DAG, schedule, "schedule"), (WATCH_DAG, watch_schedule, "watch.schedule")):
        when = f"every {cron!r} (sweep.yaml {key})" if cron else f"not scheduled (sweep.yaml {key}: null)"
        if why:
            state = f"paused state unknown: {why}"
        elif dag_id not in states:
            state = "not parsed yet (created paused: unpause it once it appears)"
        else:
            state = f"PAUSED: `airflow dags unpause {dag_id}`" if states[dag_id] else "unpaused"
        out.append(f"{dag_id}: {when}, {state}")
    return out
