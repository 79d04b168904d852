"""``sweep-state``: ``upgrade`` brings a state database to the newest schema; ``import-json
<run_log_dir>`` moves the file-based memory of that run-log directory into it once. The database:
``--url``, else ``--conn-id`` (an Airflow Connection, resolved by the Airflow side's entry point,
sweep_operators.state_cli), else SWEEP_STATE_URL, else the SQLite default of ``--run-log-dir``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from sweep_core.state import db, migrate
from sweep_core.state.importer import import_json

Resolve = Callable[[str], str]  # Airflow Connection id -> SQLAlchemy URL


def _url(args: argparse.Namespace, resolve: Resolve | None, run_log_dir: str | None) -> str:
    if args.url:
        return str(args.url)
    if args.conn_id:
        if resolve is None:
            raise SystemExit("--conn-id needs Airflow: run the sweep-state console script")
        return resolve(args.conn_id)
    if run_log_dir:
        return db.state_url(run_log_dir)  # the one that directory's store uses (SWEEP_STATE_URL or its SQLite file)
    if os.environ.get(db.ENV):
        return os.environ[db.ENV]
    raise SystemExit("which database? give --url, --conn-id or --run-log-dir (or set SWEEP_STATE_URL)")


def main(argv: list[str] | None = None, resolve: Resolve | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sweep-state", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("upgrade", help="bring the state database to the newest schema")
    imp = sub.add_parser("import-json", help="move <run_log_dir>/.sweep-state/*.json into the database, once")
    imp.add_argument("run_log_dir")
    for p in (up, imp):
        where = p.add_mutually_exclusive_group()
        where.add_argument("--url", help="SQLAlchemy URL (a password here is seen by ps: prefer --conn-id)")
        where.add_argument("--conn-id", help="an Airflow Connection (postgres or sqlite)")
        if p is up:
            where.add_argument("--run-log-dir", help="the SQLite default of this run-log directory")
    args = parser.parse_args(argv)
    if args.command == "upgrade":
        url = _url(args, resolve, args.run_log_dir)
        engine = db.new_engine(url)
        before = migrate.current(engine)
        applied = migrate.upgrade(engine)
        said = f"upgraded from {before or 'empty'} through {', '.join(applied)}" if applied else "already there"
        print(f"state database {db.redacted(url)}: at {migrate.head()} ({said})")
        return 0
    url = _url(args, resolve, args.run_log_dir)
    try:
        result = import_json(args.run_log_dir, url)
    except db.StateSchemaError as exc:  # not SQLite: upgraded first, by hand
        print(exc, file=sys.stderr)
        return 2
    print(f"state database {db.redacted(url)}, space {db.space_of(args.run_log_dir)}:")
    for line in result.lines(Path(args.run_log_dir) / db.STATE_DIR):
        print(f"  {line}")
    return 1 if result.refused else 0


if __name__ == "__main__":
    sys.exit(main())
