"""``check-config [INCLUDE]``: validate sweep.yaml and every ops.md, and say per cluster its
scheduler, whether it is swept, and which hand-offs its config turns on and why.

INCLUDE (default: where the DAGs find it, sweep_core.config.locate: ``$SWEEP_OPS_DIR`` /
``$SWEEP_CONFIG``, else ``include/`` beside Airflow's DAGs folder) holds ``ops/<cluster>/ops.md`` and
``sweep.yaml``. It also says both scheduled DAGs (the report sweep and the watch), their schedules
and whether each is paused (Airflow's metadata DB), and where the memory is kept: a local SQLite
file under an executor whose tasks land on several machines (Celery, Kubernetes) is an error
naming ``state.conn_id``. Exit 0 when every file is valid, 1 with each error (the file and the key
path) on stderr otherwise. Each hand-off is ``ON <what it acts on>`` or
``OFF: <handoff> needs <field> in <file>`` (or why it never runs there). ``--connect`` also tries
each swept cluster once and the hub once (sweep_core.admin.connect_check); any failure exits 1.
Also ``python -m sweep_core.admin.check_config``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from sweep_core.admin.connect_check import Reach, hub_whoami, try_cluster
from sweep_core.admin.dag_states import schedule_lines
from sweep_core.admin.switches import cluster_switches
from sweep_core.config.locate import airflow_setting, locate
from sweep_core.config.ops import ClusterConfig, OpsConfigError, cluster_names, load_cluster
from sweep_core.config.sweep import SweepConfig, SweepConfigError, load_sweep_config
from sweep_core.handoffs.harvest.plan import TrackerSettings, tracker_settings
from sweep_core.iris.state import NO_PODS, pod_source
from sweep_core.state.db import CONN_ENV, DB_FILE, fleet_problem, redacted
from sweep_core.state.db import ENV as STATE_URL_ENV
from sweep_core.state.state_dir import STATE_DIR


def config_paths(include: str | None, env: Mapping[str, str]) -> tuple[Path, Path, str]:
    """(ops dir, sweep.yaml, how they were found): INCLUDE's when given, else where the DAGs find them."""
    if include is not None:
        return Path(include) / "ops", Path(include) / "sweep.yaml", f"the dir given, {include}"
    where = locate(env)
    return where.ops_dir, where.sweep_yaml, where.how


def state_line(config: SweepConfig, env: Mapping[str, str]) -> tuple[str, str]:
    """(where the memory is kept, the error when a fleet would keep one memory per host, or "")."""
    conn_id = env.get(CONN_ENV) or config.state.conn_id
    executor = airflow_setting(env, "core", "executor") or "LocalExecutor"
    if conn_id:
        # an sqlite Connection's file is not known without Airflow: said, checked when the task opens it
        return f"state: Connection {conn_id!r} ({'SWEEP_STATE_CONN_ID' if env.get(CONN_ENV) else 'state.conn_id'})", ""
    url = env.get(STATE_URL_ENV) or f"sqlite:///<run_log_dir>/{STATE_DIR}/{DB_FILE}"
    line = f"state: {redacted(url) if env.get(STATE_URL_ENV) else url} (no state.conn_id), executor {executor}"
    return line, fleet_problem(url, executor, env) or ""


def _sweep(path: Path, env: Mapping[str, str]) -> tuple[SweepConfig | None, TrackerSettings | None, str]:
    """The validated sweep.yaml and its tracker settings, or the error naming the file."""
    try:
        config = load_sweep_config(path)
        return config, tracker_settings(config.trackers, dict(env)), ""
    except SweepConfigError as exc:
        return None, None, str(exc)
    except ValueError as exc:  # trackers.globs outside the repo (tracker_settings)
        return None, None, f"{path}: {exc}"
    except OSError as exc:
        return None, None, f"{path}: cannot be read: {exc}"


def _status(cfg: ClusterConfig, on: dt.date) -> str:
    swept, why = cfg.activity(on)
    if cfg.status == "skipped" and swept:
        return f"skipped until {cfg.skip_until}: past, swept again"
    return "active" if swept else why.removeprefix(f"{cfg.name}: ")


