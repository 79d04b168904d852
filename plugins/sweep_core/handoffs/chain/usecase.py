"""sweep_hf_chain's step as a use-case: advance every cell of every HF-only series by the legs its
evidence allows (chain.plan.advance), with one probe and at most one submit session per series;
then the eval job ids go into the tracker rows. Durable state, SSH, the hub and the tracker commit
come in as arguments (handoffs.ports); nothing is submitted or written on a dry run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep_core.config.handoffs_schema import FoundSeriesSpec
from sweep_core.config.ops import ClusterConfig
from sweep_core.fanin.render import box_table
from sweep_core.fanin.report import write_run_log
from sweep_core.handoffs.batch_job import usecase as batch
from sweep_core.handoffs.batch_job.plan import Outcome, base_state, is_live, valid_job_id
from sweep_core.handoffs.batch_job.remote import build_track_script, log_path, read_track
from sweep_core.handoffs.chain.plan import (
    FOUND,
    CellState,
    ChainConfigError,
    ClusterView,
    Series,
    Step,
    advance,
    cell_values,
    completed_cells,
    found_series,
    kept_hub_check,
)
from sweep_core.handoffs.chain.remote import probe_view
from sweep_core.handoffs.harvest.clone_path import OutsideClone, clone_file
from sweep_core.handoffs.harvest.commit import commit_tracker_files
from sweep_core.handoffs.harvest.plan import TrackerSettings
from sweep_core.handoffs.harvest.tracker_edit import fill_row
from sweep_core.handoffs.harvest.tracker_md import TrackerError
from sweep_core.handoffs.harvest.tracker_rows import read_rows
from sweep_core.handoffs.kernel.hub import hub_attempt, hub_result
from sweep_core.handoffs.ports import CommitFiles, HubCheck, LoadCluster, RunScript, Say, active_slurm
from sweep_core.safe.names import check_plain_name
from sweep_core.slurm.gather import new_marker

TAIL_BYTES = 16384  # the bounded tail a failed leg's traceback is read from
ChainState = dict[str, Any]  # "<series>/<cell>" -> CellState.to_dict()


def tracker_row(tracker: Path | None, cell: str) -> tuple[Any, str | None, str | None]:
    """The cell's tracker row (run column == cell), its status and its eval job id."""
    if tracker is None or not tracker.exists():
        return None, None, None
    for row in read_rows(tracker.read_text(encoding="utf-8"), str(tracker)):
        if (row.run or "").strip("` ") == cell:
            return row, row.status, row.job_id
    return None, None, None


def _submit(
    series: Series,
    cfg: ClusterConfig,
    submissions: list[Step],
    state: ChainState,
    run_script: RunScript,
) -> None:
    """ONE session submits every leg; a step whose job id did not come back keeps its old state."""
    subs, _ = batch.submit(cfg, [s.argv for s in submissions], run_script, "hf-chain submit")
    for step, sub in zip(submissions, subs, strict=True):
        key = f"{series.name}/{step.cell}"
        if sub.outcome is not Outcome.SUBMITTED:
            if sub.outcome is not Outcome.REFUSED:  # UNKNOWN: the next probe adopts a job of the leg's name
                step.note += f"; submission {sub.why}"
            else:
                step.note += f"; submission FAILED: {sub.answer[:200]}"
            step.state = CellState.from_dict(state.get(key))  # not advanced: adopted or retried next sweep
            continue
        jid = sub.job_id
        if step.submit == "upload":
            step.state.upload_job = jid
        else:
            step.state.eval_job = jid
            step.tracker_job = jid
        step.note += f"; submitted job {jid}"
        state[key] = step.state.to_dict()


def _record_eval_jobs(series: Series, tracker: Path, steps: list[Step], written: list[Path]) -> None:
    """Each step's new eval job id into its cell's row (⏳); a row that changed is noted, not written."""
    for step in steps:
        if not step.tracker_job:
            continue
        row, _, _ = tracker_row(tracker, step.cell)
        if row is None:
            continue
        try:
            new = fill_row(
                tracker.read_text(encoding="utf-8"),
                row,
                {series.eval_job_column: f"{series.cluster}:{step.tracker_job}"},
                status="⏳",
            )
        except TrackerError as exc:
            step.note += f"; tracker not updated: {exc}"
            continue
        write_run_log(tracker, new)
        written.append(tracker)


