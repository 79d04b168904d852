"""The RL rules: rl_resume_overshoot (a chain link past max_steps), rl_collapse (collapse signals at
one step, NaN), rl_new_untested (a new series, tag or launch fingerprint), rl_concurrency_cap and
concluded_series.
"""

from __future__ import annotations

import math
from itertools import chain
from operator import ne

from sweep_core.fanin.digest import fingerprint_of
from sweep_core.fanin.fingerprint import LOOK_AT, fingerprint_changes, series_of
from sweep_core.ledger.acts import relaunched_from
from sweep_core.records.models import Flag, Job
from sweep_core.records.vocab import SALVAGE_BY, Action, Bucket, Severity
from sweep_core.rules.cleanup import rl_flavor
from sweep_core.rules.config import RulesConfig
from sweep_core.rules.context import RuleContext, has_tag, has_tag_within, job_flag


def _rl_done(job: Job) -> bool:
    """At or past max_steps: the step reads the total, or the log reports a step above it."""
    step, top = job.metrics.get("step"), job.metrics.get("max_steps")
    return (step is not None and top is not None and step >= top) or job.metrics.get("past_max_steps") is not None


def _link_text(ref: str, job: Job) -> str:
    """``cluster|job_id`` of another link as a note says it ("earlier link 123 [on iris]")."""
    cluster, _, job_id = ref.partition("|")
    if ref == f"{job.cluster}|{job.job_id}":
        return "an earlier sweep of this job"
    return f"earlier link {job_id}" + (f" on {cluster}" if cluster != job.cluster else "")


def fill_series_max(ctx: RuleContext, job: Job, series: str) -> None:
    """A RUNNING link whose log printed no max steps takes its series' from the ledger (whichever
    link printed it), with ``max_steps_from`` saying which (the Note column shows it)."""
    known = ctx.history.ledger.series.get(series)
    if known is None or job.base_state != "RUNNING" or job.metrics.get("max_steps") is not None:
        return
    job.metrics["max_steps"] = known.max_steps
    job.metrics["max_steps_from"] = _link_text(known.source_job, job)


def _completed_before(ctx: RuleContext, job: Job, series: str) -> str:
    """The link of ``series`` an earlier sweep saw COMPLETED at max steps ("" if none, or this job)."""
    known = ctx.history.ledger.series.get(series)
    ref = known.completed_at_max if known else ""
    return "" if not ref or ref == f"{job.cluster}|{job.job_id}" else ref


def rule_rl_resume_overshoot(ctx: RuleContext) -> list[Flag]:
    """COMPLETED at max_steps = done; a RUNNING chain link already at/past max_steps is spurious, and
    so is a RUNNING or PENDING link of a run whose earlier link COMPLETED at max_steps — in this
    window, or in any earlier sweep the ledger knows (``History.ledger``)."""
    out = []
    fcfg = ctx.cfg.fingerprint
    done_names = {j.name for j in ctx.jobs(Bucket.RL, "sacct") if j.base_state == "COMPLETED" and _rl_done(j)}
    for job in ctx.jobs(Bucket.RL, "squeue"):
        series = series_of(job.name, fcfg)
        fill_series_max(ctx, job, series)
        step, top = job.metrics.get("step"), job.metrics.get("max_steps")
        if _rl_done(job):
            at = job.metrics.get("past_max_steps") or step
            msg = f"RUNNING at step {at}/{top}: past max_steps, spurious chain link"
        elif job.name in done_names:
            msg = "an earlier link of this run already COMPLETED at max_steps"
        elif ref := _completed_before(ctx, job, series):
            msg = f"{_link_text(ref, job)} of series {series} already COMPLETED at max_steps (an earlier sweep)"
        else:
            continue
        out.append(job_flag("rl_resume_overshoot", Severity.WARN, job, msg, Action.CANCEL))
    for s in ctx.snaps:  # PENDING links are not bucketed (not tabled): the ledger knows the RL series
        for job in s.pending or []:
            series = series_of(job.name, fcfg)
            if ref := _completed_before(ctx, job, series):
                msg = f"PENDING link: {_link_text(ref, job)} of series {series} already COMPLETED at max_steps"
                out.append(job_flag("rl_resume_overshoot", Severity.WARN, job, msg, Action.CANCEL, bucket=Bucket.RL))
    return out