def report(ops_dir: Path, sweep_yaml: Path, on: dt.date, env: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(lines to print, errors): every cluster's scheduler, status and hand-off switches."""
    config, trackers, problem = _sweep(sweep_yaml, env)
    errors = [problem] if problem else []
    lines = [f"sweep.yaml: {sweep_yaml}: {'invalid' if problem else 'valid'}"]
    if config is not None:
        lines += schedule_lines(config.schedule, config.watch.schedule, env)
        state, fleet = state_line(config, env)
        lines.append(state)
        errors += [fleet] if fleet else []
    names = cluster_names(ops_dir)
    if not names:
        errors.append(f"{ops_dir}: no <cluster>/ops.md")
    for name in names:
        try:
            cfg = load_cluster(ops_dir, name)
        except OpsConfigError as exc:
            errors.append(str(exc))
            lines.append(f"\n{name}: invalid ({exc.path})")
            continue
        lines.append(f"\n{name}: {cfg.scheduler}, {_status(cfg, on)}")
        if cfg.scheduler == "iris":
            lines.append(f"  client: {cfg.iris_python or 'no iris_python'}, CLI {cfg.iris_binary or 'none'}")
            lines.append(f"  pods: counted through {pod_source(cfg)}" if pod_source(cfg) else f"  pods: {NO_PODS}")
        if config is None:
            lines.append("  hand-offs: unknown (sweep.yaml is invalid)")
            continue
        ops_file = str(ops_dir / name / "ops.md")
        switches = cluster_switches(cfg, config, trackers, ops_file, str(sweep_yaml))
        lines += [f"  {s.handoff:<15} {s.line()}" for s in switches]
    if config is not None:
        lines += _dangling(config, set(names))
    return lines, errors


def connect(ops_dir: Path, on: dt.date, env: Mapping[str, str], timeout_s: int) -> list[Reach]:
    """One try of every cluster swept on ``on`` (skipped/dropped ones said, not tried), then the hub."""
    out = []
    for name in cluster_names(ops_dir):
        try:
            cfg = load_cluster(ops_dir, name)
        except OpsConfigError:
            continue  # already an error of the report
        swept, _ = cfg.activity(on)
        out.append(try_cluster(cfg, env, timeout_s) if swept else Reach(name, True, f"not tried: {_status(cfg, on)}"))
    out.append(hub_whoami(env, timeout_s))
    return out


def _dangling(config: SweepConfig, clusters: set[str]) -> list[str]:
    """sweep.yaml naming a cluster that has no ops.md (said, not an error: its hand-off notes it)."""
    named = [(f"hf_chain series {s.name!r}", s.cluster) for s in config.hf_chain.series]
    named += [(f"cancel.standing {p.rule!r}", c) for p in config.cancel.standing for c in p.clusters]
    return [f"\nwarning: {what} names cluster {c!r}, which has no ops.md" for what, c in named if c not in clusters]


def main(argv: list[str] | None = None) -> int:
    """The console entry point."""
    parser = argparse.ArgumentParser(prog="check-config", description=__doc__.split("\n\n")[0])
    parser.add_argument("include", nargs="?", help="dir holding ops/ and sweep.yaml (default: see above)")
    parser.add_argument("--on", type=dt.date.fromisoformat, default=None, help="date of the status (YYYY-MM-DD)")
    parser.add_argument("--connect", action="store_true", help="try each swept cluster once and the hub once")
    parser.add_argument("--timeout", type=int, default=10, help="seconds each --connect try may take to connect")
    args = parser.parse_args(argv)
    ops_dir, sweep_yaml, how = config_paths(args.include, os.environ)
    on = args.on or dt.datetime.now(dt.UTC).date()
    lines, errors = report(ops_dir, sweep_yaml, on, os.environ)
    lines.insert(1, f"config: {how}")
    print("\n".join(lines))
    if args.connect:
        reaches = connect(ops_dir, on, os.environ, args.timeout)
        print("\n" + "\n".join(r.line() for r in reaches))
        errors += [r.line() for r in reaches if not r.ok]
    if errors:
        print("\n" + "\n".join(f"error: {e}" for e in errors), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
