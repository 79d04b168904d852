"""A job's progress counter: which metric tells each bucket's progress (RL/SFT step, Datagen chunks
or result.json count, Eval trials done) and its value this sweep (None = unreadable, never a guess).
The progress rules and the ledger (what the counter read in earlier sweeps) both read it here.
"""

from __future__ import annotations

from sweep_core.records.models import Job
from sweep_core.records.vocab import Bucket

# bucket -> the metric keys that tell its progress (the first one read is the counter); Catch-all has none.
PROGRESS_KEYS: dict[str, tuple[str, ...]] = {
    Bucket.RL: ("step",),
    Bucket.SFT: ("step",),
    Bucket.DATAGEN: ("chunks_done", "results"),  # an array job's chunks, else the result.json count
    Bucket.EVAL: ("done",),
}


def progress_counter(job: Job) -> tuple[str, int] | None:
    """(counter name, value) of the job's progress this sweep; None when it cannot be read."""
    for key in PROGRESS_KEYS.get(job.bucket, ()):
        value = job.metrics.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return key, value
    return None
