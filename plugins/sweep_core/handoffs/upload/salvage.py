"""Salvage, and the jobs an upload keeps open: a collapse-cancel confirmed CANCELLED by sacct is
recorded once in the job's ledger entry (``salvage``: the flavor and the last healthy step, the
step before the collapse signals fired); sweep_cleanup then plans it (and every job with an upload
in flight) as it plans a completion, CANCELLED accepted as the done-signal of a salvage only.
The flavor is the salvaged job's own: the one its collapse flag line names (``salvage by
<flavor>``: rules.rl, from the job's artifact dir or name as a completion's), else its name's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sweep_core.handoffs.cancel.outcome import ActOutcome, Did
from sweep_core.handoffs.cleanup.view import CleanupView
from sweep_core.handoffs.upload.plan import SALVAGE, needs_own_upload, own_revision, salvage_step, still_open, story_of
from sweep_core.ledger.entries import Ledger
from sweep_core.records.vocab import Action, salvage_flavor


def salvage_acts(
    decisions: Sequence[Any],
    done: Mapping[str, Mapping[str, ActOutcome]],
    now: str,
    flavor_of_name: Callable[[str], str],
) -> list[tuple[str, str, str, dict[str, str]]]:
    """A ``salvage`` act per cancel+salvage request whose scancel sacct confirmed (``done``: cluster ->
    job id -> handoffs.cancel.outcome.ActOutcome, CANCELLED), in the job's own flavor: the one its
    flag line names, else ``flavor_of_name(job name)`` (a hand-off recorded before lines named it)."""
    acts = []
    for d in decisions:
        r = d.request
        got = done.get(r.cluster, {}).get(r.job_id)
        if r.action != Action.CANCEL_SALVAGE or got is None or got.did != Did.CANCELLED:
            continue
        step = salvage_step(r.evidence)
        flavor = salvage_flavor(r.evidence) or flavor_of_name(r.name)
        act = {"kind": SALVAGE, "flavor": str(flavor), "step": "" if step is None else str(step), "at": now}
        act["evidence"] = r.evidence[:300]
        acts.append((r.cluster, r.job_id, r.name, act))
    return acts


def open_jobs(ledger: Ledger) -> list[dict[str, str]]:
    """The cleanup targets an upload keeps open (a salvage, an upload not yet on the hub or given up)."""
    out = []
    for e in ledger.jobs.values():
        story = story_of(e.acts)
        if not still_open(story):
            continue
        flavor = (story.salvage or {}).get("flavor") or (story.last or {}).get("flavor", "")
        if flavor:
            out.append({"cluster": e.cluster, "job_id": e.job_id, "name": e.name, "flavor": flavor})
    return out


def salvaged(ledger: Ledger) -> set[tuple[str, str]]:
    """(cluster, job id) of every job recorded for salvage: its CANCELLED is its done-signal."""
    return {(e.cluster, e.job_id) for e in ledger.jobs.values() if any(a.get("kind") == SALVAGE for a in e.acts)}


def own_uploads(ledger: Ledger) -> dict[tuple[str, str], str]:
    """(cluster, job id) -> the hub commit its own upload wrote ('' = none yet) for every job the
    sweep salvaged or uploaded for: its hub evidence is that commit, never a name match."""
    out = {}
    for e in ledger.jobs.values():
        story = story_of(e.acts)
        if needs_own_upload(story):
            out[(e.cluster, e.job_id)] = own_revision(story)
    return out


def follow_open(
    confs: dict[str, dict[str, Any] | None], view: CleanupView, *, dry_run: bool, run_log: str
) -> dict[str, dict[str, Any] | None]:
    """``confs`` with a cleanup hand-off when none has work but the ledger (folded: ``view``) holds
    an open upload or salvage: each sweep then lets sweep_cleanup follow it (it plans the open jobs itself)."""
    if confs.get("cleanup") is not None or not view.open:
        return confs
    return {**confs, "cleanup": {"dry_run": dry_run, "run_log": run_log, "jobs": [], "reclaim_clusters": []}}
