"""Tracker harvest (spec §4 "Standalone eval-grid trackers", HF chain leg 3): what each pending
⏳ row with an eval job id becomes, given what the cluster said about that job.

- COMPLETED with numeric scores  -> the results JSON copied to ``<tracker dir>/<RUN>/``, the
  score columns filled, ⏳ -> ✅.
- COMPLETED without them (``results: {}``, NaN, no file) -> stays ⏳, flagged with the reason.
- COMPLETED agentic eval (Harbor, no results_*.json): its job-level ``result.json`` under
  ``<results dir>/<run tag>/`` (harvest.harbor_results) -> the score column of its dataset filled
  and ✅; malformed, unfinished or without a numeric metric -> stays ⏳ with why it is UNKNOWN.
- FAILED / TIMEOUT / OOM / NODE_FAIL / CANCELLED -> ❌ with the first real traceback (or state).
- RUNNING / PENDING -> untouched; sacct unknown or no record -> untouched, reported.

A ✅ row is no longer pending, so a re-run harvests nothing twice; a flag note is never added
twice (tracker_edit.mark_row).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep_core.config.handoffs_schema import TrackersSection
from sweep_core.config.schema_base import section
from sweep_core.fanin.tracebacks import first_real_traceback
from sweep_core.handoffs.batch_job.plan import LIVE_STATES
from sweep_core.handoffs.harvest.clone_path import in_clone
from sweep_core.handoffs.harvest.eval_results import (
    EvalResultsError,
    ScoreSpec,
    extract_scores,
    format_score,
    parse_results,
)
from sweep_core.handoffs.harvest.harbor_results import HarborJob, HarborResultError, latest_job
from sweep_core.handoffs.harvest.tracker_edit import fill_row, has_column, mark_row
from sweep_core.handoffs.harvest.tracker_md import TrackerError, TrackerRow
from sweep_core.handoffs.harvest.tracker_rows import pending_rows, rows_without_job
from sweep_core.safe.names import plain_name

FAILED_STATES = ("FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "CANCELLED", "BOOT_FAIL", "DEADLINE", "PREEMPTED")


@dataclass(frozen=True)
class TrackerSettings:
    """The ``trackers:`` section of sweep.yaml (repo may come from SWEEP_TRACKER_REPO)."""

    repo: str
    globs: tuple[str, ...]
    default_cluster: str
    commit: bool
    max_results_bytes: int


def tracker_settings(
    raw: TrackersSection | dict[str, Any] | None, env: dict[str, str] | None = None
) -> TrackerSettings | None:
    """None when no tracker repo is configured (the harvest is off)."""
    sect = section(TrackersSection, raw, "trackers", ValueError)
    env = os.environ if env is None else env
    repo = env.get("SWEEP_TRACKER_REPO") or sect.repo
    if not repo:
        return None
    for g in sect.globs:
        if g.startswith("/") or ".." in g.split("/"):
            raise ValueError(f"trackers.globs: {g!r} must be relative to the tracker repo")
    return TrackerSettings(
        repo=os.path.expanduser(repo),
        globs=sect.globs,
        default_cluster=sect.default_cluster,
        commit=sect.commit,
        max_results_bytes=sect.max_results_bytes,
    )


def tracker_files(s: TrackerSettings) -> list[Path]:
    """The tracker markdown files under the repo, sorted, each inside the repo (no symlink escape)."""
    root = Path(s.repo).resolve()
    out = set()
    for g in s.globs:
        for p in glob.glob(str(root / g), recursive=True):
            rp = in_clone(root, p)
            if rp is not None and rp.is_file():
                out.add(rp)
    return sorted(out)


@dataclass
class PendingRow:
    """A pending row to harvest, with the cluster its job ran on."""

    row: TrackerRow
    cluster: str

    @property
    def key(self) -> str:
        return f"{self.cluster}:{self.row.job_id}"


def scan(files: list[Path], default_cluster: str) -> tuple[list[PendingRow], list[str]]:
    """Pending rows with a job id, and notes (⏳ rows without a job id, rows with no cluster)."""
    pending, notes = [], []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for row in pending_rows(text, str(path)):
            cluster = row.cluster or default_cluster
            if not cluster:
                notes.append(f"{path}:{row.line_index + 1}: job {row.job_id} has no cluster prefix and no default")
                continue
            pending.append(PendingRow(row, cluster))
        for row in rows_without_job(text, str(path)):
            notes.append(f"{path}:{row.line_index + 1}: ⏳ without an eval job id ({row.run or row.raw.strip()[:60]})")
    return pending, notes


@dataclass
class JobReport:
    """What the cluster said about one eval job (harvest script)."""

    state: str = ""  # sacct State; "" = no record
    problem: str = ""  # sacct failed / cluster unreachable: nothing can be concluded
    results: dict[str, str] = field(default_factory=dict)  # results file name -> its text
    results_problem: str = ""
    harbor: dict[str, str] = field(default_factory=dict)  # Harbor job result.json (path under the dir) -> text
    harbor_problem: str = ""
    log_tail: str = ""
    log_problem: str = ""  # why there is no log tail (not found, unreadable)


@dataclass
class RowOutcome:
    path: str
    line: int
    job: str
    run: str
    state: str
    outcome: str  # filled | flagged | failed | waiting | unknown
    note: str
    files: dict[str, str] = field(default_factory=dict)  # relative path in the tracker dir -> text
    cells: dict[str, str] = field(default_factory=dict)  # score column -> cell text (filled rows)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("path", "line", "job", "run", "state", "outcome", "note")}


def run_dir_name(p: PendingRow) -> str:
    """The ``<RUN>/`` dir next to the tracker: the row's run/cell name when safe, else the job id."""
    run = (p.row.run or "").strip("` ")
    return run if plain_name(run) else f"job_{p.row.job_id}"


