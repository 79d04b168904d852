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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep_core.config.handoffs_schema import CleanupSection
from sweep_core.config.schema_base import section
from sweep_core.fanin.render import box_table
from sweep_core.handoffs.cleanup.plan import CleanupConfig, CleanupDecision, hub_repo_id
from sweep_core.handoffs.ports import LoadCluster, RunScript, Say, active_slurm
from sweep_core.handoffs.upload.plan import (
    GAVE_UP,
    UNKNOWN,
    UNSENT,
    UPLOAD,
    UPLOAD_STATE,
    Move,
    Story,
    UploadConfigError,
    check_argv,
    job_name_of,
    next_move,
    own_revision,
    render,
    story_of,
    submit_argv,
    tracked,
    upload_argv,
)
from sweep_core.handoffs.upload.remote import (
    build_find_script,
    build_submit_script,
    build_track_script,
    read_find,
    read_submit,
    read_track,
    submit_line,
)
from sweep_core.ledger.acts import acts_of
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.given import given_by, mark_given, release_given
from sweep_core.ledger.store import load_ledger, update_ledger
from sweep_core.slurm.failover import outcome_unknown
from sweep_core.slurm.gather import new_marker

# An UNKNOWN submission that sacct has not listed this long after its claim never ran.
UNSENT_AFTER_S = 120
# How far before its claim (clock skew between here and the cluster) its job may have been submitted.
CLOCK_SLACK_S = 300


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
    story: Story
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
        t = self.d.target
        return {"cluster": t.cluster, "job_id": t.job_id, "name": t.name}


@dataclass
class UploadReport:
    """A row per followed job, and the acts this run recorded."""

    rows: list[list[str]] = field(default_factory=list)
    acts: list[tuple[str, str, str, dict[str, str]]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "acts": [list(a) for a in self.acts]}

    def table(self) -> str:
        if not self.rows:
            return ""
        return box_table(
            ["Cluster", "Job", "Name", "Upload for", "Upload job", "State", "Outcome"],
            self.rows,
            [None, None, 40, None, None, None, 80],
        )


def hub_status(d: CleanupDecision) -> str:
    """ok | missing | unknown | n/a (the hub was not asked: blocked before it, or trees gone)."""
    if d.action == "delete":
        return "ok"
    if not d.hub:
        return "n/a"
    if any(h.get("ok") is None for h in d.hub):
        return "unknown"
    return "missing" if any(h.get("ok") is False for h in d.hub) else "ok"


def _values(j: _Job, cfg: Any, ccfg: CleanupConfig) -> dict[str, str]:
    t = j.d.target
    root = cfg.artifact_roots[0].rstrip("/") if cfg.artifact_roots else ""
    spec = ccfg.flavors.get(t.flavor)
    hub = hub_repo_id(spec.hub[0], t, ccfg.hub_org) if spec and spec.hub else ""
    step = (j.story.salvage or {}).get("step", "")
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
    for jid, st in read_track(out, sorted(flying), problem, repos).items():
        j = flying[jid]
        if st.problem or not st.state:
            continue
        if j.story.state_of(jid) == st.state:
            continue
        act = {"kind": UPLOAD_STATE, "upload_job": jid, "state": st.state, "at": now}
        if st.traceback:
            act["why"] = st.traceback
        if st.revision:
            act["revision"] = st.revision
        j.story.states[jid] = act
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
        u = j.story.unknown or {}
        t = j.d.target
        if found is None:
            j.story.unknown = {**u, "note": f"sacct not read ({why[:160]}): asked again next run"}
            continue
        known = {a["upload_job"] for a in j.story.attempts}
        since = float(u.get("claimed_at") or 0) - CLOCK_SLACK_S
        mine = [f for f in found if f.name == u["job_name"] and f.submit >= since and f.job_id not in known]
        if len(mine) == 1:
            f = mine[0]
            act = {**u, "upload_job": f.job_id, "log": u.get("log", "").replace("%j", f.job_id), "at": now}
            act.pop("outcome", None)
            act["found"] = f"outcome was UNKNOWN ({u.get('why', '')[:120]}); found by its job name in sacct"
        elif not mine and clock - float(u.get("claimed_at") or clock) > UNSENT_AFTER_S:
            act = {"kind": UNSENT, "attempt": u.get("attempt", ""), "at": now, "why": "sacct lists no such job"}
        else:
            ids = ", ".join(f.job_id for f in mine)
            note = f"sacct lists {ids}: a person decides which" if ids else "sacct lists none yet: asked again next run"
            j.story.unknown = {**u, "note": note}
            continue
        if act["kind"] == UPLOAD:
            j.story.attempts.append(act)
        j.story.unknown = None
        acts.append((cluster, t.job_id, t.name, act))
    return acts


