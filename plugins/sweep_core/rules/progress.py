"""The progress rules: progress_unreadable (a RUNNING job whose bucket progress metric, RL/SFT step,
Datagen chunks or result.json count, Eval trials done, cannot be read once its bucket cadence has
passed: flagged with why, never a silent ``?``) and progress_stalled (the counter did not move across
sweeps, the ledger's memory, while the log kept being written: a wedge that keeps printing) and
progress_rate (steps/hour of an RL/SFT series over its links, the ETA to max steps, a slowdown).
"""

from __future__ import annotations

from sweep_core.fanin.digest import evidence_of
from sweep_core.fanin.fingerprint import series_of
from sweep_core.fanin.liveness import age_text, elapsed_minutes, utc_text
from sweep_core.ledger.progress import counter_run, earlier_counter, link_index, rate_intervals, series_samples
from sweep_core.records.models import Flag, Job
from sweep_core.records.progress_counter import PROGRESS_KEYS, progress_counter
from sweep_core.records.vocab import Action, Bucket, Severity
from sweep_core.rules.context import RuleContext, is_calibration, job_flag
from sweep_core.timing.window import is_past_window


def progress_unreadable(job: Job) -> str:
    """Why the job's progress cannot be read ("" when it can, or its bucket has no progress metric)."""
    keys = PROGRESS_KEYS.get(job.bucket)
    if not keys or any(job.metrics.get(k) is not None for k in keys):
        return ""
    why = [job.log_note] if job.log_note else []
    why += [p for p in job.metric_problems if p not in why]
    return "; ".join(why or job.errors or ["no metrics extracted"])


def rule_progress_unreadable(ctx: RuleContext) -> list[Flag]:
    """RUNNING past its bucket cadence (elapsed > cadence_minutes) with no readable progress: warn
    (not for a past window: its running rows come from sacct, their logs tell about now)."""
    out = []
    past = {s.cluster for s in ctx.snaps if is_past_window(s.window_end, s.remote_now)}  # no log read then
    for job in ctx.jobs(source="squeue"):
        if job.base_state != "RUNNING" or job.cluster in past:
            continue
        why = progress_unreadable(job)
        ran = elapsed_minutes(job.elapsed)
        cadence = ctx.cadence(job.cluster, job.bucket)
        if not why or ran is None or ran <= cadence:  # too early to expect a progress line
            continue
        msg = f"progress unreadable: {why} (running {int(ran)} min, cadence {cadence} min)"
        out.append(job_flag("progress_unreadable", Severity.WARN, job, msg))
    return out


def rule_progress_stalled(ctx: RuleContext) -> list[Flag]:
    """RUNNING, its log written since the last sweep and not stale, but its progress counter read the
    same value in ``rules.progress.stall_sweeps`` consecutive sweeps (this one included) and at least
    ``stall_minutes`` after it last moved: warn with the counter, its value, since when and the last
    lines. A new chain link continues its series' counter (once it has run its bucket cadence: it
    may be loading its checkpoint); an unreadable counter is unknown, never stalled."""
    out = []
    pcfg, ledger = ctx.cfg.progress, ctx.history.ledger
    links = link_index(ledger)
    for s in ctx.snaps:
        running = {f"{j.cluster}|{j.job_id}" for j in s.running or []}
        for job in s.running or []:
            read = progress_counter(job)
            if s.remote_now is None or read is None or job.stale or job.log_mtime is None or is_calibration(ctx, job):
                continue
            series = series_of(job.name, ctx.cfg.fingerprint) if job.bucket == Bucket.RL else ""
            prev = earlier_counter(ledger, job, series, links, running)
            since, sweeps = counter_run(prev, *read, s.remote_now)
            minutes = (s.remote_now - since) / 60
            if prev is None or sweeps < pcfg.stall_sweeps or minutes < pcfg.stall_minutes:
                continue
            own = prev.key == f"{job.cluster}|{job.job_id}"
            if own and prev.last_output is not None and job.log_mtime <= prev.last_output:
                continue  # not written since the last sweep: quiet, not printing (liveness_stale's call)
            if not own and (elapsed_minutes(job.elapsed) or 0.0) < ctx.cadence(job.cluster, job.bucket):
                continue
            carried = "" if own else f", carried from earlier link {prev.job_id}"
            lines = evidence_of(job, ctx.mcfg, ctx.cfg).get("last_lines") or "log empty"
            msg = (
                f"progress stalled: {read[0]} {read[1]} unchanged since {utc_text(since)} ({sweeps} sweeps,"
                f" {int(minutes)} min{carried}) while the log kept being written (last output"
                f" {int(job.minutes_since_output or 0)} min ago); last lines: {lines}"
            )
            out.append(job_flag("progress_stalled", Severity.WARN, job, msg, Action.INVESTIGATE))
    return out


def _per_hour(intervals: list[tuple[float, float]]) -> float | None:
    hours = sum(h for h, _ in intervals)
    return sum(v for _, v in intervals) / hours if hours > 0 else None


def rule_progress_rate(ctx: RuleContext) -> list[Flag]:
    """Fill ``steps_per_hour`` and ``eta_hours`` of every RUNNING RL/SFT job from its series' samples
    across chain links (the ledger's, and this sweep's); warn when the latest interval's rate is below
    ``rules.progress.slowdown_fraction`` x the series' own rate over the earlier ones (at least
    ``slowdown_min_intervals`` of them): often a sick node."""
    out = []
    pcfg, ledger = ctx.cfg.progress, ctx.history.ledger
    links = link_index(ledger)
    for s in ctx.snaps:
        for job in s.running or []:
            read = progress_counter(job)
            if job.bucket not in (Bucket.RL, Bucket.SFT) or read is None or s.remote_now is None:
                continue
            series = series_of(job.name, ctx.cfg.fingerprint) if job.bucket == Bucket.RL else ""
            intervals = rate_intervals(series_samples(ledger, job, series, links, s.remote_now, read[1]))
            rate = _per_hour(intervals)
            if rate is None:
                continue
            job.metrics["steps_per_hour"] = rate
            top = job.metrics.get("max_steps" if job.bucket == Bucket.RL else "total")
            if isinstance(top, int) and rate > 0:
                job.metrics["eta_hours"] = max(0, top - read[1]) / rate
            earlier, last = _per_hour(intervals[:-1]), _per_hour(intervals[-1:])
            if len(intervals) - 1 < pcfg.slowdown_min_intervals or not earlier or last is None:
                continue
            if last < pcfg.slowdown_fraction * earlier:
                msg = (
                    f"slowdown: {last:.3g} steps/h over the last {age_text(intervals[-1][0] * 60)}, below"
                    f" {pcfg.slowdown_fraction:g} x the series' {earlier:.3g} steps/h before (often a sick node)"
                )
                out.append(job_flag("progress_rate", Severity.WARN, job, msg, Action.INVESTIGATE))
    return out
