"""sweep_cleanup's consolidate step as a use-case: for every datagen array handed to cleanup (and
every consolidation the ledger still tracks), one read-only probe per cluster, the hub asked,
consolidation.plan.decide per array; then (not on a dry run) the submissions in ONE session per
cluster (reserved in the ledger first), the tracker rows advanced and committed in the local
clone, the acts recorded. Which targets cleanup may delete comes out as ``release``.
Its I/O comes in as arguments (handoffs.ports).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep_core.config.consolidate_schema import ConsolidateSection
from sweep_core.fanin.render import box_table
from sweep_core.fanin.report import write_run_log
from sweep_core.handoffs.batch_job import usecase as batch
from sweep_core.handoffs.batch_job.plan import Outcome
from sweep_core.handoffs.batch_job.remote import log_path
from sweep_core.handoffs.cleanup.plan import CleanupConfig, CleanupTarget, candidate_paths, hub_repo_id
from sweep_core.handoffs.cleanup.view import Hold
from sweep_core.handoffs.consolidate import tracker as datagen_tracker
from sweep_core.handoffs.consolidate.history import (
    KINDS,
    ConsolidateAct,
    drop_reservation,
    fill_reservation,
    history_of,
    open_consolidations,
    record,
    reserve,
)
from sweep_core.handoffs.consolidate.plan import Step, decide, job_name
from sweep_core.handoffs.consolidate.remote import (
    ConsolidateProbe,
    build_probe_script,
    read_consolidate_probe,
)
from sweep_core.handoffs.harvest.clone_path import OutsideClone, clone_file
from sweep_core.handoffs.harvest.commit import commit_tracker_files
from sweep_core.handoffs.harvest.plan import TrackerSettings
from sweep_core.handoffs.harvest.tracker_md import TrackerError
from sweep_core.handoffs.kernel.attempt import Attempt, to_row
from sweep_core.handoffs.kernel.hub import hub_attempt, hub_result, worth_recording
from sweep_core.handoffs.ports import CommitFiles, HubCheck, LoadCluster, RunScript, Say, active_slurm
from sweep_core.handoffs.upload.plan import commit_of
from sweep_core.ledger.acts import acts_of
from sweep_core.ledger.store import read_acted, read_jobs
from sweep_core.slurm.gather import new_marker
from sweep_core.timing.window import now_iso


@dataclass
class _Run:
    ccfg: CleanupConfig
    cons: ConsolidateSection
    trackers: TrackerSettings | None
    dry_run: bool
    run_id: str
    run_log_dir: str  # the state's space as every task names it (a path or an s3:// URL: never Path()-mangled)
    run_script: RunScript
    hub_check: HubCheck
    say: Say
    commit: CommitFiles = commit_tracker_files
    steps: list[Step] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def consolidate_targets(jobs: list[Any], ccfg: CleanupConfig, cons: ConsolidateSection, tracked: list[dict[str, str]]):
    """The requested cleanup targets whose flavor has a consolidate command, then the tracked
    consolidations not requested; one per (cluster, array id)."""
    out: dict[tuple[str, str], CleanupTarget] = {}
    for raw in [*jobs, *tracked]:
        try:
            t = CleanupTarget.from_dict(raw)
        except (ValueError, TypeError, AttributeError):
            continue  # the cleanup plan reports a malformed entry
        spec = ccfg.flavors.get(t.flavor)
        if t.flavor in cons.flavors and spec is not None and spec.all_chunks:
            out.setdefault((t.cluster, t.array_id), t)
    return list(out.values())


def _hub(run: _Run, t: CleanupTarget, job: str, tail: str) -> tuple[bool | None, str, list[Attempt]]:
    """Every hub repo of the flavor holds its files: True; False/None (UNKNOWN) with the reasons;
    and each check the hub was asked, as a kernel hub attempt (kernel.hub).
    The first repo (the one the consolidate job writes) is asked for the commit the job's log
    names, never by its name alone: a reused datagen name finds an earlier dataset there."""
    oks, why, checks = [], [], []
    for k, art in enumerate(run.ccfg.flavors[t.flavor].hub):
        repo = hub_repo_id(art, t, run.ccfg.hub_org)
        rev = commit_of(tail, repo) if k == 0 else "main"
        if not rev:
            oks.append(False)
            why.append(
                f"{art.repo_type} {repo}: the log of consolidate job {job} names no commit to it: "
                "a dataset of the same name is not this array's"
            )
            continue
        ev = run.hub_check(repo, art.repo_type, list(art.expected), revision=rev)
        oks.append(ev.ok)
        why.append(f"{art.repo_type} {repo}{f' at its commit {rev[:12]}' if k == 0 else ''}: {ev.reason}")
        checks.append(hub_attempt(repo, hub_result(ev), run=run.run_id, at=now_iso(), why=f"consolidate job {job}"))
    ok = False if False in oks else (None if None in oks else True)
    return ok, "; ".join(why), checks


def _failed_act(step: Step) -> dict[str, str]:
    return {"kind": ConsolidateAct.FAILED.value, "job": step.job, "state": step.state, "traceback": step.traceback}


def _plan_cluster(cluster: str, targets: list[CleanupTarget], run: _Run, load_cluster: LoadCluster) -> None:
    cfg, why = active_slurm(load_cluster, cluster, "no chunk trees to consolidate")
    if cfg is None:
        run.steps += [Step(t, "blocked", [why]) for t in targets]
        return
    ledger = read_jobs(run.run_log_dir, {f"{t.cluster}|{t.array_id}" for t in targets})  # their rows alone
    hist = {t: history_of(ledger, t.cluster, t.array_id) for t in targets}
    dirs: dict[CleanupTarget, list[str]] = {}
    for t in list(targets):
        try:
            dirs[t] = candidate_paths(t, run.ccfg.flavors[t.flavor], cfg.artifact_roots, run.ccfg)
        except ValueError as exc:
            run.steps.append(Step(t, "blocked", [str(exc)]))
    if not dirs:
        return
    cons_ids = [hist[t].latest_job for t in dirs if hist[t].latest_job.isdigit()]
    names = {hist[t].latest_job: job_name(run.cons.flavors[t.flavor], t) for t in dirs}
    req = ConsolidateProbe(
        cfg.user,
        sorted({t.array_id for t in dirs}),
        [p for ps in dirs.values() for p in ps],
        cons_ids,
        [log_path(cfg.log_pattern, j, names[j], cfg.user) for j in cons_ids],
        run.cons.lookback_days,
        run.cons.tail_bytes,
    )
    marker = new_marker()
    out, problem = run.run_script(cfg, build_probe_script(req, marker), marker, "consolidate probe")
    if out is None or problem:
        run.steps += [Step(t, "blocked", [f"{cluster}: {problem}: nothing submitted"]) for t in dirs]
        return
    probe = read_consolidate_probe(out, req)
    seen: list[tuple[str, str, str, dict[str, str]]] = []  # the hub checks stored on their arrays
    for t, paths in dirs.items():
        cmd = run.cons.flavors[t.flavor]
        found = [p for p in paths if p in probe.dirs]
        root = next(
            (r.rstrip("/") for r in cfg.artifact_roots if found and found[0].startswith(r.rstrip("/") + "/")), ""
        )
        h = hist[t]
        in_flight = bool(h.latest_job) and h.failed(h.latest_job) is None
        busy = h.done is not None or h.gave_up or not probe.state.squeue_ok or not probe.state.sacct_ok
        # the hub is asked only for a tracked job's own commit (never to skip a consolidation)
        tail = probe.tails.get(h.latest_job, "")
        hub_ok, hub_why, checks = (None, "not asked", []) if busy or not in_flight else _hub(run, t, h.latest_job, tail)
        values = {
            "name": t.name,
            "job_id": t.array_id,
            "cluster": t.cluster,
            "root": root,
            "org": run.ccfg.hub_org,
            "job_name": job_name(cmd, t),
        }
        step = decide(t, run.ccfg.flavors[t.flavor], cmd, probe.state, h, root, hub_ok, hub_why, values, tail)
        if step.action == "failed":
            if not tail and h.latest_job in probe.tail_problems:
                step.reasons.append(probe.tail_problems[h.latest_job])
            failed = step
            acts = [_failed_act(step)]
            again = decide(
                t,
                run.ccfg.flavors[t.flavor],
                cmd,
                probe.state,
                h.plus(acts),
                root,
                hub_ok,
                hub_why,
                values,
            )
            if again.action == "gave-up":
                acts.append({"kind": ConsolidateAct.GAVE_UP.value, "job": failed.job})
            if not run.dry_run:
                record(run.run_log_dir, [(t.cluster, t.array_id, t.name, a) for a in acts])
            step = again
            step.job, step.state, step.traceback = failed.job, failed.state, failed.traceback
            step.reasons = failed.reasons + step.reasons
        run.steps.append(step)
        past = acts_of(ledger, t.cluster, t.array_id)  # a check is kept when it changed or the array advances on it
        seen += [
            (t.cluster, t.array_id, t.name, to_row(c))
            for c in checks
            if worth_recording(past, c, step.action == "advance")
        ]
    if seen and not run.dry_run:
        record(run.run_log_dir, seen)
    _submit(cluster, cfg, [s for s in run.steps if s.action == "submit" and s.target.cluster == cluster], run)


def _submit(cluster: str, cfg: Any, steps: list[Step], run: _Run) -> None:
    """Reserve each submission in the ledger, then ONE session submits them all (dry run: say so)."""
    if run.dry_run:
        for s in steps:
            s.action = "would submit"
            run.say(
                f"DRY RUN: {cluster}: would submit consolidate for {s.target.name} ({s.target.array_id}): {' '.join(s.argv)}"
            )
        return
    mine = []
    for s in steps:
        attempt = reserve(run.run_log_dir, s.target, run.run_id)
        if not attempt:
            s.action = "blocked"
            s.reasons.append("another run submitted (or reserved) this consolidation meanwhile: not submitted twice")
            continue
        s.attempt = attempt
        mine.append(s)
    if not mine:
        return
    subs, _ = batch.submit(cfg, [s.argv for s in mine], run.run_script, "consolidate submit")
    for s, sub in zip(mine, subs, strict=True):
        t = s.target
        if sub.outcome is Outcome.SUBMITTED:
            fill_reservation(run.run_log_dir, t.cluster, t.array_id, s.attempt, sub.job_id, "")
            s.action, s.job = "submitted", sub.job_id
            s.reasons.append(f"submitted consolidate job {sub.job_id} (attempt {s.attempt})")
        elif sub.outcome is Outcome.REFUSED:  # sbatch answered and refused: nothing runs, a failed attempt
            why = sub.answer
            fake = f"sbatch-refused-{s.attempt}"
            fill_reservation(run.run_log_dir, t.cluster, t.array_id, s.attempt, fake, why)
            refused = {"kind": ConsolidateAct.FAILED.value, "job": fake, "state": "SBATCH_REFUSED", "traceback": why}
            record(run.run_log_dir, [(t.cluster, t.array_id, t.name, refused)])
            s.action = "failed"
            s.reasons.append(f"sbatch refused the consolidate job: {why}")
        elif sub.outcome is Outcome.NOT_SENT:  # nothing was sent (unreachable, held): freed
            drop_reservation(run.run_log_dir, t.cluster, t.array_id, s.attempt)
            s.action = "blocked"
            s.reasons.append(f"not submitted: {sub.session or 'no login node took the script'}")
        else:  # the session died: whether sbatch ran is unknown, the reservation stays
            fill_reservation(run.run_log_dir, t.cluster, t.array_id, s.attempt, "", sub.session or "no record")
            s.action = "blocked"
            s.reasons.append(f"submission outcome unknown ({sub.session or 'no record'}): never resubmitted by itself")


def _advance(run: _Run) -> None:
    """The tracker row of every array whose consolidation is complete, one commit; then the acts."""
    todo = [s for s in run.steps if s.action == "advance"]
    if not todo:
        return
    path, refused = None, ""
    if run.trackers and run.cons.tracker:
        try:
            path = clone_file(run.trackers.repo, run.cons.tracker)
        except OutsideClone as exc:
            refused = f"datagen tracker refused: {exc}"
    if refused:
        for s in todo:
            s.action = "blocked"
            s.reasons.append(refused)
        run.notes.append(refused)
        return
    if run.dry_run:
        for s in todo:
            where = f"{path} row of array {s.target.array_id}" if path else "no tracker configured"
            run.say(f"DRY RUN: would mark {where} ✅ ({s.target.name})")
        return
    commit, written = "no datagen tracker configured", False
    if path is not None:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        for s in todo:
            repos = [hub_repo_id(a, s.target, run.ccfg.hub_org) for a in run.ccfg.flavors[s.target.flavor].hub]
            note = "consolidated; on the hub: " + ", ".join(repos)
            try:
                text = datagen_tracker.advance(
                    text, str(path), s.target.cluster, s.target.array_id, s.target.name, s.job, note
                )
            except TrackerError as exc:
                s.action = "blocked"
                s.reasons.append(f"tracker row not advanced: {exc}")
                continue
            written = True
        if written:
            write_run_log(path, text)  # temp file + rename: never writes through a link made since
            repo = Path(run.trackers.repo).resolve()
            commit = "not committed (trackers.commit false)"
            if run.trackers.commit:
                names = ", ".join(s.target.name for s in todo if s.action == "advance")
                commit = run.commit(repo, [path], f"datagen consolidate: {names} ✅") or "not a git repo"
            run.notes.append(f"datagen tracker {path}: {commit}")
    acts = [
        (
            s.target.cluster,
            s.target.array_id,
            s.target.name,
            {"kind": ConsolidateAct.DONE.value, "job": s.job, "commit": commit},
        )
        for s in todo
        if s.action == "advance"
    ]
    if acts:
        record(run.run_log_dir, acts)


def run_consolidate(
    jobs: list[Any],
    *,
    ccfg: CleanupConfig,
    cons: ConsolidateSection,
    trackers: TrackerSettings | None,
    dry_run: bool,
    run_id: str,
    run_log_dir: str | Path,
    load_cluster: LoadCluster,
    run_script: RunScript,
    hub_check: HubCheck,
    say: Say,
    commit: CommitFiles = commit_tracker_files,
) -> dict[str, Any]:
    """Every consolidation advanced as far as its evidence allows. Returns the steps, the notes,
    ``release`` ("cluster|array id" cleanup may delete), ``replan`` (tracked targets to plan for
    cleanup this run) and ``dry_run``."""
    run = _Run(ccfg, cons, trackers, dry_run, run_id, str(run_log_dir), run_script, hub_check, say, commit)
    tracked = open_consolidations(read_acted(run.run_log_dir, KINDS.all)) if cons.flavors else []  # in flight
    targets = consolidate_targets(jobs, ccfg, cons, tracked) if cons.flavors else []
    by_cluster: dict[str, list[CleanupTarget]] = defaultdict(list)
    for t in targets:
        by_cluster[t.cluster].append(t)
    for cluster, ts in sorted(by_cluster.items()):
        _plan_cluster(cluster, ts, run, load_cluster)
    _advance(run)
    asked = {(str(j.get("cluster")), str(j.get("job_id"))) for j in jobs if isinstance(j, dict)}
    return {
        "steps": [s.to_dict() for s in run.steps],
        "notes": run.notes,
        "release": sorted(f"{s.target.cluster}|{s.target.array_id}" for s in run.steps if s.releases_cleanup),
        "replan": [
            s.target.to_dict()
            for s in run.steps
            if s.releases_cleanup and (s.target.cluster, s.target.job_id) not in asked
        ],
        "dry_run": dry_run,
    }


def consolidate_record(got: dict[str, Any]) -> str:
    """The consolidate table with its notes (``got``: the consolidate step's XCom)."""
    rows = []
    for s in got.get("steps", []):
        t = s["target"]
        why = "; ".join(s["reasons"])
        if s["action"] in ("would submit", "submitted") and s["argv"]:
            why += "\n" + " ".join(s["argv"])
        rows.append([t["cluster"], t["job_id"].split("_")[0], t["name"], s["action"], s.get("job") or "-", why])
    if not rows:
        return ""
    text = box_table(["Cluster", "Array", "Name", "Consolidate", "Job", "Why"], rows, [None, None, 40, None, None, 70])
    text += "".join(f"\n- {n}" for n in got.get("notes", []))
    if got.get("dry_run"):
        text += "\nDRY RUN: nothing submitted, no tracker row written"
    return text


def hold_of(cons: ConsolidateSection, got: dict[str, Any] | None) -> Hold:
    """What this run's consolidate step (``got``: its report) holds back of cleanup's deletes: the
    consolidated flavors' arrays it has not released (the tracker row advanced first, then the
    trees go); cleanup's plan applies it (cleanup.usecase.apply_hold)."""
    why = {
        f"{s['target']['cluster']}|{s['target']['job_id'].split('_')[0]}": "; ".join(s["reasons"])
        for s in (got or {}).get("steps", [])
    }
    return Hold(frozenset(cons.flavors), frozenset((got or {}).get("release", [])), why)