def _claim(ledger_dir: str | Path, todo: list[_Job], run_id: str) -> list[_Job]:
    """The submissions this run may make: each (job, attempt) given once, under the ledger lock."""

    def change(ledger: Ledger) -> tuple[Ledger, list[_Job]]:
        mine = []
        for j in todo:
            kind = f"{UPLOAD}#{j.move.attempt}"
            by = given_by(ledger, kind, j.key)
            if by and by != run_id:
                j.outcome = f"attempt {j.move.attempt} already submitted by {by}"
                continue
            mark_given(ledger, kind, [j.key], run_id)
            mine.append(j)
        return ledger, mine

    return update_ledger(ledger_dir, change)


def _key(act: tuple[str, str, str, dict[str, str]]) -> dict[str, str]:
    return {"cluster": act[0], "job_id": act[1], "name": act[2]}


def _release_attempts(ledger_dir: str | Path, items: list[tuple[dict[str, str], str]]) -> None:
    """Free each (job, attempt) claim: sacct showed its UNKNOWN submission never ran."""

    def change(ledger: Ledger) -> tuple[Ledger, None]:
        for key, attempt in items:
            release_given(ledger, f"{UPLOAD}#{attempt}", [key])
        return ledger, None

    if items:
        update_ledger(ledger_dir, change)


def _release(ledger_dir: str | Path, failed: list[_Job]) -> None:
    def change(ledger: Ledger) -> tuple[Ledger, None]:
        for j in failed:
            release_given(ledger, f"{UPLOAD}#{j.move.attempt}", [j.key])
        return ledger, None

    if failed:
        update_ledger(ledger_dir, change)


def _submit(cfg: Any, jobs: list[_Job], run_script: RunScript, now: str, run_id: str) -> tuple[list, list[_Job]]:
    """ONE session submits every upload of a cluster; (acts, the jobs surely not submitted). A
    submission whose outcome is unknown keeps its claim and is recorded UNKNOWN (module docstring)."""
    marker = new_marker()
    claimed_at = time.time()
    out, problem = run_script(cfg, build_submit_script([j.argv for j in jobs], marker), marker, "upload submit")
    acts, failed = [], []
    for j, (jid, why) in zip(jobs, read_submit(out, len(jobs), problem), strict=True):
        if not jid and outcome_unknown(problem) and why.startswith(UNKNOWN):
            j.state, j.outcome = UNKNOWN, f"{j.move.why}; submission {why}"
            act = {
                "kind": UPLOAD,
                "upload_job": "",
                "outcome": UNKNOWN,
                "attempt": str(j.move.attempt),
                "job_name": job_name_of(j.argv),
                "claimed_at": f"{claimed_at:.0f}",
                "log": j.log,
                "step": (j.story.salvage or {}).get("step", ""),
                "flavor": j.d.target.flavor,
                "command": submit_line(j.argv),
                "why": problem[:300],
                "run": run_id,
                "at": now,
            }
            acts.append((j.d.target.cluster, j.d.target.job_id, j.d.target.name, act))
            continue
        if not jid:
            j.outcome = f"{j.move.why}; submission FAILED: {why}"
            failed.append(j)
            continue
        j.upload_job, j.state = jid, "submitted"
        j.outcome = f"{j.move.why}: job {jid}"
        act = {
            "kind": UPLOAD,
            "upload_job": jid,
            "attempt": str(j.move.attempt),
            "log": j.log.replace("%j", jid),
            "step": (j.story.salvage or {}).get("step", ""),
            "flavor": j.d.target.flavor,
            "hub_repo": j.hub_repo,
            "command": submit_line(j.argv),
            "run": run_id,
            "at": now,
        }
        acts.append((j.d.target.cluster, j.d.target.job_id, j.d.target.name, act))
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
    ledger = load_ledger(ledger_dir)
    report = UploadReport()
    by_cluster: dict[str, list[_Job]] = defaultdict(list)
    for d in decisions:
        t = d.target
        story = story_of(acts_of(ledger, t.cluster, t.job_id))
        hub = hub_status(d)
        if hub == "missing" or story.open:
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
            _release_attempts(ledger_dir, [(_key(a), a[3]["attempt"]) for a in found if a[3]["kind"] == UNSENT])
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
            if j.move.move == "submit" and j.story.salvage is not None and not j.story.attempts:
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
            mine = _claim(ledger_dir, todo, run_id)
            if mine:
                acts, failed = _submit(cfg, mine, run_script, now, run_id)
                report.acts += acts
                _release(ledger_dir, failed)
        report.rows += [_row(j) for j in jobs]
    return report


def _row(j: _Job, why: str = "") -> list[str]:
    t = j.d.target
    salvage = j.story.salvage
    what = f"salvage step {salvage.get('step') or '?'}" if salvage else "completion"
    return [t.cluster, t.job_id, t.name, what, j.upload_job or "-", j.state or "-", why or j.outcome]
