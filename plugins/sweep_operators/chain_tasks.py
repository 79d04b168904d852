"""Task callables of the sweep_hf_chain DAG: advance every cell of every HF-only series by the
legs its evidence allows (sweep_core.handoffs.chain.plan), then record. State: Airflow Variable
``sweep_hf_chain`` + the tracker rows + the cluster's own job list."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from airflow.sdk import Variable
from airflow.sdk.exceptions import AirflowSkipException

from sweep_core.config.ops import OpsConfigError, load_cluster
from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.render import box_table
from sweep_core.fanin.report import write_run_log
from sweep_core.handoffs.chain.plan import (
    CellState,
    Series,
    Step,
    advance,
    build_probe,
    build_submit_script,
    cell_values,
    chain_series,
    completed_cells,
    parse_job_id,
    view_from,
)
from sweep_core.handoffs.cleanup.plan import cleanup_config
from sweep_core.handoffs.harvest.plan import tracker_settings
from sweep_core.handoffs.harvest.tracker_edit import fill_row
from sweep_core.handoffs.harvest.tracker_md import TrackerError
from sweep_core.handoffs.harvest.tracker_rows import read_rows
from sweep_core.slurm.gather import new_marker, script_prelude
from sweep_core.slurm.parse import SlurmOutputError, parse_squeue, squeue_format
from sweep_operators.cluster_ssh import run_batch, run_checked
from sweep_operators.handoff_record import append_record
from sweep_operators.harvest_tasks import commit_tracker_files

log = logging.getLogger(__name__)
STATE_VAR = "sweep_hf_chain"


def _load_state() -> dict[str, Any]:
    raw = Variable.get(STATE_VAR, default="{}")
    try:
        data = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except ValueError as exc:
        raise RuntimeError(f"Variable {STATE_VAR} is not JSON ({exc}): fix or delete it; nothing advanced") from exc
    return data if isinstance(data, dict) else {}


def _row(tracker: Path | None, cell: str) -> tuple[Any, str | None, str | None]:
    """The cell's tracker row (run column == cell), its status and its eval job id."""
    if tracker is None or not tracker.exists():
        return None, None, None
    for row in read_rows(tracker.read_text(encoding="utf-8"), str(tracker)):
        if (row.run or "").strip("` ") == cell:
            return row, row.status, row.job_id
    return None, None, None


def _probe(series: Series, cfg: Any, limits: Any) -> Any:
    marker = new_marker()
    script = build_probe(script_prelude(marker), cfg.user, series.lookback_days, squeue_format(marker))
    out, problem = run_checked(cfg, limits, log, script, marker, "hf-chain probe")
    if out is None or problem:
        return view_from(None, None, problem)
    sq, sa = out.get("squeue"), out.get("sacct")
    try:
        rows = [(r.job_id, r.state, r.name) for r in parse_squeue(sq)] if sq else None
    except SlurmOutputError as exc:
        return view_from(None, None, f"squeue UNKNOWN: {exc}")
    if sa is None or sa.rc != 0:
        return view_from(None, None, f"sacct failed: {sa.stderr.strip()[:200] if sa else 'no record'}")
    return view_from(rows, sa.stdout, delimiter=marker)


