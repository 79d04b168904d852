"""Task callables of the sweep_tracker_harvest DAG: harvest (scan trackers, one read-only SSH
session per cluster, decide, write) and record. Decisions live in sweep_core.handoffs.harvest.plan."""

from __future__ import annotations

import logging
import re
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.config.ops import OpsConfigError, load_cluster
from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.render import box_table
from sweep_core.fanin.report import write_run_log
from sweep_core.handoffs.harvest.plan import (
    JobReport,
    PendingRow,
    RowOutcome,
    TrackerError,
    apply_outcome,
    decide_row,
    scan,
    tracker_files,
    tracker_settings,
)
from sweep_core.handoffs.harvest.remote import build_harvest_script, read_harvest
from sweep_core.slurm.gather import new_marker
from sweep_operators.cluster_ssh import run_checked
from sweep_operators.handoff_record import append_record

log = logging.getLogger(__name__)
_RESULTS_NAME = re.compile(r"^results_[A-Za-z0-9._:+-]+\.json$")


def _poll(ops_dir: str, cluster: str, rows: list[PendingRow], limits: Any, max_bytes: int) -> dict[str, JobReport]:
    ids = sorted({p.row.job_id or "" for p in rows})
    try:
        cfg = load_cluster(ops_dir, cluster)
    except (OpsConfigError, FileNotFoundError) as exc:
        return read_harvest(None, ids, f"ops.md: {exc}")
    if cfg.scheduler != "slurm" or cfg.status != "active":
        return read_harvest(None, ids, f"{cluster} is {cfg.scheduler}/{cfg.status}")
    marker = new_marker()
    script = build_harvest_script(ids, cfg.eval_results_dir, cfg.log_pattern, marker, max_bytes, limits.tail_bytes)
    out, problem = run_checked(cfg, limits, log, script, marker, "harvest")
    return read_harvest(out, ids, problem, delimiter=marker)


def commit_tracker_files(repo: Path, files: list[Path], message: str) -> str:
    """Commit the harvest's files in the LOCAL tracker clone (never pushed); '' when not a git repo."""
    if not (repo / ".git").exists():
        return ""
    ident = subprocess.run(["git", "-C", str(repo), "config", "user.email"], capture_output=True, text=True)
    who = [] if ident.stdout.strip() else ["-c", "user.name=monitor-cron-sweep", "-c", "user.email=sweep@localhost"]
    rel = [str(f.relative_to(repo)) for f in files]
    subprocess.run(["git", "-C", str(repo), "add", "--", *rel], check=True, capture_output=True)
    done = subprocess.run(
        ["git", "-C", str(repo), *who, "commit", "-q", "-m", message, "--", *rel], capture_output=True, text=True
    )
    if done.returncode != 0:
        return f"commit failed: {done.stderr.strip()[:200] or done.stdout.strip()[:200]}"
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return head.stdout.strip()


def harvest(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Every pending ⏳ row of every tracker: poll its eval job, fill / flag / fail it (dry_run: print)."""
    config = load_sweep_config(sweep_yaml)
    settings = tracker_settings(config.trackers)
    if settings is None:
        raise AirflowSkipException("no tracker repo configured (trackers.repo / SWEEP_TRACKER_REPO)")
    dry = bool(context["params"].get("dry_run", True))
    files = tracker_files(settings)
    pending, notes = scan(files, settings.default_cluster)
    by_cluster: dict[str, list[PendingRow]] = defaultdict(list)
    for p in pending:
        by_cluster[p.cluster].append(p)
    outcomes: list[tuple[PendingRow, RowOutcome]] = []
    for cluster, rows in sorted(by_cluster.items()):
        reports = _poll(ops_dir, cluster, rows, config.gather, settings.max_results_bytes)
        outcomes += [(p, decide_row(p, reports[p.row.job_id or ""])) for p in rows]
    written: list[Path] = []
    by_file: dict[str, list[tuple[PendingRow, RowOutcome]]] = defaultdict(list)
    for p, o in outcomes:
        by_file[p.row.path].append((p, o))
    for path, items in by_file.items():
        tracker = Path(path)
        old = tracker.read_text(encoding="utf-8")
        new = old
        for p, o in items:
            if dry:
                print(f"DRY RUN: {tracker}:{o.line} job {o.job}: would be {o.outcome} ({o.note})")
                continue
            try:
                new = apply_outcome(new, p, o)
            except TrackerError as exc:  # the row changed under us: leave it, say so
                o.outcome, o.note = "unknown", f"not written: {exc}"
                continue
            for rel, text in o.files.items():
                if not _RESULTS_NAME.match(Path(rel).name):
                    o.note += f"; results file {Path(rel).name!r} skipped (unsafe name)"
                    continue
                dest = tracker.parent / rel
                if not dest.exists() or dest.read_text(encoding="utf-8") != text:
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    write_run_log(dest, text)
                    written.append(dest)
        if new != old:
            write_run_log(tracker, new)
            written.append(tracker)
    commit = ""
    if written and settings.commit:
        n = sum(1 for _, o in outcomes if o.outcome in ("filled", "failed", "flagged"))
        commit = commit_tracker_files(Path(settings.repo).resolve(), written, f"tracker harvest: {n} row(s) updated")
    for _, o in outcomes:
        log.info("%s:%s %s -> %s (%s)", o.path, o.line, o.job, o.outcome, o.note)
    return {"outcomes": [o.to_dict() for _, o in outcomes], "notes": notes, "commit": commit, "dry_run": dry}


def record(sweep_yaml: str, **context: Any) -> str:
    """The harvest table, printed and appended to the dated run log."""
    got = context["ti"].xcom_pull(task_ids="harvest") or {}
    rows = [
        [Path(o["path"]).name + f":{o['line']}", o["job"], o["run"], o["state"] or "?", o["outcome"], o["note"]]
        for o in got.get("outcomes", [])
    ]
    text = box_table(
        ["Tracker row", "Eval job", "Run", "State", "Outcome", "Note"], rows, [None, None, 30, None, None, 60]
    )
    text += "".join(f"\n- {n}" for n in got.get("notes", []))
    if got.get("commit"):
        text += f"\ntracker commit (local clone, not pushed): {got['commit']}"
    if got.get("dry_run"):
        text += "\nDRY RUN: nothing written"
    print(text)
    return str(append_record(context, sweep_yaml, "sweep_tracker_harvest", text))
