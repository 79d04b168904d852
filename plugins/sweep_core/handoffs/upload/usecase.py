"""sweep_cleanup's upload step as a use-case: after the plan, follow every job whose hub check said
missing (or that has an upload or a salvage in flight): ONE track session per cluster (``sacct -j``
for every upload in flight, the tails of failed ones), then the moves of upload.plan.next_move, the
submissions in ONE session per cluster, each claimed in the ledger first (given once per attempt,
whatever runs overlap). A submission sent whose answer was lost (the session dropped, the reader
timed out) is recorded UNKNOWN with its claim kept, never sent again blind: the next run finds it
by its job name in sacct (``find``) and follows that job, or, when sacct shows none submitted
after the claim, records it unsent and frees the attempt. Nothing is submitted on a dry run. Its
I/O comes in as arguments.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from sweep_core.config.handoffs_schema import CleanupSection
from sweep_core.config.schema_base import section
from sweep_core.fanin.render import box_table
from sweep_core.handoffs.batch_job import usecase as batch
from sweep_core.handoffs.batch_job.plan import Found, Outcome, job_name_of, reconcile
from sweep_core.handoffs.batch_job.remote import build_find_script, build_track_script, read_find, submit_line
from sweep_core.handoffs.cleanup.plan import CleanupConfig, CleanupDecision, CleanupTarget, hub_repo_id
from sweep_core.handoffs.kernel.act import Act, ActKind
from sweep_core.handoffs.kernel.attempt import Record, stored, to_row
from sweep_core.handoffs.ports import LoadCluster, RunScript, Say, active_slurm
from sweep_core.handoffs.upload.plan import (
    GAVE_UP,
    UNKNOWN,
    UNSENT,
    UPLOAD,
    UPLOAD_STATE,
    Move,
    UploadConfigError,
    check_argv,
    next_move,
    own_revision,
    render,
    still_open,
    story_of,
    submit_argv,
    tracked,
    upload_argv,
)
from sweep_core.handoffs.upload.remote import read_upload_track
from sweep_core.ledger.acts import acts_of
from sweep_core.ledger.store import read_jobs
from sweep_core.slurm.gather import new_marker


@dataclass(frozen=True)
class UploadSettings:
    """sweep.yaml ``cleanup:``'s upload keys: each flavor's argv, the retries, the log, the tail."""

    flavors: dict[str, tuple[str, ...]]
    retries: int
    log: str
    tail_bytes: int


def upload_settings(raw: CleanupSection | dict[str, Any] | None) -> UploadSettings:
    sect = section(CleanupSection, raw, "cleanup", UploadConfigError)
    flavors = {n: check_argv(f.upload, f"cleanup.flavors.{n}.upload") for n, f in sect.flavors.items()}
    return UploadSettings(flavors, sect.upload_retries, sect.upload_log, sect.upload_tail_bytes)


@dataclass
class _Job:
    d: CleanupDecision
    story: Record
    hub: str
    move: Move = Move("none", "")
    argv: tuple[str, ...] = ()
    log: str = ""
    upload_job: str = ""
    state: str = ""
    outcome: str = ""
    hub_repo: str = ""

    @property
    def key(self) -> dict[str, str]:
        return self.d.target.entry


@dataclass
class JobsReport:
    """A row per job a cleanup step followed, and the acts this run recorded (its table's columns
    and widths are the subclass's)."""

    rows: list[list[str]] = field(default_factory=list)
    acts: list[tuple[str, str, str, dict[str, str]]] = field(default_factory=list)
    COLUMNS: ClassVar[tuple[str, ...]] = ()
    WIDTHS: ClassVar[tuple[int | None, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "acts": [list(a) for a in self.acts]}

    def table(self) -> str:
        return box_table(list(self.COLUMNS), self.rows, list(self.WIDTHS)) if self.rows else ""


@dataclass
class UploadReport(JobsReport):
    """A row per followed job, and the acts this run recorded."""

    COLUMNS: ClassVar[tuple[str, ...]] = ("Cluster", "Job", "Name", "Upload for", "Upload job", "State", "Outcome")
    WIDTHS: ClassVar[tuple[int | None, ...]] = (None, None, 40, None, None, None, 80)


def hub_status(d: CleanupDecision) -> str:
    """ok | missing | unknown | n/a (the hub was not asked: blocked before it, or trees gone), of
    what an upload writes: an artifact no upload of the job writes (``not_own``) never re-uploads."""
    if d.action == "delete":
        return "ok"
    hub = [h for h in d.hub if not h.get("not_own")]
    if not hub:
        return "n/a"
    if any(h.get("ok") is None for h in hub):
        return "unknown"
    return "missing" if any(h.get("ok") is False for h in hub) else "ok"


def _values(j: _Job, cfg: Any, ccfg: CleanupConfig) -> dict[str, str]:
    return job_values(j.d.target, cfg, ccfg, (j.story.salvage or {}).get("step", ""))


def job_values(t: CleanupTarget, cfg: Any, ccfg: CleanupConfig, step: str = "") -> dict[str, str]:
    """The upload placeholders of one job (safe_names.UPLOAD_PLACEHOLDERS): also the DB registration's."""
    root = cfg.artifact_roots[0].rstrip("/") if cfg.artifact_roots else ""
    spec = ccfg.flavors.get(t.flavor)
    hub = hub_repo_id(spec.hub[0], t, ccfg.hub_org) if spec and spec.hub else ""
    return {
        "name": t.name,
        "job_id": t.job_id,
        "cluster": t.cluster,
        "root": root,
        "org": ccfg.hub_org,
        "hub_repo": hub,
        "artifact_dir": ccfg.artifact_dir.format(root=root, name=t.name, job_id=t.array_id),
        "step": step,
    }


def _track(cluster: str, jobs: list[_Job], cfg: Any, us: UploadSettings, run_script: RunScript, now: str) -> list:
    """ONE session: the states of this cluster's uploads in flight; state acts for what changed."""
    flying = {tracked(j.story): j for j in jobs if tracked(j.story)}
    if not flying:
        return []
    logs = {jid: j.story.last.get("log", "") for jid, j in flying.items() if j.story.last}
    repos = {jid: j.story.last.get("hub_repo", "") for jid, j in flying.items() if j.story.last}
    marker = new_marker()
    out, problem = run_script(cfg, build_track_script(logs, marker, us.tail_bytes), marker, "upload track")
    acts = []
    for jid, up in read_upload_track(out, sorted(flying), problem, repos).items():
        j, st = flying[jid], up.tracked
        if st.problem or not st.state:
            continue
        if j.story.state_of(jid) == st.state:
            continue
        act = {"kind": UPLOAD_STATE, "upload_job": jid, "state": st.state, "at": now}
        if st.traceback:
            act["why"] = st.traceback
        if up.revision:
            act["revision"] = up.revision
        j.story = j.story.plus([act])
        acts.append((cluster, j.d.target.job_id, j.d.target.name, act))
    return acts


def _unchecked_commit(j: _Job) -> Move | None:
    """A wait when the last upload COMPLETED with a commit the plan did not ask the hub for yet
    (its state was read after the plan): that commit is checked next run, never re-uploaded."""
    rev = own_revision(j.story)
    last = j.story.last
    if j.hub != "missing" or not rev or last is None:
        return None
    if any(h.get("revision") == rev for h in j.d.hub):
        return None
    return Move(
        "wait", f"upload job {last['upload_job']} COMPLETED with commit {rev[:12]}: checked on the hub next run"
    )


def _find_unknown(cluster: str, jobs: list[_Job], cfg: Any, run_script: RunScript, now: str, clock: float) -> list:
    """ONE session: the upload job each UNKNOWN submission became (by its job name, submitted after
    its claim, not an attempt the ledger knows); acts for what was found. A job whose submission
    sacct shows never ran gets ``upload_unsent`` (its attempt claim is released by the caller)."""
    lost = [j for j in jobs if j.story.unknown is not None and j.story.unknown.get("job_name")]
    if not lost:
        return []
    marker = new_marker()
    script = build_find_script(cfg.user, [j.story.unknown["job_name"] for j in lost], marker)  # type: ignore[index]
    found, why = read_find(*run_script(cfg, script, marker, "upload find"))
    acts = []
    for j in lost:
        u = to_row(j.story.unknown) if j.story.unknown is not None else {}
        t = j.d.target
        if found is None:
            j.story = replace(j.story, note=f"sacct not read ({why[:160]}): asked again next run")
            continue
        known = {a["upload_job"] for a in j.story.sent}
        claimed = float(u["claimed_at"]) if u.get("claimed_at") else None
        got = reconcile([(f.job_id, f.submit, f.name) for f in found], u["job_name"], claimed, known, clock)
        if got.verdict is Found.FOUND:
            act = {**u, "upload_job": got.job_id, "log": u.get("log", "").replace("%j", got.job_id), "at": now}
            act.pop("outcome", None)
            act["found"] = f"outcome was UNKNOWN ({u.get('why', '')[:120]}); found by its job name in sacct"
        elif got.verdict is Found.UNSENT:
            act = {"kind": UNSENT, "attempt": u.get("attempt", ""), "at": now, "why": got.note}
        else:
            j.story = replace(j.story, note=got.note)
            continue
        j.story = j.story.plus([act])  # a sent attempt or an unsent mark: the UNKNOWN one is settled
        acts.append((cluster, t.job_id, t.name, act))
    return acts


def _unknown_act(j: _Job, run_id: str, now: str, claimed_at: float, why: str) -> dict[str, str]:
    """A submission whose answer is not known: found by its job name in sacct next run, never sent again."""
    return stored(
        {
            "kind": UPLOAD,
            "upload_job": "",
            "outcome": UNKNOWN,
            "job_name": job_name_of(j.argv),
            "claimed_at": f"{claimed_at:.0f}",
            "log": j.log,
            "attempt": str(j.move.attempt),
            "flavor": j.d.target.flavor,
            "run": run_id,
            "at": now,
            "why": why,
        },
        _sbatch(j),
    )


def _sbatch(j: _Job) -> Act:
    """The act of an upload's submission: an sbatch for its entry's job."""
    return Act(ActKind.SBATCH, j.d.target.cluster, j.d.target.job_id)


def _in_flight(j: _Job, run_id: str, now: str, claimed_at: float) -> dict[str, str]:
    """The act a claimed submission holds until its answer is recorded (a task that dies mid-act
    never records the answer; its retry finds the job by name, never sends it again)."""
    why = f"claimed by {run_id}, its answer never recorded (the task ended mid-act: its worker lost?)"
    return _unknown_act(j, run_id, now, claimed_at, why)


def _claim(ledger_dir: str | Path, todo: list[_Job], run_id: str, now: str) -> list[tuple[_Job, dict[str, str]]]:
    """The submissions this run may make, each with its in-flight act: each (job, attempt) claimed
    once (batch_job.usecase.claim), its in-flight act recorded in the same transaction."""
    clock = time.time()
    flight = [_in_flight(j, run_id, now, clock) for j in todo]
    mine = []
    for j, act, by in zip(
        todo,
        flight,
        batch.claim(ledger_dir, UPLOAD, [(j.key, j.move.attempt) for j in todo], run_id, flight),
        strict=True,
    ):
        if by:
            j.outcome = f"attempt {j.move.attempt} already submitted by {by}"
        else:
            mine.append((j, act))
    return mine


def _key(act: tuple[str, str, str, dict[str, str]]) -> dict[str, str]:
    return {"cluster": act[0], "job_id": act[1], "name": act[2]}


def _submit(cfg: Any, jobs: list[_Job], run_script: RunScript, now: str, run_id: str) -> tuple[list, list[_Job]]:
    """ONE session submits every upload of a cluster; (acts, the jobs surely not submitted). A
    submission whose outcome is unknown keeps its claim and is recorded UNKNOWN (module docstring)."""
    subs, claimed_at = batch.submit(cfg, [j.argv for j in jobs], run_script, "upload submit")
    acts, failed = [], []
    for j, sub in zip(jobs, subs, strict=True):
        t = j.d.target
        common = {
            "attempt": str(j.move.attempt),
            "step": (j.story.salvage or {}).get("step", ""),
            "flavor": t.flavor,
            "command": submit_line(j.argv),
            "run": run_id,
            "at": now,
        }
        if sub.outcome is Outcome.UNKNOWN:
            j.state, j.outcome = UNKNOWN, f"{j.move.why}; submission {sub.why}"
            act = {**_unknown_act(j, run_id, now, claimed_at, sub.session[:300]), **common}
        elif sub.outcome is not Outcome.SUBMITTED:
            j.outcome = f"{j.move.why}; submission FAILED: {sub.why}"
            failed.append(j)
            continue
        else:
            j.upload_job, j.state = sub.job_id, "submitted"
            j.outcome = f"{j.move.why}: job {sub.job_id}"
            act = {"kind": UPLOAD, "upload_job": sub.job_id, "log": j.log.replace("%j", sub.job_id), **common}
            act = stored(act | {"hub_repo": j.hub_repo}, _sbatch(j))
        acts.append((t.cluster, t.job_id, t.name, act))
    return acts, failed


def run_uploads(
    decisions: Sequence[CleanupDecision],
    *,
    us: UploadSettings,
    ccfg: CleanupConfig,
    ledger_dir: str | Path,
    run_id: str,
    now: str,
    dry_run: bool,
    load_cluster: LoadCluster,
    run_script: RunScript,
    say: Say,
) -> UploadReport:
    """Follow, submit and record every upload the plan's decisions call for (module docstring)."""
    ledger = read_jobs(ledger_dir, {f"{d.target.cluster}|{d.target.job_id}" for d in decisions})  # their rows alone
    report = UploadReport()
    by_cluster: dict[str, list[_Job]] = defaultdict(list)
    for d in decisions:
        t = d.target
        story = story_of(acts_of(ledger, t.cluster, t.job_id))
        hub = hub_status(d)
        if hub == "missing" or still_open(story):
            by_cluster[t.cluster].append(_Job(d, story, hub))
    for cluster, jobs in sorted(by_cluster.items()):
        cfg, why = active_slurm(load_cluster, cluster, "no upload job")
        if cfg is None:
            for j in jobs:
                report.rows.append(_row(j, why))
            continue
        if not dry_run:
            report.acts += _track(cluster, jobs, cfg, us, run_script, now)
            found = _find_unknown(cluster, jobs, cfg, run_script, now, time.time())
            report.acts += found
            batch.release(ledger_dir, UPLOAD, [(_key(a), a[3]["attempt"]) for a in found if a[3]["kind"] == UNSENT])
        todo = []
        for j in jobs:
            t = j.d.target
            try:
                argv = upload_argv(t.flavor, us.flavors.get(t.flavor, ()), cfg.upload_commands)
            except UploadConfigError as exc:
                j.outcome = str(exc)
                continue
            j.move = next_move(j.story, j.hub, us.retries, bool(argv))
            j.move = _unchecked_commit(j) or j.move
            if j.move.move == "submit" and j.story.salvage is not None and not j.story.sent:
                step = j.story.salvage.get("step") or "?"
                j.move = Move("submit", f"salvage of step {step} (cancelled at a collapse): upload submitted", 1)
            last = j.story.last
            if last is not None:
                j.upload_job, j.state = last["upload_job"], j.story.state_of(last["upload_job"]) or "submitted"
            j.outcome = j.move.why
            act: dict[str, str] | None = None
            if j.move.move == "verified" and last is not None:
                act = {"kind": UPLOAD_STATE, "upload_job": last["upload_job"], "state": "VERIFIED", "at": now}
                j.state = "VERIFIED"
            elif j.move.move == "give-up":
                act = {"kind": GAVE_UP, "why": j.move.why, "at": now}
            elif j.move.move == "submit":
                values = _values(j, cfg, ccfg)
                j.hub_repo = values["hub_repo"]
                j.log = render(us.log, values)
                j.argv = submit_argv(argv, values, j.log)
                if dry_run:
                    j.outcome = f"{j.move.why} (dry run: would submit {submit_line(j.argv)})"
                    say(f"DRY RUN: would submit on {cluster} for {t.job_id} {t.name}: {submit_line(j.argv)}")
                else:
                    todo.append(j)
            if act is not None and not dry_run:
                report.acts.append((cluster, t.job_id, t.name, act))
        if todo:
            mine = _claim(ledger_dir, todo, run_id, now)
            if mine:
                acts, failed = _submit(cfg, [j for j, _ in mine], run_script, now, run_id)
                report.acts += acts
                # the answers replace the in-flight acts; a surely-unsent submission frees its attempt
                release = [(j.key, j.move.attempt) for j in failed]
                batch.settle(ledger_dir, [(j.key, act) for j, act in mine], acts, UPLOAD, release)
        report.rows += [_row(j) for j in jobs]
    return report


def _row(j: _Job, why: str = "") -> list[str]:
    t = j.d.target
    salvage = j.story.salvage
    what = f"salvage step {salvage.get('step') or '?'}" if salvage else "completion"
    return [t.cluster, t.job_id, t.name, what, j.upload_job or "-", j.state or "-", why or j.outcome]