def collapse_steps(series: list[dict[str, float]], cfg: RulesConfig) -> list[tuple[int | None, list[str]]]:
    """(step, signals) for every logged step where >= min_signals collapse signals fire at once."""
    out = []
    prev_reward: float | None = None
    for d in series:
        signals = []
        r = d.get("reward")
        if r is not None and prev_reward is not None and prev_reward > 0 and r < prev_reward * (1 - cfg.reward_drop):
            signals.append(f"reward {prev_reward:.3g}→{r:.3g}")
        g = d.get("grad_norm")
        if g is not None and g > cfg.grad_norm_max:
            signals.append(f"grad_norm {g:.3g}>{cfg.grad_norm_max:g}")
        e = d.get("entropy")
        if e is not None and e < cfg.entropy_min:
            signals.append(f"entropy {e:.3g}<{cfg.entropy_min:g}")
        t = d.get("tis")
        if t is not None and t > cfg.tis_max:
            signals.append(f"tis {t:.3g}>{cfg.tis_max:g}")
        if len(signals) >= cfg.min_signals:
            out.append((None if d.get("step") is None else int(d["step"]), signals))  # never an index as a step
        if r is not None:
            prev_reward = r
    return out


def rule_rl_collapse(ctx: RuleContext) -> list[Flag]:
    """>= 2 collapse signals at one step -> cancel + salvage; spike-mitigation ablations only observed.
    A NaN in the metrics is a failure whatever the tags."""
    out = []
    for job in ctx.jobs(Bucket.RL):
        series = job.metrics.get("series") or []
        nan: list[str] = []
        values = list(chain.from_iterable(map(dict.values, series)))
        if any(map(ne, values, values)):  # NaN is the only value unequal to itself
            nan = [k for d in series for k, v in d.items() if isinstance(v, float) and math.isnan(v)]
        if nan:
            out.append(
                job_flag(
                    "rl_collapse",
                    Severity.CRITICAL,
                    job,
                    f"NaN in {sorted(set(nan))}: a failure, not a spike",
                    Action.DIAGNOSE,
                )
            )
        hits = collapse_steps(series, ctx.cfg)
        if not hits:
            continue
        step, signals = hits[-1]
        where = f"step {step}" if step is not None else "a logged record that printed no step"
        msg = f"{where}: {', '.join(signals)}"
        tag = has_tag_within(job.name, ctx.cfg.ablation_tags)  # zclip2, staleclip5: still the ablation
        if tag:
            out.append(
                job_flag("rl_collapse", Severity.INFO, job, f"{msg} — ablation observation ({tag}), not actionable")
            )
        elif job.source == "squeue":
            skill, _ = rl_flavor(job, ctx.cfg.agentic_tags)  # the salvage's hub check is its flavor's
            msg += f"; {SALVAGE_BY}{skill}"
            out.append(job_flag("rl_collapse", Severity.CRITICAL, job, msg, Action.CANCEL_SALVAGE))
        else:
            out.append(job_flag("rl_collapse", Severity.WARN, job, msg + " (already ended): salvage"))
    return out


_DEEP_DIVE = (
    "deep-dive (rl-job-health-deep-dive) for a KILL/NO-KILL verdict: sync trace_jobs + logs, "
    "GPU utilisation vs the serving LUT, read literal rollouts, check for all-reward-0; "
    "state-poll + metrics can read healthy on a silently dead run"
)


def _deep_dive_on_record(ctx: RuleContext, job: Job, key: str = "") -> str:
    """The job's latest deep-dive verdict in the ledger (sweep_rl_deep_dive wrote it; ``key``: the
    entry to read, e.g. the link a relaunch came from), also put in its metrics for the row's Note;
    "" when none."""
    e = ctx.history.ledger.jobs.get(key or f"{job.cluster}|{job.job_id}")
    if e is None or not e.deep_dive:
        return ""
    job.metrics["deep_dive"] = e.deep_dive
    return e.deep_dive


