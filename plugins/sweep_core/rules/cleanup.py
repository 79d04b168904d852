"""The completion_cleanup rule: a COMPLETED job is handed off to the cleanup skill of its flavor (the
cleanup DAG acts), never while a live job of the same name still uses its artifact dir.
"""

from __future__ import annotations

import dataclasses

from sweep_core.handoffs.chain.hf_only import HfOnly, from_facts
from sweep_core.records.models import Flag, Job
from sweep_core.records.vocab import Action, Bucket, Flavor, Severity, cleanup_action, cleanup_flavor
from sweep_core.rules.context import RuleContext, has_tag, job_flag


def _live_by_name(ctx: RuleContext) -> dict[tuple[str, str], list[Job]]:
    """(cluster, name) -> the RUNNING and PENDING jobs of that name in the sweep's squeue."""
    out: dict[tuple[str, str], list[Job]] = {}
    for s in ctx.snaps:
        for j in [*(s.running or []), *(s.pending or [])]:
            out.setdefault((j.cluster, j.name), []).append(j)
    return out


def _hold_for_live_namesake(flag: Flag, live: dict[tuple[str, str], list[Job]]) -> Flag:
    """A cleanup hand-off whose artifact dir (keyed by name) a live job of the same cluster still
    uses says so: it is handed off all the same, so that it is never forgotten once out of the
    window; sweep_cleanup's probe refuses it (the same-name guard) and it waits in the cleanup
    backlog, judged again every sweep (handoffs.cleanup.rejudge), until that job has ended."""
    base = flag.job_id.split("_", 1)[0]
    others = [j for j in live.get((flag.cluster, flag.job_name), []) if j.job_id.split("_", 1)[0] != base]
    if cleanup_flavor(flag.action) is None or not others:
        return flag
    who = ", ".join(f"{j.job_id} ({j.state})" for j in others[:3])
    msg = (
        f"{flag.message}; live job {who} of the same name uses the same artifact dir: nothing is deleted "
        "while it lives (the cleanup waits in the backlog, judged again every sweep)"
    )
    return dataclasses.replace(flag, message=msg)


def rl_flavor(job: Job, agentic_tags: tuple[str, ...]) -> tuple[Flavor, str]:
    """An RL completion's cleanup flavor and what decided it: the fact the gather read (its
    artifact dir holds trace_jobs/ -> agentic, else standard), the name's agentic tag only when
    no artifact dir of that name was found."""
    tag = has_tag(job.name, agentic_tags)
    has_traces, where = job.metrics.get("trace_jobs"), job.metrics.get("artifact_dir", "")
    if isinstance(has_traces, bool):
        skill = Flavor.RL_AGENTIC if has_traces else Flavor.RL_STANDARD
        said = f"{where} holds trace_jobs/" if has_traces else f"{where} has no trace_jobs/"
        if bool(tag) != has_traces:
            said += f"; the name says {'agentic (' + tag + ')' if tag else 'standard'}, the dir decides"
        return skill, f"{'agentic' if has_traces else 'standard'} ({said})"
    if tag:
        return Flavor.RL_AGENTIC, f"agentic (by name: {tag}; no artifact dir found to look for trace_jobs/)"
    return Flavor.RL_STANDARD, "standard (by name: no agentic tag; no artifact dir found to look for trace_jobs/)"


def rl_flavor_of_name(name: str, agentic_tags: tuple[str, ...]) -> Flavor:
    """An RL job's cleanup flavor by its name alone (an agentic tag or not): where no fact is read."""
    return Flavor.RL_AGENTIC if has_tag(name, agentic_tags) else Flavor.RL_STANDARD


def _sft_completion(job: Job, slurm: set[str]) -> Flag:
    """An SFT completion of no listed HF-only series: by its launch YAML (the gather's facts) to
    sft-job-cleanup (DB-registered), to the HF chain (``enable_db_registration: false``), or held
    back with the reason when that cannot be told (never guessed into sft-job-cleanup). A cluster
    whose gather reads no such facts (iris) keeps the plain hand-off."""
    v = from_facts(job.metrics)
    if v is None and job.cluster in slurm:
        v = HfOnly(None, "unknown: the gather read no launch YAML fact for it (past its max_finished_logs?)")
    if v is None or v.hf_only is False:
        said = f"SFT completed: {v.why}" if v else "SFT completed: upload + DB register"
        return job_flag("completion_cleanup", Severity.INFO, job, said, cleanup_action(Flavor.SFT))
    if v.hf_only:  # any enable_db_registration: false series is chained (spec §4), listed or not
        msg = (
            f"SFT completed: {v.why}; handed to the HF chain (upload, no DB registration); its eval and "
            "tracker row once hf_chain.series names its series"
        )
        return job_flag("completion_cleanup", Severity.INFO, job, msg, Action.HF_CHAIN)
    msg = (
        f"SFT completed: cleanup held back, HF-only or not cannot be told ({v.why}): not handed to {Flavor.SFT}; "
        "kept in the cleanup backlog, its launch YAML read again every sweep"
    )
    return job_flag("completion_cleanup", Severity.INFO, job, msg, Action.CLEANUP_UNDECIDED)


