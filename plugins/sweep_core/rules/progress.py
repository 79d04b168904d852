"""The progress rule: a RUNNING job whose bucket progress metric (RL/SFT step, Datagen chunks or
result.json count, Eval trials done) cannot be read once its bucket cadence has passed is flagged
with why (the extractor's problems, or why the log could not be read), never left a silent ``?``.
"""

from __future__ import annotations

from sweep_core.fanin.liveness import elapsed_minutes
from sweep_core.models import Flag, Job
from sweep_core.rules.context import RuleContext, base_state, job_flag
from sweep_core.vocab import Bucket, Severity

# bucket -> the metric keys that tell its progress (any one read = readable); Catch-all has none.
PROGRESS_KEYS: dict[str, tuple[str, ...]] = {
    Bucket.RL: ("step",),
    Bucket.SFT: ("step",),
    Bucket.DATAGEN: ("chunks_done", "results"),  # an array job's chunks, else the result.json count
    Bucket.EVAL: ("done",),
}


def progress_unreadable(job: Job) -> str:
    """Why the job's progress cannot be read ("" when it can, or its bucket has no progress metric)."""
    keys = PROGRESS_KEYS.get(job.bucket)
    if not keys or any(job.metrics.get(k) is not None for k in keys):
        return ""
    why = [job.log_note] if job.log_note else []
    why += [p for p in job.metric_problems if p not in why]
    return "; ".join(why or job.errors or ["no metrics extracted"])


def rule_progress_unreadable(ctx: RuleContext) -> list[Flag]:
    """RUNNING past its bucket cadence (elapsed > cadence_minutes) with no readable progress: warn."""
    out = []
    for job in ctx.jobs(source="squeue"):
        if base_state(job) != "RUNNING":
            continue
        why = progress_unreadable(job)
        ran = elapsed_minutes(job.elapsed)
        cadence = ctx.cadence(job.cluster, job.bucket)
        if not why or ran is None or ran <= cadence:  # too early to expect a progress line
            continue
        msg = f"progress unreadable: {why} (running {int(ran)} min, cadence {cadence} min)"
        out.append(job_flag("progress_unreadable", Severity.WARN, job, msg))
    return out
