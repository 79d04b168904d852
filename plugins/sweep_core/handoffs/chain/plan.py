"""The HF-only SFT chain (spec §4 "move the chains"): 3 legs per cell, advanced every sweep.

    leg 1  SFT COMPLETED (sacct)            -> submit the HF upload (no DB registration)
    leg 2  upload on the hub (hub evidence)  -> submit the standard eval; its job id goes into
                                                the cell's tracker row (⏳)
    leg 3  eval harvested (row ✅)           -> done (sweep_tracker_harvest fills the row)

Idempotent three ways: the durable per-cell state (rows of the state database), the tracker itself (a
row with an eval job id has passed leg 2), and the cluster (a job of the leg's name already in
squeue/sacct is adopted, never submitted again). A done leg is never redone.

Commands are argv lists from sweep.yaml; each element is formatted with the cell's values and
shlex-quoted before it reaches the remote shell.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweep_core.config.handoffs_schema import FoundSeriesSpec, HfChainSection
from sweep_core.config.schema_base import section
from sweep_core.handoffs.batch_job.plan import Placeholders, base_state, check_sbatch, exhausted, is_live, retry_note
from sweep_core.handoffs.kernel.act import Act, ActKind
from sweep_core.handoffs.kernel.attempt import UNREADABLE, Attempt, from_row, to_row
from sweep_core.handoffs.kernel.hub import worth_recording
from sweep_core.handoffs.kernel.result import Outcome
from sweep_core.safe.names import check_plain_name

LEGS = ("sft", "upload", "eval", "done")


class ChainConfigError(ValueError):
    """The ``hf_chain:`` section of sweep.yaml is malformed; the message names the field."""


@dataclass(frozen=True)
class Series:
    """One HF-only series (enable_db_registration: false)."""

    name: str
    cluster: str
    match: re.Pattern[str]  # SFT job names of the series; group `cell` names the cell
    hub_repo: str  # template: {org} {cell}
    repo_type: str
    expected: tuple[str, ...]
    upload: tuple[str, ...]  # argv template: {cell} {hub_repo} {sft_job} {artifact_dir}
    eval: tuple[str, ...]  # argv template: same keys
    tracker: str  # tracker markdown, relative to the tracker repo
    upload_name: str  # job name of the upload job (template {cell}): how the cluster is asked
    eval_name: str
    eval_job_column: str
    lookback_days: int
    artifact_dir: str  # template {cell} {sft_job}: the SFT output the upload reads
    leg_retries: int = 2  # a failed leg is resubmitted this often, then escalated once


def _argv(raw: tuple[str, ...], where: str) -> tuple[str, ...]:
    if not raw:
        raise ChainConfigError(f"{where} must be a non-empty list of strings (argv)")
    return check_sbatch(raw, where, ChainConfigError)


def chain_series(raw: HfChainSection | dict[str, Any] | None) -> list[Series]:
    """The series of the ``hf_chain:`` section (validated by the schema); only those with
    db_registration false."""
    out = []
    for i, s in enumerate(section(HfChainSection, raw, "hf_chain", ChainConfigError).series):
        where = f"hf_chain.series[{i}]"
        if s.db_registration:
            continue  # DB-registered series go through sft-job-cleanup, not this chain
        if s.unset():
            continue  # left empty on purpose: OFF, said by check-config and the sweep (admin.switches)
        try:
            match = re.compile(s.match)
        except re.error as exc:
            raise ChainConfigError(f"{where}.match: bad regex: {exc}") from exc
        if "cell" not in match.groupindex:
            raise ChainConfigError(f"{where}.match needs a (?P<cell>...) group")
        if s.tracker.startswith("/") or ".." in s.tracker.split("/"):
            raise ChainConfigError(f"{where}.tracker must be relative to the tracker repo")
        plain = s.model_dump(exclude={"match", "upload", "eval", "db_registration"})
        out.append(
            Series(**plain, match=match, upload=_argv(s.upload, f"{where}.upload"), eval=_argv(s.eval, f"{where}.eval"))
        )
    return out


FOUND = "found@"  # the name of a cluster's found series: found@<cluster> (its state keys: found@<cluster>/<cell>)


def found_series(spec: FoundSeriesSpec, cluster: str, cells: Sequence[str]) -> Series:
    """The series of ``cluster``'s HF-only completions no configured series names (their launch YAML
    says ``enable_db_registration: false``): each cell is a job's name, matched whole; the upload is
    ``hf_chain.found``'s (empty: said OFF, the cells wait), no eval and no tracker (leg 1 only)."""
    for cell in cells:
        check_plain_name(cell, "cell")
    names = "|".join(re.escape(c) for c in sorted(set(cells))) or "(?!)"
    upload = check_sbatch(spec.upload, "hf_chain.found.upload", ChainConfigError) if spec.upload else ()
    return Series(
        name=f"{FOUND}{cluster}",
        cluster=cluster,
        match=re.compile(rf"^(?P<cell>{names})$"),
        hub_repo=spec.hub_repo,
        repo_type=spec.repo_type,
        expected=tuple(spec.expected),
        upload=upload,
        eval=(),
        tracker="",
        upload_name=spec.upload_name,
        eval_name="",
        eval_job_column="",
        lookback_days=spec.lookback_days,
        artifact_dir=spec.artifact_dir,
        leg_retries=spec.leg_retries,
    )


