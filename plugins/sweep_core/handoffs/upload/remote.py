"""The upload's reading of the batch-job machine's track records (handoffs.batch_job.remote: one
``sacct -j`` for every upload in flight, the tails of those that ended): a COMPLETED upload's
log names the hub commit it wrote, the evidence that its OWN upload landed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sweep_core.handoffs.batch_job.remote import Tracked, read_track
from sweep_core.handoffs.upload.plan import commit_of
from sweep_core.slurm.gather import GatherOutput


@dataclass(frozen=True)
class UploadState:
    """What the track script read for one upload job, and the commit a COMPLETED one's log names."""

    tracked: Tracked
    revision: str = ""  # COMPLETED: the hub commit its log names for the attempt's repo


def read_upload_track(
    out: GatherOutput | None, ids: Sequence[str], problem: str, repos: Mapping[str, str]
) -> dict[str, UploadState]:
    """Upload job id -> its state; ``repos``: upload job id -> the hub repo it writes."""
    got = read_track(out, ids, problem)
    return {j: UploadState(t, commit_of(t.tail, repos.get(j, "")) if t.completed else "") for j, t in got.items()}