def decide_row(p: PendingRow, rep: JobReport, spec: ScoreSpec | None = None) -> RowOutcome:
    """The outcome for one pending row (no I/O)."""
    base = {"path": p.row.path, "line": p.row.line_index + 1, "job": p.key, "run": run_dir_name(p), "state": rep.state}
    if rep.problem:
        return RowOutcome(**base, outcome="unknown", note=f"state UNKNOWN: {rep.problem}")
    state = rep.state.split(" ")[0].rstrip("+")
    if not state:
        return RowOutcome(**base, outcome="unknown", note=f"sacct -j {p.row.job_id}: no record")
    if state in LIVE_STATES:
        return RowOutcome(**base, outcome="waiting", note=state)
    if state in FAILED_STATES:
        tb = first_real_traceback(rep.log_tail) if rep.log_tail else ""
        why = f": {tb}" if tb else (f" ({rep.log_problem})" if rep.log_problem else " (no traceback in the log tail)")
        return RowOutcome(**base, outcome="failed", note=f"eval {rep.state}{why}")
    if state != "COMPLETED":
        return RowOutcome(**base, outcome="unknown", note=f"sacct state {rep.state}")
    if not rep.results and (rep.harbor or rep.harbor_problem):
        return _decide_harbor(base, p, rep)
    if rep.results_problem or not rep.results:
        why = (
            rep.results_problem
            or "no results_*.json in the eval's results dir (nor a Harbor result.json under its run tag)"
        )
        return RowOutcome(**base, outcome="flagged", note=f"COMPLETED but {why}")
    try:
        docs = [parse_results(text, name) for name, text in sorted(rep.results.items())]
        scores = extract_scores(docs, spec)
    except EvalResultsError as exc:
        return RowOutcome(**base, outcome="flagged", note=f"COMPLETED but no numeric scores: {exc}"[:300])
    files = {f"{base['run']}/{name}": text for name, text in rep.results.items()}
    cells = scores.cells()
    note = ", ".join(f"{k} {v}" for k, v in cells.items())
    return RowOutcome(**base, outcome="filled", note=note, files=files, cells=cells)


# columns a single-eval Harbor job's score may fill when no column is named after its dataset
HARBOR_COLUMNS = ("pass rate", "pass_rate", "pass@1", "reward", "mean reward", "score", "accuracy", "resolved")


def harbor_cells(job: HarborJob, header: tuple[str, ...]) -> tuple[dict[str, str], list[str]]:
    """Cell text per column for each eval of ``job`` (the column named after its dataset, with or
    without ``@version``; a single eval also a generic score column), and the evals with no column."""
    cells, missing = {}, []
    for e in job.evals:
        names = [e.dataset, e.dataset.split("@", 1)[0], *(HARBOR_COLUMNS if len(job.evals) == 1 else ())]
        col = next((n for n in names if n and has_column(header, n)), None)
        if col is None:
            missing.append(e.dataset)
        else:
            cells[col] = format_score(e.mean)
    return cells, missing


def _decide_harbor(base: dict[str, Any], p: PendingRow, rep: JobReport) -> RowOutcome:
    """A COMPLETED agentic eval from its Harbor job result.json: filled, or ⏳ with why UNKNOWN."""
    try:
        job = latest_job(rep.harbor) if rep.harbor else None
    except HarborResultError as exc:
        return RowOutcome(**base, outcome="flagged", note=f"COMPLETED but its Harbor result is UNKNOWN: {exc}"[:300])
    if job is None:
        return RowOutcome(**base, outcome="flagged", note=f"COMPLETED but {rep.harbor_problem}"[:300])
    cells, missing = harbor_cells(job, p.row.header)
    if missing:
        note = f"COMPLETED, Harbor {job.note()}, but the tracker has no column for {', '.join(missing)}"
        return RowOutcome(**base, outcome="flagged", note=note[:300])
    parts = job.source.split("/")  # <run tag>/[<job dir>/]result.json under the results dir
    rel = "/".join([base["run"], *parts[1:]]) if all(plain_name(x) for x in parts[1:]) else ""
    files = {rel: rep.harbor[job.source]} if rel else {}
    return RowOutcome(**base, outcome="filled", note=job.note(), files=files, cells=cells)


def apply_outcome(text: str, p: PendingRow, o: RowOutcome) -> str:
    """The tracker text with this row's outcome written (unchanged for waiting/unknown)."""
    if o.outcome == "filled":
        return fill_row(text, p.row, o.cells, status="✅")
    if o.outcome == "flagged":
        return mark_row(text, p.row, status="⏳", note=o.note[:200])
    if o.outcome == "failed":
        return mark_row(text, p.row, status="❌", note=o.note[:200])
    return text


__all__ = [
    "JobReport",
    "PendingRow",
    "RowOutcome",
    "TrackerError",
    "TrackerSettings",
    "apply_outcome",
    "decide_row",
    "scan",
    "tracker_files",
    "tracker_settings",
]