def rule_completion_cleanup(ctx: RuleContext) -> list[Flag]:
    """COMPLETED in the window -> the cleanup skill of its flavor (hand-off, not action); never
    while a RUNNING/PENDING job of the same name (a rerun, a chain successor) uses its dir."""
    out = []
    by_name = _live_by_name(ctx)
    live = {name for _, name in by_name}
    slurm = {s.cluster for s in ctx.snaps if s.scheduler == "slurm"}
    for job in ctx.jobs(source="sacct"):
        if job.base_state != "COMPLETED":
            continue
        if job.bucket == Bucket.RL:
            skill, what = rl_flavor(job, ctx.cfg.agentic_tags)
            out.append(
                job_flag("completion_cleanup", Severity.INFO, job, f"RL {what} completed", cleanup_action(skill))
            )
        elif job.bucket == Bucket.SFT and (series := [n for n, m in ctx.cfg.hf_only if m.match(job.name)]):
            msg = f"SFT completed: HF-only series {series[0]} (no DB registration): the HF chain uploads it, not {Flavor.SFT}"
            out.append(job_flag("completion_cleanup", Severity.INFO, job, msg, ""))
        elif job.bucket == Bucket.SFT:
            out.append(_sft_completion(job, slurm))
        elif job.bucket == Bucket.DATAGEN:
            done, total = job.metrics.get("chunks_done"), job.metrics.get("chunks_total")
            if "_" not in job.job_id:
                out.append(
                    job_flag(
                        "completion_cleanup",
                        Severity.INFO,
                        job,
                        "datagen completed (single job)",
                        cleanup_action(Flavor.DATAGEN),
                    )
                )
            elif done is not None and done == total and job.name not in live:
                out.append(
                    job_flag(
                        "completion_cleanup",
                        Severity.INFO,
                        job,
                        f"datagen all chunks done ({done}/{total})",
                        cleanup_action(Flavor.DATAGEN),
                    )
                )
        elif job.bucket == Bucket.EVAL:
            failed = [
                k for k, v in (job.metrics.get("checks") or {}).items() if v == "FAIL" and k in ("upload", "register")
            ]
            if failed:
                out.append(
                    job_flag(
                        "completion_cleanup",
                        Severity.WARN,
                        job,
                        f"eval completed but auto-{'/'.join(failed)} failed",
                        cleanup_action(Flavor.EVAL_AGENTIC),
                    )
                )
    # datagen arrays: one flag per array, not per chunk
    seen: set[tuple[str, str]] = set()
    uniq = []
    for f in out:
        key = (f.cluster, f.job_id.split("_", 1)[0]) if f.bucket == Bucket.DATAGEN else (f.cluster, f.job_id)
        if key not in seen:
            seen.add(key)
            uniq.append(f)
    return _nothing_to_reap(ctx, [_hold_for_live_namesake(f, by_name) for f in uniq])


def _nothing_to_reap(ctx: RuleContext, flags: list[Flag]) -> list[Flag]:
    """No cleanup hand-off where it cannot act: an iris cluster has no POSIX tree to reap (its
    artifacts go to the hub; sweep_cleanup refuses it). Its completions are said once, in the
    cluster's note; a warning (an eval's failed auto-upload) stays, without the hand-off."""
    where = {s.cluster: s for s in ctx.snaps if s.scheduler != "slurm"}
    out, skipped = [], {}
    for f in flags:
        if f.cluster not in where or cleanup_flavor(f.action) is None:
            out.append(f)
            continue
        skipped[f.cluster] = skipped.get(f.cluster, 0) + 1
        if f.severity != Severity.INFO:
            out.append(dataclasses.replace(f, message=f"{f.message}; no cleanup hand-off (nothing to reap)", action=""))
    for cluster, n in sorted(skipped.items()):
        where[cluster].notes.append(
            f"cleanup not handed off for {n} completed job(s): {where[cluster].scheduler} cluster, "
            "nothing to reap (artifacts go to the hub)"
        )
    return out
