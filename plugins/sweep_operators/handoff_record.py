"""Where the dated run logs live (a local folder, or an Airflow ObjectStoragePath: ``s3://…``,
``gs://…``), and where hand-off DAGs record what they did: a section of the sweep's run log,
replaced on re-run."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.report import upsert_section
from sweep_core.fanin.run_logs import RunLogStore, is_url
from sweep_core.safe.text import md_code, md_fence
from sweep_operators.state_db import use_state_db


def run_log_dir(config: Any) -> str:
    """SWEEP_RUN_LOG_DIR, else sweep.yaml run_log_dir, else $AIRFLOW_HOME/agent_logs. Every task finds
    its memory through here: the state database of sweep.yaml ``state:`` is set for the process too."""
    use_state_db(config)
    raw = (
        os.environ.get("SWEEP_RUN_LOG_DIR")
        or config.run_log_dir
        or os.path.join(os.environ.get("AIRFLOW_HOME", "."), "agent_logs")
    )
    return os.path.expandvars(os.path.expanduser(raw))


def run_log_store(config: Any) -> RunLogStore:
    """The run-log store of ``run_log_dir``: a plain path is a local folder; a URL an
    ObjectStoragePath opened with sweep.yaml ``run_log_conn_id`` (credentials stay in the Connection)."""
    where = run_log_dir(config)
    if not is_url(where):
        return RunLogStore(where)
    from airflow.sdk import ObjectStoragePath

    conn_id = config.run_log_conn_id
    path = ObjectStoragePath(where, conn_id=conn_id) if conn_id else ObjectStoragePath(where)
    return RunLogStore(path.path, path.fs, space=where)


def append_record(context: dict[str, Any], sweep_yaml: str, dag_id: str, text: str, section: str = "") -> str:
    """Write this run's section into the sweep's run log (conf ``run_log``, when it is one of the
    run-log store's) or into ``YYYY-MM-DD_<dag_id>.md`` of the store; a re-run replaces its section.
    ``section``: a second section of the same run (e.g. the evidence saved before a relaunch).
    Returns the run log's path or URL."""
    store = run_log_store(load_sweep_config(sweep_yaml))
    wanted = (context.get("params") or {}).get("run_log") or ""
    name = store.name_of(wanted) or f"{dt.datetime.now(dt.UTC):%Y-%m-%d}_{dag_id}.md"
    run_id = context.get("run_id") or getattr(context.get("dag_run"), "run_id", "manual")
    what = f"{section} saved" if section else "actions taken"
    title = f"## Hand-off {dag_id} ({md_code(run_id)}): {what}"
    key = f"{dag_id}:{run_id}" + (f":{section}" if section else "")
    # cluster text inside: a fence no line of it can close, control characters stripped
    section_text = f"{title}\n\n{md_fence(text)}\n"
    return store.update(name, lambda old: upsert_section(old, key, section_text))  # locked: hand-offs at once
