"""sweep_tracker_harvest's step as a use-case: scan the trackers, poll each cluster's eval jobs in
ONE read-only SSH session, decide every pending row (harvest.plan), write rows and results files,
commit the local clone; and the outcome table. I/O comes in as arguments (handoffs.ports).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from sweep_core.fanin.render import box_table
from sweep_core.fanin.report import write_run_log
from sweep_core.handoffs.harvest.clone_path import OutsideClone, clone_file
from sweep_core.handoffs.harvest.commit import commit_tracker_files
from sweep_core.handoffs.harvest.plan import (
    JobReport,
    PendingRow,
    RowOutcome,
    TrackerError,
    TrackerSettings,
    apply_outcome,
    decide_row,
    scan,
    tracker_files,
)
from sweep_core.handoffs.harvest.remote import build_harvest_script, read_harvest
from sweep_core.handoffs.ports import CommitFiles, LoadCluster, RunScript, Say, active_slurm
from sweep_core.slurm.gather import new_marker

_RESULTS_NAME = re.compile(r"^(?:results_[A-Za-z0-9._:+-]+|result)\.json$")  # lm-eval's, Harbor's job result


def poll_cluster(
    cluster: str,
    rows: list[PendingRow],
    load_cluster: LoadCluster,
    run_script: RunScript,
    max_bytes: int,
    tail_bytes: int,
) -> dict[str, JobReport]:
    """A report per eval job id of ``rows``; every one UNKNOWN when the cluster is not an active
    SLURM cluster or did not answer."""
    ids = sorted({p.row.job_id or "" for p in rows})
    cfg, why = active_slurm(load_cluster, cluster)
    if cfg is None:
        return read_harvest(None, ids, why)
    marker = new_marker()
    runs: dict[str, str] = {}
    for p in rows:
        runs.setdefault(p.row.job_id or "", (p.row.run or "").strip("` "))
    script = build_harvest_script(ids, cfg.eval_results_dir, cfg.log_pattern, marker, max_bytes, tail_bytes, runs=runs)
    out, problem = run_script(cfg, script, marker, "harvest")
    reports = read_harvest(out, ids, problem, delimiter=marker)
    if not cfg.eval_results_dir:  # no results dir to read: the row says which field, not "no results_*.json"
        for rep in reports.values():
            if not rep.results and not rep.results_problem:
                rep.results_problem = f"no eval_results_dir in {cluster}'s ops.md (harvest OFF)"
    return reports


def _write(tracker: Path, items: list[tuple[PendingRow, RowOutcome]], written: list[Path]) -> None:
    """Write one tracker's outcomes and their results files (a row changed under us is left alone)."""
    old = tracker.read_text(encoding="utf-8")
    new = old
    for p, o in items:
        try:
            new = apply_outcome(new, p, o)
        except TrackerError as exc:  # the row changed under us: leave it, say so
            o.outcome, o.note = "unknown", f"not written: {exc}"
            continue
        for rel, text in o.files.items():
            if not _RESULTS_NAME.match(Path(rel).name):
                o.note += f"; results file {Path(rel).name!r} skipped (unsafe name)"
                continue
            try:
                dest = clone_file(tracker.parent, rel)
            except OutsideClone as exc:
                o.note += f"; results file not written: {exc}"
                continue
            if not dest.exists() or dest.read_text(encoding="utf-8") != text:
                dest.parent.mkdir(parents=True, exist_ok=True)
                write_run_log(dest, text)
                written.append(dest)
    if new != old:
        write_run_log(tracker, new)
        written.append(tracker)


def harvest_trackers(
    settings: TrackerSettings,
    *,
    dry_run: bool,
    tail_bytes: int,
    load_cluster: LoadCluster,
    run_script: RunScript,
    say: Say,
    commit: CommitFiles = commit_tracker_files,
) -> dict[str, Any]:
    """Every pending ⏳ row of every tracker: poll its eval job, fill / flag / fail it; dry run:
    ``say`` what each row would become, write nothing. The outcomes, notes and commit id."""
    pending, notes = scan(tracker_files(settings), settings.default_cluster)
    by_cluster: dict[str, list[PendingRow]] = defaultdict(list)
    for p in pending:
        by_cluster[p.cluster].append(p)
    outcomes: list[tuple[PendingRow, RowOutcome]] = []
    for cluster, rows in sorted(by_cluster.items()):
        reports = poll_cluster(cluster, rows, load_cluster, run_script, settings.max_results_bytes, tail_bytes)
        outcomes += [(p, decide_row(p, reports[p.row.job_id or ""])) for p in rows]
    written: list[Path] = []
    by_file: dict[str, list[tuple[PendingRow, RowOutcome]]] = defaultdict(list)
    for p, o in outcomes:
        by_file[p.row.path].append((p, o))
    for path, items in by_file.items():
        if dry_run:
            for _, o in items:
                say(f"DRY RUN: {Path(path)}:{o.line} job {o.job}: would be {o.outcome} ({o.note})")
            continue
        _write(Path(path), items, written)
    done = ""
    if written and settings.commit:
        n = sum(1 for _, o in outcomes if o.outcome in ("filled", "failed", "flagged"))
        done = commit(Path(settings.repo).resolve(), written, f"tracker harvest: {n} row(s) updated")
    return {"outcomes": [o.to_dict() for _, o in outcomes], "notes": notes, "commit": done, "dry_run": dry_run}


def harvest_record(got: dict[str, Any]) -> str:
    """The harvest table with its notes, commit and dry-run line (``got``: the harvest's XCom)."""
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
    return text