@dataclass
class _Run:
    """One advance over every series: its inputs, the durable state it edits, what it found."""

    state: ChainState
    dry_run: bool
    org: str
    trackers: TrackerSettings | None
    run_script: RunScript
    hub_check: HubCheck
    say: Say
    run_id: str = ""
    at: str = ""
    steps: list[Step] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)


def _leg_tracebacks(
    series: Series, cfg: ClusterConfig, view: ClusterView, cells: list[str], run_script: RunScript
) -> dict[str, str]:
    """ONE track session (batch_job) for the cells' latest upload/eval jobs that ended without
    COMPLETED: job id -> the first real traceback of its log (ops.md ``log_pattern``)."""
    logs: dict[str, str] = {}
    for cell in cells:
        for name in (series.upload_name.format(cell=cell), series.eval_name.format(cell=cell)):
            got = view.latest(name)
            if got and not is_live(got[1]) and base_state(got[1]) != "COMPLETED" and valid_job_id(got[0]):
                logs[got[0]] = log_path(cfg.log_pattern, got[0], name, cfg.user)
    logs = {j: p for j, p in logs.items() if p}
    if not logs:
        return {}
    marker = new_marker()
    out, problem = run_script(cfg, build_track_script(logs, marker, TAIL_BYTES), marker, "hf-chain track")
    return {j: t.traceback for j, t in read_track(out, sorted(logs), problem).items() if t.traceback}


def _advance_series(series: Series, cfg: ClusterConfig, run: _Run) -> None:
    """Advance every cell of one series (known in the state or with a COMPLETED SFT job)."""
    view = probe_view(series, cfg, run.run_script)
    if view.jobs is None:
        run.notes.append(f"{series.name}: {series.cluster} {view.problem}: nothing advanced")
        return
    tracker = None
    if not series.tracker:  # a found series: leg 1 only, no tracker row
        pass
    elif run.trackers is None:
        run.notes.append(f"{series.name}: no tracker repo configured: leg 2 cannot record the eval")
    else:
        try:
            tracker = clone_file(run.trackers.repo, series.tracker)
        except OutsideClone as exc:
            run.notes.append(f"{series.name}: tracker refused: {exc}: leg 2 cannot record the eval")
    done_sft = completed_cells(series, view)
    known = {k.split("/", 1)[1] for k in run.state if k.startswith(series.name + "/")}
    tracebacks = _leg_tracebacks(series, cfg, view, sorted(set(done_sft) | known), run.run_script)
    submissions: list[Step] = []
    for cell in sorted(set(done_sft) | known):
        key = f"{series.name}/{cell}"
        cs = CellState.from_dict(run.state.get(key))
        try:
            values = cell_values(series, cell, done_sft.get(cell, cs.sft_job), run.org, series.artifact_dir)
        except ValueError as exc:
            run.notes.append(f"{series.name}: {exc}")
            continue
        hub, check = None, None
        if cs.leg in ("sft", "upload"):
            ev = run.hub_check(values["hub_repo"], series.repo_type, list(series.expected))
            hub = ev.ok
            check = hub_attempt(values["hub_repo"], hub_result(ev), run=run.run_id, at=run.at, why=f"chain {cs.leg}")
        _, status, row_job = tracker_row(tracker, cell)
        step = advance(series, cell, cs, view, values, hub, status, row_job, tracebacks)
        step.state.hub = kept_hub_check(cs, step, check)
        if step.escalated:
            run.notes.append(f"ESCALATED: {series.name}/{cell}: {step.note}")
        run.steps.append(step)
        if step.submit:
            submissions.append(step)
        elif not run.dry_run:
            run.state[key] = step.state.to_dict()
    if not submissions:
        return
    if run.dry_run:
        for step in submissions:
            run.say(f"DRY RUN: {series.cluster}: would submit {step.submit} for {step.cell}: {' '.join(step.argv)}")
        return
    _submit(series, cfg, submissions, run.state, run.run_script)
    if tracker is not None:
        # as before the move: with the submissions, every adopted eval of this run so far
        adopted = [s for s in run.steps if s.tracker_job and not s.submit]
        _record_eval_jobs(series, tracker, submissions + adopted, run.written)