def rule_rl_new_untested(ctx: RuleContext) -> list[Flag]:
    """A RUNNING RL job in a new/untested setting -> a deep-dive saying what to look at.

    Untested = a debug/smoke/canary name tag, a series no earlier sweep saw, or a launch
    fingerprint (nodes, partition, model, config, image, commit; sweep_core/fanin/fingerprint.py) that
    differs from the one remembered for the series. Every RL job's series and fingerprint are kept
    in its metrics (``run_series``, ``fingerprint``) for the sweep state. A job whose deep-dive
    verdict is on record (the ledger) is not asked again: its row's Note shows the verdict. A job
    the ledger links to the id it was relaunched from (an ops.md relaunch command) is the same run:
    not new, no new deep-dive unless its launch fingerprint changed (its old verdict is its Note).
    """
    out = []
    fcfg = ctx.cfg.fingerprint
    for job in ctx.jobs(Bucket.RL):
        series = series_of(job.name, fcfg)
        fp = fingerprint_of(job, ctx.mcfg, ctx.cfg)
        job.metrics["run_series"], job.metrics["fingerprint"] = series, fp
        if job.source != "squeue":
            continue
        reasons: list[str] = []
        first: list[str] = []
        tag = has_tag(job.name, ctx.cfg.untested_tags)
        if tag:
            reasons.append(f"untested setting ({tag})")
        link = relaunched_from(ctx.history.ledger, job.cluster, job.job_id)  # its old id was seen
        seen = series in ctx.history.rl_series or job.name in ctx.history.rl_names or bool(link)
        if ctx.history.known and not seen:
            reasons.append("first sweep to see this run")
        elif (before := ctx.history.rl_fingerprints.get(series)) is not None:
            changes = fingerprint_changes(before, fp)
            if changes:
                reasons.append(
                    f"launch changed since series {series} was last seen: "
                    + ", ".join(f"{name} {what}" for name, what in changes)
                )
                first = [LOOK_AT[name] for name, _ in changes]
        if link:  # the same run relaunched under a new id: new only if its setting changed
            job.metrics["relaunch_of"] = link
            reasons = [r for r in reasons if r.startswith("launch changed")]
            if not reasons:
                _deep_dive_on_record(ctx, job, link)
                continue
        on_record = _deep_dive_on_record(ctx, job)
        if reasons and on_record:
            kill = on_record.split(" ", 3)[2:3] in (["KILL:"], ["KILL"])  # "KILL: …" / "KILL on two weak …"
            sev = Severity.WARN if kill else Severity.INFO
            msg = f"{'; '.join(reasons)}: deep-dive on record, not asked again (see note)"
            out.append(job_flag("rl_new_untested", sev, job, msg))
        elif reasons:
            look = _DEEP_DIVE + (f"; look first at: {'; '.join(dict.fromkeys(first))}" if first else "")
            out.append(
                job_flag("rl_new_untested", Severity.WARN, job, f"{'; '.join(reasons)}: {look}", Action.DEEP_DIVE)
            )
    return out


def rule_rl_concurrency_cap(ctx: RuleContext) -> list[Flag]:
    """RL RUNNING per cluster vs the cap in ops.md: report, never act."""
    out = []
    for s in ctx.snaps:
        cap = ctx.caps.get(s.cluster)
        rl = [j for j in s.running or [] if j.bucket == Bucket.RL]
        if cap is not None and len(rl) > cap:
            out.append(
                Flag(
                    rule="rl_concurrency_cap",
                    severity=Severity.WARN,
                    cluster=s.cluster,
                    bucket=Bucket.RL,
                    message=f"{len(rl)} RL jobs RUNNING > cap {cap} (ops.md rl_concurrency_cap)",
                )
            )
    return out


def rule_concluded_series(ctx: RuleContext) -> list[Flag]:
    """A RUNNING job in a concluded series (a3): do not launch/refill — report."""
    out = []
    for job in ctx.jobs(Bucket.RL, "squeue"):
        tag = has_tag(job.name, ctx.cfg.concluded)
        if tag:
            out.append(
                job_flag(
                    "concluded_series", Severity.WARN, job, f"series {tag} is CONCLUDED: this launch should not exist"
                )
            )
    return out
