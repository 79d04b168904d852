"""Airflow's own ``airflow db clean`` on a schedule (sweep.yaml ``db_clean:``), run by the deployment,
never by a DAG: in Airflow 3 a task reaches the metadata DB only through the Execution API, so the
command runs where the scheduler's settings are (a compose service, a Kubernetes CronJob, the
bundled deployment's loop). Two passes: the watch's rows after ``watch_retention_days`` (288 runs a
day, most of the XCom bytes), then every DAG's after ``retention_days``. Airflow keeps each DAG's
latest scheduled run whatever its age.

    python -m sweep_core.admin.db_clean [--config sweep.yaml] [--print | --dry-run | --loop]

Airflow 3.3.2's ``--dag-ids`` fails on one table it cleans with ``dag_run``: ``deadline`` has no
``dag_id`` column (the clean-up logs it and goes on; its rows go with their DAG run, ON DELETE
CASCADE). So a failed table is judged here from the command's own summary line, not with
``--error-on-cleanup-failure``: any other table not cleaned fails the run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

from sweep_core.config.db_clean_schema import DbCleanSection
from sweep_core.config.locate import locate
from sweep_core.config.sweep import load_sweep_config

WATCH_DAG_ID = "monitor_cron_watch"
_NOT_CLEANED = re.compile(r"The following tables were not cleaned due to errors: \[([^\]]*)\]")
_KNOWN_FAILURE = {WATCH_DAG_ID: {"deadline"}}  # --dag-ids: deadline has no dag_id column (Airflow 3.3.2)


def _command(cfg: DbCleanSection, before: dt.datetime, dag_ids: str = "") -> list[str]:
    cmd = [
        "airflow",
        "db",
        "clean",
        "--clean-before-timestamp",
        before.astimezone(dt.UTC).isoformat(timespec="seconds"),
    ]
    cmd += ["--tables", ",".join(cfg.tables), "--yes"]
    cmd += ["--skip-archive"] if cfg.skip_archive else []
    return cmd + (["--dag-ids", dag_ids] if dag_ids else [])


def clean_commands(cfg: DbCleanSection, now: dt.datetime) -> list[tuple[str, list[str]]]:
    """(the DAG ids a pass is limited to, "" = every DAG; its argv): the watch's pass, then every DAG's."""
    passes = [(WATCH_DAG_ID, _command(cfg, now - dt.timedelta(days=cfg.watch_retention_days), WATCH_DAG_ID))]
    return passes + [("", _command(cfg, now - dt.timedelta(days=cfg.retention_days)))]


def failed_tables(output: str, dag_ids: str = "") -> list[str]:
    """The tables a pass's output says were not cleaned, but for a failure Airflow always has there."""
    named = [t.strip().strip("'\"") for m in _NOT_CLEANED.findall(output) for t in m.split(",") if t.strip()]
    return [t for t in named if t not in _KNOWN_FAILURE.get(dag_ids, set())]


Runner = Callable[[list[str]], subprocess.CompletedProcess[str]]


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def clean(cfg: DbCleanSection, now: dt.datetime, run: Runner = _run, say: Callable[[str], None] = print) -> int:
    """Run both passes; 0 when every table was cleaned, 1 when a command failed or left a table."""
    status = 0
    for dag_ids, cmd in clean_commands(cfg, now):
        done = run(cmd)
        out = (done.stdout or "") + (done.stderr or "")
        left = failed_tables(out, dag_ids)
        what = f"--dag-ids {dag_ids}" if dag_ids else "every DAG"
        if done.returncode or left:
            status = 1
            say(out[-4000:])
            say(f"db clean ({what}): FAILED (exit {done.returncode}; tables not cleaned: {', '.join(left) or 'none'})")
        else:
            deleted = sum(int(n) for n in re.findall(r"Found (\d+) rows meeting deletion criteria", out))
            say(f"db clean ({what}): {deleted} rows deleted ({' '.join(cmd)})")
    return status


def next_run(schedule: str, now: dt.datetime) -> dt.datetime:
    """The next time ``schedule`` (5-field cron, UTC) fires after ``now``."""
    from croniter import croniter  # Airflow's dependency: where this runs, Airflow is installed

    return croniter(schedule, now.astimezone(dt.UTC)).get_next(dt.datetime)


def _config_path() -> str:
    """sweep.yaml as the DAGs find it: SWEEP_CONFIG, else include/ beside Airflow's dags_folder."""
    return str(locate(os.environ).sweep_yaml)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sweep_core.admin.db_clean", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--config",
        default=_config_path(),
        help="sweep.yaml (default: SWEEP_CONFIG, else include/ beside the DAGs folder)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--print", action="store_true", help="print the commands, run nothing")
    mode.add_argument("--dry-run", action="store_true", help="run them with airflow's --dry-run")
    mode.add_argument("--loop", action="store_true", help="run at every db_clean.schedule time, forever")
    args = parser.parse_args(argv)
    cfg = load_sweep_config(args.config).db_clean
    if args.print:
        for _, cmd in clean_commands(cfg, dt.datetime.now(dt.UTC)):
            print(" ".join(cmd))
        return 0
    if args.dry_run:
        return clean(cfg, dt.datetime.now(dt.UTC), run=lambda cmd: _run([*cmd, "--dry-run"]))
    if not args.loop:
        return clean(cfg, dt.datetime.now(dt.UTC))
    if cfg.schedule is None:
        print("db_clean.schedule is null: no clean-up is scheduled", flush=True)
    while cfg.schedule is not None:  # a failed clean-up is logged, tried again next time (a service must not exit)
        when = next_run(cfg.schedule, dt.datetime.now(dt.UTC))
        print(f"db clean: next at {when.isoformat()}", flush=True)
        time.sleep(max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds()))
        cfg = load_sweep_config(args.config).db_clean  # an edited sweep.yaml counts from the next run on
        clean(cfg, dt.datetime.now(dt.UTC), say=lambda s: print(s, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
