"""Every sweep re-judges the cleanup backlog (sweep_core.handoffs.cleanup.backlog) with fresh facts:
the job and its same-name twins in this sweep's squeue (plan.live_reason), the hub asked again
(usecase.hub_evidence, at most ``max_hub_asks`` asks per sweep, oldest entry first). An entry whose
facts now hold is handed off to sweep_cleanup again (which re-validates every guard itself) and is
marked ``handed`` until a cleanup run judges it; the others keep their age and get this sweep's reason.

Not re-judged here: an entry already handed off and not judged since (its cleanup run is pending);
an entry no run has judged yet, for ``FIRST_RUN_GRACE`` after it joined (its first cleanup run is
still working on it: handing it off again would give one job twice); a job with an upload or
salvage open in the ledger, or a consolidation in flight (sweep_cleanup follows those every sweep);
and an entry of a cluster whose squeue this sweep could not read (its reason stays; a note says so).
An ``undecided`` SFT completion (handoffs.cleanup.undecided) has its launch YAML read again first:
still unknown, it keeps its age with the new reason; HF-only, it leaves the backlog (the HF chain's);
DB-registered, it loses the mark and is judged on like any entry.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep_core.config.sweep import SweepConfig
from sweep_core.handoffs.chain.hf_only import HfOnly
from sweep_core.handoffs.cleanup.backlog import (
    HANDED,
    BacklogUnreadable,
    job_key,
    load_backlog,
    update_backlog,
)
from sweep_core.handoffs.cleanup.plan import (
    CleanupConfig,
    CleanupConfigError,
    CleanupTarget,
    ClusterState,
    cleanup_config,
    hub_reasons,
    live_reason,
)
from sweep_core.handoffs.cleanup.undecided import (
    CANNOT_TELL,
    UNDECIDED,
    ReadLaunch,
    keep_undecided,
    to_read,
    undecided_entries,
)
from sweep_core.handoffs.cleanup.usecase import hub_evidence, target_paths
from sweep_core.handoffs.cleanup.view import CleanupView
from sweep_core.handoffs.ports import HubCheck
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.given import mark_given, split_given
from sweep_core.ledger.store import update_jobs
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag

CLEANUP = "cleanup"  # the cleanup hand-off's conf key (handoffs.dispatch.triggers.Handoff.CLEANUP)
HF_CHAIN = "hf_chain"  # the HF chain's (handoffs.dispatch.triggers.Handoff.HF_CHAIN): its ``found`` jobs

DEFAULT_MAX_HUB_ASKS = 20
FIRST_RUN_GRACE = dt.timedelta(hours=6)  # an entry no run judged yet is left to its first cleanup run this long
AWAITING = "awaiting its cleanup run"  # the reason's words while it is handed (alerts.backlog_line)

Key = tuple[str, str]


@dataclass
class Rejudged:
    """One sweep's verdicts: the jobs to hand off again (cleanup conf entries), the new reason of
    each entry still blocked, and the run-log lines (what was not re-judged, and why)."""

    unblocked: list[dict[str, str]] = field(default_factory=list)
    reasons: dict[Key, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    decided: set[Key] = field(default_factory=set)  # undecided entries told DB-registered: the mark goes
    hf_only: set[Key] = field(default_factory=set)  # undecided entries told HF-only: they leave the backlog


def squeue_state(snap: ClusterSnapshot) -> ClusterState | None:
    """The sweep's squeue of one cluster as the cleanup guards read it; None when it is UNKNOWN."""
    if snap.status not in (ClusterStatus.OK, ClusterStatus.PARTIAL) or snap.running is None:
        return None
    jobs = [*snap.running, *(snap.pending or [])]
    live: dict[str, str] = {}
    for j in jobs:
        live.setdefault(j.job_id, j.state)
        live.setdefault(j.job_id.split("_", 1)[0], j.state)
    return ClusterState(squeue_ok=True, live=live, live_jobs=[(j.job_id, j.name, j.state) for j in jobs])


