"""What the ledger remembers of one array's consolidation: its acts on the entry
``<cluster>|<array id>`` (sweep_core.ledger.acts), each a flat object of strings, read as one
kernel Record (kernel.attempt, ``KINDS`` below):

- ``consolidate``: a submission (``job`` = the Slurm id, '' while reserved, ``attempt``, ``run``,
  ``flavor``, ``at``). The reservation is written under the ledger lock BEFORE sbatch runs, so two
  overlapping runs never both submit; a reservation that got no id is reported, never resubmitted.
- ``consolidate_failed``: a tracked job that ended without COMPLETED (``job``, ``state``, ``traceback``).
- ``consolidate_done``: the dataset on the hub and the tracker row advanced (``job``, ``commit``).
- ``consolidate_gave_up``: failed ``max_retries`` + 1 times; a person takes over.

The entry's ``last_seen`` is refreshed with every act: the ledger's prune keeps it while tracked.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from sweep_core.handoffs.batch_job import usecase as batch
from sweep_core.handoffs.kernel.act import Act, ActKind
from sweep_core.handoffs.kernel.attempt import Kinds, Record, record_of, stored
from sweep_core.ledger.acts import act_rows, acts_of, add_act
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.store import update_jobs
from sweep_core.records.vocab import Bucket
from sweep_core.timing.window import now_iso


class ConsolidateAct(StrEnum):
    SUBMITTED = "consolidate"
    FAILED = "consolidate_failed"
    DONE = "consolidate_done"
    GAVE_UP = "consolidate_gave_up"


KINDS = Kinds(
    submitted=ConsolidateAct.SUBMITTED,
    failed=ConsolidateAct.FAILED,
    done=ConsolidateAct.DONE,
    gave_up=ConsolidateAct.GAVE_UP,
)


def history_of(ledger: Ledger, cluster: str, array_id: str) -> Record:
    return record_of(KINDS, acts_of(ledger, cluster, array_id))


def open_consolidations(ledger: Ledger) -> list[dict[str, str]]:
    """The cleanup targets (cluster, job_id = array id, name, flavor) of every consolidation in flight:
    submitted, neither done nor given up. A later sweep_cleanup run tracks them."""
    out = []
    for e in sorted(ledger.jobs.values(), key=lambda e: e.key):
        h = record_of(KINDS, e.acts)
        if h.submissions and h.done is None and not h.gave_up:
            first = h.submissions[0]
            job_id = first.get("target_job") or e.job_id
            out.append({"cluster": e.cluster, "job_id": job_id, "name": e.name, "flavor": first.get("flavor", "")})
    return out


def _touch(ledger: Ledger, cluster: str, array_id: str, stamp: str) -> None:
    """Keep the array's entry from the prune while tracked; an entry only consolidate made (the
    sweep keys chunks, not arrays) reads as the ended Datagen array it is."""
    e = ledger.jobs.get(f"{cluster}|{array_id}")
    if e is not None:
        e.last_seen = max(e.last_seen, stamp)
        if not e.state:
            e.state, e.bucket, e.source = "COMPLETED", e.bucket or Bucket.DATAGEN.value, e.source or "sacct"


def record(run_log_dir: str | Path, acts: list[tuple[str, str, str, dict[str, Any]]]) -> Ledger:
    """Store ``(cluster, array id, name, act)`` each under the lock of those arrays' rows alone (an act
    already there is not added twice); the ledger as saved: its ledger row and those entries."""
    stamp = now_iso()

    def change(ledger: Ledger) -> tuple[Ledger, Ledger]:
        for cluster, array_id, name, act in acts:
            add_act(ledger, cluster, array_id, name, {"at": stamp, **act})
            _touch(ledger, cluster, array_id, stamp)
        return ledger, ledger

    keys, top = act_rows(acts)
    return update_jobs(run_log_dir, keys, change, top=top)


def reserve(run_log_dir: str | Path, target: Any, run_id: str) -> int:
    """Claim the next submission (batch_job.usecase.claim_act): its attempt number, or 0 when
    another run holds one in flight, or it is done or given up (``target``: a CleanupTarget)."""
    stamp = now_iso()
    cluster, array_id, name = target.cluster, target.array_id, target.name

    def allowed(ledger: Ledger) -> int:
        h = history_of(ledger, cluster, array_id)
        latest = h.submissions[-1] if h.submissions else None
        if h.done is not None or h.gave_up:
            return 0
        if latest is not None and (not latest.get("job") or h.failed(latest["job"]) is None):
            return 0  # reserved or in flight: never a second submission
        return len(h.submissions) + 1

    act = {"at": stamp, "kind": ConsolidateAct.SUBMITTED.value, "run": run_id}
    return batch.claim_act(
        run_log_dir,
        {"cluster": cluster, "job_id": array_id, "name": name},
        allowed,
        stored({**act, "flavor": target.flavor, "target_job": target.job_id}, Act(ActKind.SBATCH, cluster, array_id)),
        lambda ledger: _touch(ledger, cluster, array_id, stamp),
    )


def fill_reservation(run_log_dir: str | Path, cluster: str, array_id: str, attempt: int, job: str, why: str) -> None:
    """The reserved submission ``attempt`` gets its Slurm id (``job``), or, when sbatch gave none,
    the reason (``job`` stays '': reported on every run, never resubmitted by itself)."""
    batch.fill_act(run_log_dir, cluster, array_id, ConsolidateAct.SUBMITTED.value, attempt, job, why)


def drop_reservation(run_log_dir: str | Path, cluster: str, array_id: str, attempt: int) -> None:
    """Free the reserved submission ``attempt``: nothing of it was sent (no login node took the
    script, or acts are held), so the next run may reserve it again."""
    batch.drop_act(run_log_dir, cluster, array_id, ConsolidateAct.SUBMITTED.value, attempt)