FAILED_WORD = "failed"  # the outcome word of a failed leg job


def leg_kind(leg: str) -> str:
    """The kernel attempt kind of a leg's job (``chain_upload``, ``chain_eval``)."""
    return f"chain_{leg}"


def leg_attempt(leg: str, n: int, job: str, cluster: str, sft_job: str) -> Attempt:
    """Leg job ``job`` of a cell (its ``n``-th of ``leg``) as a failed kernel Attempt: the sbatch it
    was, on ``cluster`` for the cell's SFT job (as an upload's act names the job it uploads)."""
    return Attempt(leg_kind(leg), n, job=job, said=FAILED_WORD, act=Act(ActKind.SBATCH, cluster, sft_job))


def _failed_rows(value: object) -> tuple[Attempt, ...]:
    """A stored ``failed`` (a list of kernel attempt rows) -> its Attempts; what is not one (a row
    that is not an object, a ``failed`` that is not a list) is kept as an Attempt that reads UNKNOWN
    with the reason and is written back with its text (never dropped, never counted as a failure)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        why = f"failed is a {type(value).__name__}, not a list of attempt rows (stored before schema 0006?"
        return (_kept(value, why + " run sweep-state upgrade)"),)
    return tuple(
        from_row(r) if isinstance(r, Mapping) else _kept(r, "a failed leg row is not an object") for r in value
    )


def _kept(value: object, why: str) -> Attempt:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return from_row({UNREADABLE: why, "entry": text})


@dataclass
class CellState:
    """Durable state of one cell (a row of the state database: sweep_core.state.cells): the leg it
    waits on, its leg jobs, the leg jobs that failed as kernel Attempts (stored as
    ``failed: <leg>:<id>,…``) and its latest recorded hub check (a kernel Attempt of
    ``Act(HUB_CHECK, '', hub repo)``, stored as ``hub``: its ``to_row`` object; kernel.hub); ``from_dict``/``to_dict``
    are the one conversion each way)."""

    leg: str = "sft"  # the leg waiting to complete: sft -> upload -> eval -> done
    sft_job: str = ""
    upload_job: str = ""
    eval_job: str = ""
    note: str = ""
    failed: tuple[Attempt, ...] = ()  # the leg jobs that failed (each counted once), oldest first
    escalated: str = ""  # the leg escalated (told once; a person takes over)
    hub: Attempt | None = None  # the latest recorded hub check of its repo (None = none recorded)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> CellState:
        d = d or {}
        keys = ("sft_job", "upload_job", "eval_job", "note", "escalated")
        return cls(
            **{k: str(d.get(k, "")) for k in keys},
            leg=d.get("leg") or "sft",
            failed=_failed_rows(d.get("failed")),
            hub=from_row(d["hub"]) if "hub" in d else None,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "leg": self.leg,
            "sft_job": self.sft_job,
            "upload_job": self.upload_job,
            "eval_job": self.eval_job,
            "note": self.note,
        }
        if self.failed or self.escalated:
            out |= {"failed": [to_row(a) for a in self.failed], "escalated": self.escalated}
        if self.hub is not None:
            out["hub"] = to_row(self.hub)
        return out

    def failures(self, leg: str) -> list[str]:
        """The failed job ids of ``leg``, oldest first."""
        return [a.job or "" for a in self.failed if a.kind == leg_kind(leg) and a.outcome is Outcome.FAILED]

    def fail(self, leg: str, job: str, cluster: str) -> None:
        """Count ``job`` of ``leg`` (submitted on ``cluster``) as failed (once)."""
        if job not in self.failures(leg):
            n = sum(a.kind == leg_kind(leg) for a in self.failed) + 1
            self.failed = (*self.failed, leg_attempt(leg, n, job, cluster, self.sft_job))


@dataclass
class ClusterView:
    """What one probe said: jobs by name (latest first) from squeue + sacct; None = UNKNOWN."""

    jobs: dict[str, list[tuple[str, str]]] | None  # name -> [(job id, state)]
    problem: str = ""

    def latest(self, name: str) -> tuple[str, str] | None:
        got = (self.jobs or {}).get(name) or []
        return got[0] if got else None


@dataclass
class Step:
    """What advancing one cell decided: an optional submission, a tracker edit, the new state."""

    series: str
    cell: str
    before: str
    state: CellState
    submit: str = ""  # "upload" | "eval": a job to submit this run
    argv: tuple[str, ...] = ()
    tracker_job: str = ""  # write this eval job id into the cell's tracker row
    note: str = ""
    escalated: str = ""  # the leg escalated THIS run (an ESCALATED act, told once)
    failed_job: str = ""  # the leg job whose failure escalated it
    traceback: str = ""  # that job's first real traceback (its log), '' = none found

    def to_dict(self) -> dict[str, Any]:
        return {
            "series": self.series,
            "cell": self.cell,
            "before": self.before,
            "after": self.state.leg,
            "submit": self.submit,
            "argv": list(self.argv),
            "note": self.note,
            "escalated": self.escalated,
            "failed_job": self.failed_job,
            "traceback": self.traceback,
            "state": self.state.to_dict(),
        }


def cell_values(series: Series, cell: str, sft_job: str, org: str, artifact_dir: str) -> dict[str, str]:
    """Template values of one cell; the cell name must be a plain name (it comes from a job name)."""
    check_plain_name(cell, "cell")
    return {
        "cell": cell,
        "sft_job": sft_job,
        "org": org,
        "hub_repo": series.hub_repo.format(org=org, cell=cell),
        "artifact_dir": artifact_dir.format(cell=cell, sft_job=sft_job),
    }


PLACEHOLDERS = Placeholders(("cell", "hub_repo", "sft_job", "org", "artifact_dir"))


def render_argv(template: tuple[str, ...], values: dict[str, str]) -> tuple[str, ...]:
    """Each argv element with its ``{cell}``-style placeholders filled; every other brace (JSON in
    a --wrap command) is left alone. Quoting happens when the script is built."""
    return PLACEHOLDERS.render_argv(template, values)


def completed_cells(series: Series, view: ClusterView) -> dict[str, str]:
    """cell -> the latest COMPLETED SFT job of the series."""
    out: dict[str, str] = {}
    for name, jobs in (view.jobs or {}).items():
        m = series.match.match(name)
        if not m:
            continue
        for job_id, state in jobs:
            if state.split(" ")[0] == "COMPLETED":
                out.setdefault(m.group("cell"), job_id)
                break
    return out


def _failed_leg(
    series: Series, leg: str, job: tuple[str, str], step: Step, values: dict[str, str], tracebacks: dict[str, str]
) -> bool:
    """A leg job that ended without COMPLETED: resubmitted up to ``series.leg_retries`` times with
    its traceback, then ESCALATED once (batch_job.plan.exhausted). True when the step decided."""
    jid, state = job
    if not state or is_live(state) or base_state(state) == "COMPLETED":
        return False
    s = step.state
    s.fail(leg, jid, series.cluster)
    n = len(s.failures(leg))
    tb = tracebacks.get(jid, "")
    said = f"{leg} job {jid} {state}" + (f": {tb}" if tb else "")
    if exhausted(n, series.leg_retries):
        if s.escalated == leg:
            step.note = f"{said}; ESCALATED earlier after {n} failure(s): a person takes over"
        else:
            s.escalated = step.escalated = leg
            step.failed_job, step.traceback = jid, tb
            step.note = f"{said}; ESCALATED after {n} failure(s) (leg_retries {series.leg_retries})"
        return True
    step.submit, step.argv = leg, render_argv(series.upload if leg == "upload" else series.eval, values)
    step.note = f"{said}; {retry_note(n, series.leg_retries)}"
    return True


def kept_hub_check(before: CellState, step: Step, check: Attempt | None) -> Attempt | None:
    """The hub check the cell keeps after ``step``: this run's (``check``, kernel.hub.hub_attempt)
    when its answer changed since the one kept, or when the step was taken on it (the leg moved or
    a leg was submitted); else the one kept (a cell row is rewritten only when its answer changes)."""
    if check is None:
        return before.hub
    moved = step.state.leg != before.leg or bool(step.submit)
    kept = [to_row(before.hub)] if before.hub is not None else []
    return check if worth_recording(kept, check, moved) else before.hub


def advance(
    series: Series,
    cell: str,
    state: CellState,
    view: ClusterView,
    values: dict[str, str],
    hub_ok: bool | None,
    row_status: str | None,
    row_job: str | None,
    tracebacks: dict[str, str] | None = None,
) -> Step:
    """Advance one cell as far as the evidence allows, with at most one submission per run.

    ``hub_ok`` = hub evidence for the upload (None = unknown), ``row_status``/``row_job`` = the
    cell's tracker row (None = no row), ``tracebacks``: leg job id -> the first real traceback of
    its log (a failed leg is retried with it, then escalated)."""
    step = Step(series.name, cell, state.leg, CellState.from_dict(state.to_dict()))
    s = step.state
    if s.leg == "done":
        step.note = "done earlier"
        return step
    if s.leg == "sft":
        s.sft_job = values["sft_job"]
        upload = view.latest(series.upload_name.format(cell=cell))
        if upload:  # submitted before (lost state, or by hand): adopt it, never submit twice
            s.leg, s.upload_job, step.note = "upload", upload[0], f"upload job {upload[0]} ({upload[1]}) adopted"
        elif hub_ok is True:
            s.leg, step.note = "upload", "already on the hub"
        elif not series.upload:  # a found series whose upload is not configured: said, the cell waits
            step.note = f"SFT {s.sft_job} COMPLETED; OFF: upload needs hf_chain.found.upload in sweep.yaml"
            return step
        else:
            step.submit, step.argv, s.leg = "upload", render_argv(series.upload, values), "upload"
            step.note = f"SFT {s.sft_job} COMPLETED -> upload to {values['hub_repo']}"
            return step
    if s.leg == "upload":
        if row_job:  # the tracker already names an eval: leg 2 happened
            s.leg, s.eval_job = "eval", row_job
        elif hub_ok is not True:
            up = view.latest(series.upload_name.format(cell=cell))
            if up and hub_ok is False and _failed_leg(series, "upload", up, step, values, tracebacks or {}):
                return step
            failed = up and up[1].split(" ")[0] not in ("COMPLETED", "RUNNING", "PENDING")
            hub = "UNKNOWN" if hub_ok is None else "not yet"
            msg = f"upload job {up[0]} {up[1]}: flagged" if failed else f"waiting for the upload (hub: {hub})"
            step.note = "; ".join(x for x in (step.note, msg) if x)
            return step
        elif not series.eval:  # a found series: leg 1 only, until a configured series names it
            step.note = "; ".join(
                x
                for x in (
                    step.note,
                    f"{values['hub_repo']} on the hub (no DB registration); "
                    "eval and tracker: name its series in hf_chain.series (match, eval, tracker)",
                )
                if x
            )
            return step
        else:
            ev = view.latest(series.eval_name.format(cell=cell))
            if ev:
                s.leg, s.eval_job, step.tracker_job = "eval", ev[0], ev[0]
                step.note = f"eval job {ev[0]} ({ev[1]}) adopted"
            elif row_status is None:
                step.note = f"no row for cell {cell} in {series.tracker}: eval not launched"
                return step
            else:
                step.submit, step.argv, s.leg = "eval", render_argv(series.eval, values), "eval"
                step.note = f"{values['hub_repo']} on the hub -> standard eval"
                return step
    if s.leg == "eval":
        ev = view.latest(series.eval_name.format(cell=cell))
        if row_status != "done" and ev and _failed_leg(series, "eval", ev, step, values, tracebacks or {}):
            return step
        if row_status == "done":
            s.leg, step.note = "done", "scores recorded in the tracker"
        elif not step.note:
            step.note = f"waiting for the harvest of eval {s.eval_job or row_job}"
    return step


@dataclass
class ChainRun:
    steps: list[Step] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