def _oldest_first(backlog: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(backlog, key=lambda b: str(b.get("since") or "~"))  # no age yet: last


def rejudge(
    backlog: Sequence[Mapping[str, Any]],
    snaps: Sequence[ClusterSnapshot],
    ccfg: CleanupConfig,
    hub_check: HubCheck,
    *,
    view: CleanupView,
    max_hub_asks: int = DEFAULT_MAX_HUB_ASKS,
    now: dt.datetime | None = None,
    read_launch: ReadLaunch | None = None,
    fresh: set[Key] | None = None,
) -> Rejudged:
    """Judge every backlog entry again (oldest first); ``view``: the ledger folded for this run
    (the jobs whose hub evidence is their own upload's commit; those sweep_cleanup follows anyway:
    an upload or salvage open, a consolidation in flight by its array id, any chunk of it);
    ``read_launch``: reads the undecided entries' launch YAMLs (None: they wait); ``fresh``: the
    undecided entries this very sweep held back (their YAML was just read)."""
    out = Rejudged()
    followed = view.followed
    first_run_cutoff = ((now or dt.datetime.now(dt.UTC)) - FIRST_RUN_GRACE).isoformat()
    states = {s.cluster: squeue_state(s) for s in snaps}
    readable = {c for c, st in states.items() if st is not None}
    launch = _read_launch(backlog, readable, read_launch, fresh or set())
    asks, cut, unread = 0, 0, set()
    for entry in _oldest_first(backlog):
        key = job_key(entry)
        if entry.get(HANDED) or key in followed or (key[0], key[1].split("_", 1)[0]) in followed:
            continue
        if not entry.get("judged") and str(entry.get("since") or "") > first_run_cutoff:
            continue  # its first cleanup run has not judged it yet
        try:
            t = CleanupTarget.from_dict(dict(entry))
        except (ValueError, TypeError):
            continue
        state = states.get(t.cluster)
        if state is None:
            unread.add(t.cluster)
            continue
        if entry.get(UNDECIDED):
            verdict = launch.get(key)
            if verdict is None:  # not read this sweep (just held back, or no reader): it waits
                continue
            if verdict.hf_only is None:
                out.reasons[key] = (
                    f"SFT completed: {CANNOT_TELL} ({verdict.why}): its launch YAML is read again every sweep"
                )
                continue
            if verdict.hf_only:
                out.hf_only.add(key)
                out.notes.append(
                    f"cleanup backlog: {t.cluster} {t.job_id} {t.name}: {verdict.why}: leaves the backlog "
                    f"(not {t.flavor}; the HF chain uploads it once its series is listed)"
                )
                continue
            out.decided.add(key)
            out.notes.append(
                f"cleanup backlog: {t.cluster} {t.job_id} {t.name}: {verdict.why}: judged on as {t.flavor}"
            )
        why = live_reason(t, state, ccfg.artifact_dir) or target_paths(t, ccfg, ())[1]
        if why:
            out.reasons[key] = why
            continue
        spec = ccfg.flavors[t.flavor]
        if cut or asks + len(spec.hub) > max_hub_asks:
            cut += 1
            continue
        asks += len(spec.hub)
        bad = hub_reasons(hub_evidence(t, spec, ccfg.hub_org, hub_check, view.own))
        if bad:
            out.reasons[key] = "; ".join(bad)
        else:
            out.unblocked.append(t.to_dict())
    if unread:
        out.notes.append(
            f"cleanup backlog: squeue of {', '.join(sorted(unread))} not read by this sweep: "
            "its entries keep their reason, re-judged next sweep"
        )
    if cut:
        out.notes.append(
            f"cleanup backlog: {cut} entr{'y' if cut == 1 else 'ies'} not re-judged this sweep: at most "
            f"{max_hub_asks} hub asks per sweep (cleanup.backlog_hub_asks), oldest first; the rest next sweep"
        )
    return out


def _read_launch(
    backlog: Sequence[Mapping[str, Any]], clusters: set[str], read: ReadLaunch | None, fresh: set[Key]
) -> dict[Key, HfOnly]:
    """The undecided entries' verdicts read now: ONE read per cluster whose squeue this sweep read."""
    if read is None:
        return {}
    got: dict[Key, HfOnly] = {}
    for cluster, jobs in sorted(to_read(backlog, fresh).items()):
        if cluster not in clusters:
            continue
        try:
            verdicts = read(cluster, jobs)
        except ValueError as exc:  # an id or path the script refuses: said, never guessed
            verdicts = {jid: HfOnly(None, f"unknown: {exc}") for jid, _, _ in jobs}
        got.update({(cluster, jid): v for jid, v in verdicts.items()})
    return got


def apply(
    backlog: list[dict[str, str]],
    verdicts: Rejudged,
    handed: Iterable[Mapping[str, Any]],
    run_id: str,
    now: dt.datetime,
) -> list[dict[str, str]]:
    """The backlog with this sweep's verdicts: a new reason for each entry still blocked, and the
    ``handed`` mark (with why) on the jobs this sweep handed off; ``since`` (the age) is kept."""
    gave = {job_key(j) for j in handed}
    stamp = now.astimezone(dt.UTC).isoformat(timespec="seconds")
    out = []
    for b in backlog:
        key = job_key(b)
        if key in verdicts.hf_only:
            continue
        if key in verdicts.decided:
            b = {k: v for k, v in b.items() if k != UNDECIDED}
        if key in gave and not b.get(HANDED):
            why = f"unblocked (squeue and hub hold): handed off to sweep_cleanup by {run_id}, {AWAITING}"
            b = {**b, HANDED: run_id, "reason": why, "judged": stamp}
        elif key in verdicts.reasons and not b.get(HANDED):
            b = {**b, "reason": verdicts.reasons[key], "judged": stamp}
        out.append(b)
    return out


CLAIM = (
    "cleanup_backlog"  # the ledger's hand-off kind of a re-judged entry, per judged block: "cleanup_backlog@<judged>"
)


def claim_kind(entry: Mapping[str, Any]) -> str:
    """The ledger claim of handing off one blocked entry again: one per block a run judged (the
    entry's ``judged``, else ``since``), so a job blocked again later can be handed off again."""
    return f"{CLAIM}@{entry.get('judged') or entry.get('since') or ''}"


def give_backlog(
    confs: dict[str, dict[str, Any] | None],
    snaps: Sequence[ClusterSnapshot],
    config: SweepConfig,
    log_dir: str | Path,
    hub_check: HubCheck,
    *,
    view: CleanupView,
    run_id: str,
    run_log: str,
    dry_run: bool,
    now: dt.datetime | None = None,
    flags: Sequence[Flag] = (),
    read_launch: ReadLaunch | None = None,
) -> tuple[dict[str, dict[str, Any] | None], list[str]]:
    """``confs`` with the cleanup hand-off given the backlog entries this sweep finds unblocked
    (each claimed once in the ledger), and the run-log lines; the backlog gets the verdicts (not on a
    dry run). This sweep's held-back SFT completions (``flags``) join it first, undecided (not on a
    dry run); ``read_launch`` reads the undecided entries' launch YAMLs again; ``view``: the ledger
    folded once for this sweep (handoffs.dispatch.views.cleanup_view). An unreadable backlog or cleanup
    config: a line, nothing re-judged."""
    held = undecided_entries(flags, snaps)
    lines: list[str] = []
    try:
        ccfg = cleanup_config(config.cleanup)
        if held and not dry_run:
            stamp = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).isoformat(timespec="seconds")
            update_backlog(log_dir, lambda items: keep_undecided(items, held, stamp))
        backlog = load_backlog(log_dir)
    except (CleanupConfigError, BacklogUnreadable) as exc:
        return confs, [f"cleanup backlog not re-judged: {exc}"]
    lines += [
        f"cleanup backlog: {h['cluster']} {h['job_id']} {h['name']} kept{' (dry run: not written)' if dry_run else ''}: "
        f"{CANNOT_TELL}: its launch YAML is read again every sweep"
        for h in held
    ]
    if not backlog:
        return confs, lines
    verdicts = rejudge(
        backlog,
        snaps,
        ccfg,
        hub_check,
        view=view,
        max_hub_asks=config.cleanup.backlog_hub_asks,
        now=now,
        read_launch=read_launch,
        fresh={job_key(h) for h in held},
    )
    by_key = {job_key(b): b for b in backlog}

    def claim(led: Ledger) -> tuple[Ledger, tuple[list[Mapping[str, Any]], list[str]]]:
        todo, given = [], []
        for job in verdicts.unblocked:
            kind = claim_kind(by_key[job_key(job)])
            mine, other = split_given(led, kind, [job], run_id)
            todo += mine
            given += other
            if not dry_run:
                mark_given(led, kind, mine, run_id)
        return led, (todo, given)

    keys = {f"{j['cluster']}|{j['job_id']}" for j in verdicts.unblocked}
    todo, given = update_jobs(log_dir, keys, claim) if keys else ([], [])  # a claim: these jobs' rows alone
    lines += verdicts.notes + given
    lines += [
        f"cleanup backlog: {j['cluster']} {j['job_id']} {j['name']} unblocked: handed off to sweep_cleanup again (its block cleared)"
        for j in todo
    ]
    if verdicts.reasons:
        lines.append(
            f"cleanup backlog: {len(verdicts.reasons)} entr{'y' if len(verdicts.reasons) == 1 else 'ies'} still blocked (reasons on the Sweeps page and in the digest)"
        )
    if not dry_run:
        stamp = now or dt.datetime.now(dt.UTC)
        update_backlog(log_dir, lambda items: apply(items, verdicts, todo, run_id, stamp))
    if verdicts.hf_only:  # its launch YAML now says enable_db_registration: false: the HF chain's (spec §4)
        chain = confs.get(HF_CHAIN) or {"dry_run": dry_run, "run_log": run_log, "found": []}
        have = {job_key(j) for j in chain.get("found") or []}
        found = [
            {k: str(b[k]) for k in ("cluster", "job_id", "name")}
            for b in backlog
            if job_key(b) in verdicts.hf_only and job_key(b) not in have
        ]
        confs = {**confs, HF_CHAIN: {**chain, "found": [*(chain.get("found") or []), *found]}}
        lines += [
            f"cleanup backlog: {j['cluster']} {j['job_id']} {j['name']} HF-only: handed to sweep_hf_chain"
            for j in found
        ]
    if todo:
        conf = confs.get(CLEANUP) or {"dry_run": dry_run, "run_log": run_log, "jobs": [], "reclaim_clusters": []}
        asked = {job_key(j) for j in conf["jobs"]}
        confs = {
            **confs,
            CLEANUP: {**conf, "jobs": list(conf["jobs"]) + [dict(j) for j in todo if job_key(j) not in asked]},
        }
    return confs, lines