def advance_chain(ops_dir: str, sweep_yaml: str, **context: Any) -> dict[str, Any]:
    """Advance every cell; submissions and tracker edits only when not dry_run."""
    config = load_sweep_config(sweep_yaml)
    series_list = chain_series(config.hf_chain)
    if not series_list:
        raise AirflowSkipException("no HF-only series configured (hf_chain.series)")
    dry = bool(context["params"].get("dry_run", True))
    trackers = tracker_settings(config.trackers)
    org = cleanup_config(config.cleanup).hub_org
    state = _load_state()
    from sweep_operators.hf_hub import HubChecker

    checker = HubChecker.from_connection()
    steps: list[Step] = []
    notes: list[str] = []
    written: list[Path] = []
    for series in series_list:
        try:
            cfg = load_cluster(ops_dir, series.cluster)
        except (OpsConfigError, FileNotFoundError) as exc:
            notes.append(f"{series.name}: ops.md: {exc}")
            continue
        view = _probe(series, cfg, config.gather)
        if view.jobs is None:
            notes.append(f"{series.name}: {series.cluster} {view.problem}: nothing advanced")
            continue
        tracker = Path(trackers.repo).resolve() / series.tracker if trackers else None
        if tracker is None:
            notes.append(f"{series.name}: no tracker repo configured: leg 2 cannot record the eval")
        done_sft = completed_cells(series, view)
        known = {k.split("/", 1)[1] for k in state if k.startswith(series.name + "/")}
        submissions: list[tuple[Step, tuple[str, ...]]] = []
        for cell in sorted(set(done_sft) | known):
            key = f"{series.name}/{cell}"
            cs = CellState.from_dict(state.get(key))
            try:
                values = cell_values(series, cell, done_sft.get(cell, cs.sft_job), org, series.artifact_dir)
            except ValueError as exc:
                notes.append(f"{series.name}: {exc}")
                continue
            hub = None
            if cs.leg in ("sft", "upload"):
                hub = checker.check(values["hub_repo"], repo_type=series.repo_type, expected=list(series.expected)).ok
            _, status, row_job = _row(tracker, cell)
            step = advance(series, cell, cs, view, values, hub, status, row_job)
            steps.append(step)
            if step.submit:
                submissions.append((step, step.argv))
            elif not dry:
                state[key] = step.state.to_dict()
        if not submissions:
            continue
        if dry:
            for step, argv in submissions:
                print(f"DRY RUN: {series.cluster}: would submit {step.submit} for {step.cell}: {' '.join(argv)}")
            continue
        marker = new_marker()
        script = build_submit_script(script_prelude(marker), [(s.submit, a) for s, a in submissions])
        lim = config.gather
        result = run_batch(cfg, script, marker, lim.connect_timeout_s, lim.command_timeout_s, log, "hf-chain submit")
        for k, (step, _) in enumerate(submissions):
            rec = result.output.get(f"sub:{k}") if result.output else None
            jid = parse_job_id(rec.stdout) if rec is not None and rec.rc == 0 else ""
            key = f"{series.name}/{step.cell}"
            if not jid:
                why = rec.stderr.strip()[:200] if rec is not None else "submission did not run"
                step.note += f"; submission FAILED: {why}"
                step.state = CellState.from_dict(state.get(key))  # not advanced: retried next sweep
                continue
            if step.submit == "upload":
                step.state.upload_job = jid
            else:
                step.state.eval_job = jid
                step.tracker_job = jid
            step.note += f"; submitted job {jid}"
            state[key] = step.state.to_dict()
        for step in [s for s, _ in submissions] + [s for s in steps if s.tracker_job and not s.submit]:
            if not step.tracker_job or tracker is None:
                continue
            row, _, _ = _row(tracker, step.cell)
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
    if not dry:
        Variable.set(STATE_VAR, json.dumps(state, sort_keys=True))
        if written and trackers and trackers.commit:
            notes.append(
                "tracker commit: "
                + (
                    commit_tracker_files(Path(trackers.repo).resolve(), sorted(set(written)), "hf chain: eval launched")
                    or "-"
                )
            )
    for s in steps:
        log.info("%s/%s: %s -> %s %s", s.series, s.cell, s.before, s.state.leg, s.note)
    return {"steps": [s.to_dict() for s in steps], "notes": notes, "dry_run": dry}


def record(sweep_yaml: str, **context: Any) -> str:
    """The chain table, printed and appended to the dated run log."""
    got = context["ti"].xcom_pull(task_ids="advance") or {}
    rows = [
        [s["series"], s["cell"], s["before"], s["after"], s["submit"] or "-", s["note"]] for s in got.get("steps", [])
    ]
    text = box_table(
        ["Series", "Cell", "Leg before", "Leg after", "Submitted", "Note"], rows, [None, 30, None, None, None, 60]
    )
    text += "".join(f"\n- {n}" for n in got.get("notes", []))
    if got.get("dry_run"):
        text += "\nDRY RUN: nothing submitted, no state written"
    print(text)
    return str(append_record(context, sweep_yaml, "sweep_hf_chain", text))