def found_series_list(
    series_list: Sequence[Series], found: Sequence[Mapping[str, str]], state: ChainState, spec: FoundSeriesSpec
) -> tuple[list[Series], list[str]]:
    """One found series per cluster (chain.plan.found_series): the HF-only completions the sweep handed
    over (``found``: its conf's jobs, cluster and name) and the found cells of earlier runs (the
    state), less every cell a configured series names (it takes the cell over). The notes say a name
    that cannot be a cell."""
    cells: dict[str, set[str]] = {}
    for key in state:
        if key.startswith(FOUND):
            c, _, cell = key[len(FOUND) :].partition("/")
            cells.setdefault(c, set()).add(cell)
    for job in found:
        cells.setdefault(str(job.get("cluster", "")), set()).add(str(job.get("name", "")))
    out, notes = [], []
    for c, names in sorted(cells.items()):
        keep = []
        for name in sorted(names):
            if any(s.cluster == c and s.match.match(name) for s in series_list):
                continue  # named by a configured series: its tracker and eval
            try:
                keep.append(check_plain_name(name, "cell"))
            except ValueError as exc:
                notes.append(f"{FOUND}{c}: not chained: {exc}")
        if keep:
            try:
                out.append(found_series(spec, c, keep))
            except ChainConfigError as exc:
                notes.append(f"{FOUND}{c}: {exc}")
    return out, notes


def advance_chain(
    series_list: list[Series],
    *,
    org: str,
    trackers: TrackerSettings | None,
    dry_run: bool,
    load_cluster: LoadCluster,
    run_script: RunScript,
    hub_check: HubCheck,
    load_state: Callable[[], ChainState],
    save_state: Callable[[ChainState], None],
    say: Say,
    commit: CommitFiles = commit_tracker_files,
    found: Sequence[Mapping[str, str]] = (),
    found_spec: FoundSeriesSpec | None = None,
    run_id: str = "",
    at: str = "",
) -> dict[str, Any]:
    """Advance every cell of every series, then of the found series (``found``: the sweep's HF-only
    completions no series names; ``found_spec``: hf_chain.found); submissions, state and tracker
    edits only when not a dry run. Returns the steps (as dicts), the notes and ``dry_run``.
    ``run_id``/``at``: this run and its time, on the hub checks a cell keeps (chain.plan.kept_hub_check)."""
    run = _Run(load_state(), dry_run, org, trackers, run_script, hub_check, say, run_id, at)
    found_list, run.notes = found_series_list(series_list, found, run.state, found_spec or FoundSeriesSpec())
    for series in [*series_list, *found_list]:
        try:  # only an active SLURM cluster is contacted (a dropped or skipped one never is)
            cfg, why = active_slurm(load_cluster, series.cluster, "nothing advanced, nothing contacted")
        except FileNotFoundError as exc:
            cfg, why = None, f"ops.md: {exc}"
        if cfg is None:
            run.notes.append(f"{series.name}: {why}")
            continue
        _advance_series(series, cfg, run)
    if not dry_run:
        save_state(run.state)
        if run.written and trackers and trackers.commit:
            repo = Path(trackers.repo).resolve()
            done = commit(repo, sorted(set(run.written)), "hf chain: eval launched")
            run.notes.append("tracker commit: " + (done or "-"))
    return {"steps": [s.to_dict() for s in run.steps], "notes": run.notes, "dry_run": dry_run}


def chain_record(got: dict[str, Any]) -> str:
    """The chain table with its notes and dry-run line (``got``: the advance step's XCom)."""
    rows = [
        [s["series"], s["cell"], s["before"], s["after"], s["submit"] or "-", s["note"]] for s in got.get("steps", [])
    ]
    text = box_table(
        ["Series", "Cell", "Leg before", "Leg after", "Submitted", "Note"], rows, [None, 30, None, None, None, 60]
    )
    text += "".join(f"\n- {n}" for n in got.get("notes", []))
    if got.get("dry_run"):
        text += "\nDRY RUN: nothing submitted, no state written"
    return text
