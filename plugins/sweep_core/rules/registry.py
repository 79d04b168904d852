"""The flag rules in the order they run (RULES: name -> rule) and apply_rules, the one call the fan-in
makes; each rule family lives in its own module of this package.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from sweep_core.config.sweep import SweepConfigError
from sweep_core.fanin.isolate import run_isolated
from sweep_core.records.models import Flag
from sweep_core.rules.campaigns import rule_campaign_drift
from sweep_core.rules.cleanup import rule_completion_cleanup
from sweep_core.rules.constraints import (
    rule_eval_canary,
    rule_inode_headroom,
    rule_snapshot_cap,
    rule_tree_hygiene,
)
from sweep_core.rules.context import RuleContext
from sweep_core.rules.datagen import rule_datagen_realness
from sweep_core.rules.deep_dive import rule_deep_dive_follow_up
from sweep_core.rules.eval import rule_eval_health
from sweep_core.rules.failures import rule_chain_timeout, rule_genuine_failure
from sweep_core.rules.gpu import rule_gpu_idle, rule_gpu_mem_ceiling
from sweep_core.rules.liveness import rule_liveness_stale
from sweep_core.rules.lost import rule_vanished, rule_wedged
from sweep_core.rules.pending import rule_chain_dependency_broken, rule_pending_stuck
from sweep_core.rules.progress import rule_progress_rate, rule_progress_stalled, rule_progress_unreadable
from sweep_core.rules.relaunch import rule_relaunch_escalated
from sweep_core.rules.rl import (
    rule_concluded_series,
    rule_rl_collapse,
    rule_rl_concurrency_cap,
    rule_rl_new_untested,
    rule_rl_resume_overshoot,
)
from sweep_core.rules.sft import rule_sft_divergence

RULES: dict[str, Callable[[RuleContext], list[Flag]]] = {
    "liveness_stale": rule_liveness_stale,
    "gpu_idle": rule_gpu_idle,
    "gpu_mem_ceiling": rule_gpu_mem_ceiling,
    "progress_unreadable": rule_progress_unreadable,
    "progress_stalled": rule_progress_stalled,
    "completion_cleanup": rule_completion_cleanup,
    "rl_resume_overshoot": rule_rl_resume_overshoot,
    "progress_rate": rule_progress_rate,  # after rl_resume_overshoot: it fills a link's max steps
    "chain_timeout": rule_chain_timeout,
    "chain_dependency_broken": rule_chain_dependency_broken,
    "pending_stuck": rule_pending_stuck,
    "genuine_failure": rule_genuine_failure,
    "wedged": rule_wedged,
    "vanished": rule_vanished,
    "relaunch_escalated": rule_relaunch_escalated,
    "rl_collapse": rule_rl_collapse,
    "sft_divergence": rule_sft_divergence,
    "rl_new_untested": rule_rl_new_untested,
    "deep_dive_follow_up": rule_deep_dive_follow_up,  # after rl_new_untested: the verdict's note, its act
    "eval_health": rule_eval_health,
    "rl_concurrency_cap": rule_rl_concurrency_cap,
    "concluded_series": rule_concluded_series,
    "datagen_realness": rule_datagen_realness,
    "tree_hygiene": rule_tree_hygiene,
    "inode_headroom": rule_inode_headroom,
    "eval_canary": rule_eval_canary,
    "snapshot_cap": rule_snapshot_cap,
    "campaign_drift": rule_campaign_drift,
}


def apply_rules(ctx: RuleContext, only: Collection[str] | None = None) -> list[Flag]:
    """Every rule over the sweep (``only``: just these, in registry order: the watch's fast rules);
    each flag is also attached to its job (for the Note column)."""
    unknown = sorted(set(only or ()) - RULES.keys())
    if unknown:
        raise ValueError(f"unknown rule(s) {unknown}: the rules are {sorted(RULES)}")
    flags = [
        f for name, rule in RULES.items() if only is None or name in only for f in run_isolated(name, rule, ctx)
    ]  # one bad job: a note
    by_job: dict[tuple[str, str], list[Flag]] = {}
    for f in flags:
        by_job.setdefault((f.cluster, f.job_id), []).append(f)
    for s in ctx.snaps:
        for job in [*s.all_jobs(), *(s.pending or [])]:
            job.flags = [f.to_dict() for f in by_job.get((job.cluster, job.job_id), [])]
    return flags


def check_watch_rules(rules: Iterable[str], where: str) -> None:
    """sweep.yaml ``watch.rules`` names only rules there are (SweepConfigError naming ``where``)."""
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise SweepConfigError(f"{where}: unknown rule(s) {unknown}; the rules are {', '.join(RULES)}")
