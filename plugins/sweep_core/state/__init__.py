"""The sweep's memory in a SQL database (SQLAlchemy): named JSON documents keyed by (space, name),
space = the run-log directory, read and rewritten under a lock that holds across hosts.

- db: the URL (SWEEP_STATE_URL or the one the Airflow side set, else an SQLite file
  ``<run_log_dir>/.sweep-state/state.db``), one engine per URL per process, the schema check;
- documents: the table and ``locked``, the read-modify-write transaction of one document;
- migrate: the Alembic migrations (version table ``sweep_state_version``);
- importer, cli: ``sweep-state upgrade`` and ``sweep-state import-json``.
"""
