"""The flag rules of a sweep (spec §1 LIVENESS, §4 "Flag + hand off", §5 standing constraints).

Each rule is one small function ``rule_<name>(ctx) -> list[Flag]``, registered in RULES; its
name is printed with every flag it raises, so a reader finds it here. Thresholds and tags come
from the ``rules:`` section of include/sweep.yaml. Rules report and hand off; they never act.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import chain
from operator import ne
from typing import Any

from sweep_core.fanin.fingerprint import (
    LOOK_AT,
    FingerprintConfig,
    fingerprint_changes,
    fingerprint_config,
    launch_fingerprint,
    series_of,
)
from sweep_core.fanin.isolate import run_isolated
from sweep_core.fanin.liveness import elapsed_minutes, predates_job
from sweep_core.fanin.metrics import MetricsConfig, hang_evidence
from sweep_core.models import ClusterSnapshot, Flag, Job

DEFAULT_RULES: dict[str, Any] = {
    "collapse": {
        "min_signals": 2,
        "reward_drop_fraction": 0.5,
        "grad_norm_max": 10.0,
        "entropy_min": 0.05,
        "tis_max": 5.0,
    },
    "ablation_tags": ["zclip", "staleclip", "stale_clip", "z_clip", "maxgn09_hint", "shaped_entropy"],
    "agentic_rl_tags": ["harbor", "daytona", "terminal_bench", "terminalbench"],
    "untested_rl_tags": ["debug", "smoke", "smoketest", "smoke_test", "canary"],
    "fingerprint": {},  # launch-fingerprint patterns per field (defaults: sweep_core/fanin/fingerprint.py)
    "series_suffix": None,  # chain-link / restart suffix stripped from a name -> its series
    "concluded_series": ["a3"],
    "eval_exempt": ["(^|[_/-])DCAgent2([_/-]|$)"],
    "eval_instant_fail_minutes": 2,
    "failure_states": ["FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"],
}


@dataclass(frozen=True)
class RulesConfig:
    min_signals: int
    reward_drop: float
    grad_norm_max: float
    entropy_min: float
    tis_max: float
    ablation_tags: tuple[str, ...]
    agentic_tags: tuple[str, ...]
    untested_tags: tuple[str, ...]
    concluded: tuple[str, ...]
    eval_exempt: tuple[re.Pattern[str], ...]
    instant_fail_minutes: float
    failure_states: frozenset[str]
    fingerprint: FingerprintConfig


def rules_config(raw: dict[str, Any] | None) -> RulesConfig:
    """Build from the ``rules:`` section of sweep.yaml (missing keys take the defaults)."""
    raw = {**DEFAULT_RULES, **(raw or {})}
    col = {**DEFAULT_RULES["collapse"], **(raw.get("collapse") or {})}
    return RulesConfig(
        min_signals=int(col["min_signals"]),
        reward_drop=float(col["reward_drop_fraction"]),
        grad_norm_max=float(col["grad_norm_max"]),
        entropy_min=float(col["entropy_min"]),
        tis_max=float(col["tis_max"]),
        ablation_tags=tuple(raw["ablation_tags"]),
        agentic_tags=tuple(raw["agentic_rl_tags"]),
        untested_tags=tuple(raw["untested_rl_tags"]),
        concluded=tuple(raw["concluded_series"]),
        eval_exempt=tuple(re.compile(p) for p in raw["eval_exempt"]),
        instant_fail_minutes=float(raw["eval_instant_fail_minutes"]),
        failure_states=frozenset(raw["failure_states"]),
        fingerprint=fingerprint_config(raw.get("fingerprint"), raw.get("series_suffix")),
    )


@dataclass
class History:
    """What earlier sweeps saw (sweep_history): failure signatures, RL job names and series, and
    each RL series' launch fingerprint (field by field, the last known value)."""

    failure_signatures: dict[str, set[str]] = field(default_factory=dict)  # signature -> "cluster|job_id"s
    rl_names: set[str] = field(default_factory=set)
    rl_series: set[str] = field(default_factory=set)
    rl_fingerprints: dict[str, dict[str, Any]] = field(default_factory=dict)  # series -> fingerprint
    known: bool = False  # False on the first sweep: "never seen before" means nothing yet


@dataclass
class RuleContext:
    snaps: list[ClusterSnapshot]
    cfg: RulesConfig
    mcfg: MetricsConfig
    cadence: Callable[[str, str], int]
    caps: dict[str, int | None] = field(default_factory=dict)
    history: History = field(default_factory=History)

    def jobs(self, bucket: str | None = None, source: str | None = None) -> Iterable[Job]:
        for s in self.snaps:
            for job in s.all_jobs():
                if (bucket is None or job.bucket == bucket) and (source is None or job.source == source):
                    yield job


def _flag(rule: str, severity: str, job: Job, message: str, action: str = "") -> Flag:
    return Flag(rule, severity, job.cluster, job.job_id, job.name, job.bucket, message, action)


@functools.lru_cache(maxsize=256)
def _tag_patterns(tags: tuple[str, ...]) -> tuple[re.Pattern[str], tuple[tuple[str, re.Pattern[str]], ...]]:
    """One alternation of all tags (the usual "none of them" answer in one search) and one pattern each."""
    one = [rf"(^|[_\-/.]){re.escape(t.lower())}([_\-/.]|$)" for t in tags]
    return re.compile("|".join(f"(?:{p})" for p in one) or "(?!)"), tuple(zip(tags, map(re.compile, one), strict=True))


def has_tag(name: str, tags: Iterable[str]) -> str:
    """The first tag that stands in ``name`` as a token (between _, -, /, . or the ends)."""
    low = name.lower()
    any_tag, each = _tag_patterns(tuple(tags))
    if not any_tag.search(low):
        return ""
    for tag, pattern in each:  # list order decides which tag is named, not position in the name
        if pattern.search(low):
            return tag
    return ""


def base_state(job: Job) -> str:
    return job.state.split(" ", 1)[0].rstrip("+")


# ---- tracebacks -------------------------------------------------------------------------------

_MASKING = re.compile(r"ChildFailedError|torch\.distributed\.elastic|elastic.*summary|ProcessExitedException", re.I)
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)?\d*[^\]]*\]:\s?")
_SIGNAL_LINE = re.compile(r"Segmentation fault|SIGSEGV|core dumped|CUDA error|NCCL error")
_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Fault)|[A-Z]\w+Error)(?::\s*(.*))?$")


def first_real_traceback(tail: str) -> str:
    """The first traceback's exception line that is not the elastic/torchrun summary masking it."""
    lines = [_RANK_PREFIX.sub("", ln) if ln.startswith("[") else ln for ln in tail.splitlines()]
    found: list[str] = []
    i = 0
    while i < len(lines):
        if "Traceback (most recent call last)" in lines[i]:
            j = i + 1
            while j < len(lines) and (lines[j].startswith((" ", "\t")) or not lines[j].strip()):
                j += 1
            if j < len(lines):
                found.append(lines[j].strip()[:300])
            i = j
        i += 1
    real = [e for e in found if not _MASKING.search(e)]
    if real:
        return real[0]
    for line in lines:  # no traceback: the first line that looks like an exception or a signal
        s = line.strip()
        if _EXC_LINE.match(s) and not _MASKING.search(s):
            return s[:300]
        if _SIGNAL_LINE.search(s):
            return s[:300]
    return found[0] if found else ""


def failure_signature(job: Job, exc: str) -> str:
    """Stable across reruns: the job name without numbers, the exception without numbers/paths."""
    name = re.sub(r"\d+", "#", job.name)
    text = re.sub(r"0x[0-9a-f]+|\d+", "#", exc)
    text = re.sub(r"/[^\s'\"]+", "<path>", text)
    return f"{job.cluster}|{name}|{text[:160]}"


# ---- the rules --------------------------------------------------------------------------------


def _calibration(ctx: RuleContext, job: Job) -> bool:
    """A DCAgent2-style calibration eval (``eval_exempt``): exempt as a whole job, stalls included."""
    return job.bucket == "Eval" and any(p.search(job.name) for p in ctx.cfg.eval_exempt)


def rule_liveness_stale(ctx: RuleContext) -> list[Flag]:
    """RUNNING but silent past the bucket cadence: a suspected silent hang, with the evidence."""
    out = []
    for job in ctx.jobs(source="squeue"):
        if not job.stale or _calibration(ctx, job):  # eval_health reports it as calibration
            continue
        last, near = hang_evidence(job.log_tail, ctx.mcfg)
        mins = int(job.minutes_since_output or 0)
        msg = f"no output for {mins} min (cadence {ctx.cadence(job.cluster, job.bucket)} min)"
        msg += f"; last line: {last!r}" if last else "; log empty"
        if near:
            msg += "; near the end: " + " | ".join(near)
        multi = (job.num_nodes or 1) > 1
        ran = predates_job(job)
        if ran is not None:  # the silence predates the job: no evidence for a kill
            msg += f"; the log was last written before this job started (it has run {int(ran)} min)"
        if multi and mins >= 120 and ran is None:
            out.append(_flag("liveness_stale", "critical", job, msg + f"; {job.num_nodes} nodes held", "kill-approval"))
        else:
            out.append(_flag("liveness_stale", "warn", job, msg, "investigate"))
    return out


def _rl_done(job: Job) -> bool:
    step, top = job.metrics.get("step"), job.metrics.get("max_steps")
    return step is not None and top is not None and step >= top


def _live_by_name(ctx: RuleContext) -> dict[tuple[str, str], list[Job]]:
    """(cluster, name) -> the RUNNING and PENDING jobs of that name in the sweep's squeue."""
    out: dict[tuple[str, str], list[Job]] = {}
    for s in ctx.snaps:
        for j in [*(s.running or []), *(s.pending or [])]:
            out.setdefault((j.cluster, j.name), []).append(j)
    return out


def _hold_for_live_namesake(flag: Flag, live: dict[tuple[str, str], list[Job]]) -> Flag:
    """A cleanup hand-off whose artifact dir (keyed by name) a live job of the same cluster still
    uses becomes a note without action: its trees are not handed off while that job lives."""
    base = flag.job_id.split("_", 1)[0]
    others = [j for j in live.get((flag.cluster, flag.job_name), []) if j.job_id.split("_", 1)[0] != base]
    if not flag.action.startswith("cleanup:") or not others:
        return flag
    who = ", ".join(f"{j.job_id} ({j.state})" for j in others[:3])
    msg = f"{flag.message}; cleanup NOT handed off: live job {who} of the same name uses the same artifact dir"
    return Flag(flag.rule, flag.severity, flag.cluster, flag.job_id, flag.job_name, flag.bucket, msg, "")


def rule_completion_cleanup(ctx: RuleContext) -> list[Flag]:
    """COMPLETED in the window -> the cleanup skill of its flavor (hand-off, not action); never
    while a RUNNING/PENDING job of the same name (a rerun, a chain successor) uses its dir."""
    out = []
    by_name = _live_by_name(ctx)
    live = {name for _, name in by_name}
    for job in ctx.jobs(source="sacct"):
        if base_state(job) != "COMPLETED":
            continue
        if job.bucket == "RL":
            tag = has_tag(job.name, ctx.cfg.agentic_tags)
            skill = "rl-agentic-job-cleanup" if tag else "rl-standard-job-cleanup"
            what = f"agentic ({tag})" if tag else "standard (no trace_jobs/)"
            out.append(_flag("completion_cleanup", "info", job, f"RL {what} completed", f"cleanup:{skill}"))
        elif job.bucket == "SFT":
            out.append(
                _flag(
                    "completion_cleanup", "info", job, "SFT completed: upload + DB register", "cleanup:sft-job-cleanup"
                )
            )
        elif job.bucket == "Datagen":
            done, total = job.metrics.get("chunks_done"), job.metrics.get("chunks_total")
            if "_" not in job.job_id:
                out.append(
                    _flag(
                        "completion_cleanup",
                        "info",
                        job,
                        "datagen completed (single job)",
                        "cleanup:datagen-job-cleanup",
                    )
                )
            elif done is not None and done == total and job.name not in live:
                out.append(
                    _flag(
                        "completion_cleanup",
                        "info",
                        job,
                        f"datagen all chunks done ({done}/{total})",
                        "cleanup:datagen-job-cleanup",
                    )
                )
        elif job.bucket == "Eval":
            failed = [
                k for k, v in (job.metrics.get("checks") or {}).items() if v == "FAIL" and k in ("upload", "register")
            ]
            if failed:
                out.append(
                    _flag(
                        "completion_cleanup",
                        "warn",
                        job,
                        f"eval completed but auto-{'/'.join(failed)} failed",
                        "cleanup:eval-agentic-cleanup",
                    )
                )
    # datagen arrays: one flag per array, not per chunk
    seen: set[tuple[str, str]] = set()
    uniq = []
    for f in out:
        key = (f.cluster, f.job_id.split("_", 1)[0]) if f.bucket == "Datagen" else (f.cluster, f.job_id)
        if key not in seen:
            seen.add(key)
            uniq.append(f)
    return [_hold_for_live_namesake(f, by_name) for f in uniq]


def rule_rl_resume_overshoot(ctx: RuleContext) -> list[Flag]:
    """COMPLETED at max_steps = done; a RUNNING chain link already at/past max_steps is spurious."""
    out = []
    done_names = {j.name for j in ctx.jobs("RL", "sacct") if base_state(j) == "COMPLETED" and _rl_done(j)}
    for job in ctx.jobs("RL", "squeue"):
        step, top = job.metrics.get("step"), job.metrics.get("max_steps")
        if _rl_done(job):
            out.append(
                _flag(
                    "rl_resume_overshoot",
                    "warn",
                    job,
                    f"RUNNING at step {step}/{top}: past max_steps, spurious chain link",
                    "cancel",
                )
            )
        elif job.name in done_names:
            out.append(
                _flag(
                    "rl_resume_overshoot",
                    "warn",
                    job,
                    "an earlier link of this run already COMPLETED at max_steps",
                    "cancel",
                )
            )
    return out


def rule_chain_timeout(ctx: RuleContext) -> list[Flag]:
    """TIMEOUT at the wall: normal with a RUNNING/PENDING successor of the same name, else flagged."""
    out = []
    for s in ctx.snaps:
        successors = {j.name: j for j in [*(s.running or []), *(s.pending or [])]}
        for job in s.finished or []:
            if base_state(job) != "TIMEOUT":
                continue
            nxt = successors.get(job.name)
            if nxt is not None:
                out.append(_flag("chain_timeout", "info", job, f"chain restart: successor {nxt.job_id} {nxt.state}"))
            elif s.running is None or s.pending is None:
                out.append(_flag("chain_timeout", "warn", job, "TIMEOUT; successor unknown (squeue UNKNOWN)"))
            else:
                out.append(
                    _flag("chain_timeout", "warn", job, "TIMEOUT at the wall with no successor queued", "diagnose")
                )
    return out


def rule_genuine_failure(ctx: RuleContext) -> list[Flag]:
    """FAILED (exit != 0, not a wall TIMEOUT): the first real traceback; recurring vs transient."""
    out = []
    for job in ctx.jobs(source="sacct"):
        if base_state(job) not in ctx.cfg.failure_states:
            continue
        exc = first_real_traceback(job.log_tail) if job.log_tail else ""
        why = exc or (
            f"no traceback found ({job.log_note})"
            if job.log_note
            else "no traceback in the log tail"
            if job.log_tail
            else "log not found"
        )
        sig = failure_signature(job, exc or base_state(job))
        # Recurring = the same failure on ANOTHER job (a relaunch), not this job seen again.
        recurring = bool(ctx.history.failure_signatures.get(sig, set()) - {f"{job.cluster}|{job.job_id}"})
        job.metrics["failure_signature"] = sig
        kind = "RECURRING (same failure in an earlier sweep)" if recurring else "new"
        out.append(
            _flag(
                "genuine_failure",
                "critical",
                job,
                f"{base_state(job)} exit {job.exit_code}: {why} [{kind}]",
                "diagnose",
            )
        )
    return out


def collapse_steps(series: list[dict[str, float]], cfg: RulesConfig) -> list[tuple[int, list[str]]]:
    """(step, signals) for every logged step where >= min_signals collapse signals fire at once."""
    out = []
    prev_reward: float | None = None
    for i, d in enumerate(series):
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
            out.append((int(d.get("step", i)), signals))
        if r is not None:
            prev_reward = r
    return out


def rule_rl_collapse(ctx: RuleContext) -> list[Flag]:
    """>= 2 collapse signals at one step -> cancel + salvage; spike-mitigation ablations only observed.
    A NaN in the metrics is a failure whatever the tags."""
    out = []
    for job in ctx.jobs("RL"):
        series = job.metrics.get("series") or []
        nan: list[str] = []
        values = list(chain.from_iterable(map(dict.values, series)))
        if any(map(ne, values, values)):  # NaN is the only value unequal to itself
            nan = [k for d in series for k, v in d.items() if isinstance(v, float) and math.isnan(v)]
        if nan:
            out.append(
                _flag("rl_collapse", "critical", job, f"NaN in {sorted(set(nan))}: a failure, not a spike", "diagnose")
            )
        hits = collapse_steps(series, ctx.cfg)
        if not hits:
            continue
        step, signals = hits[-1]
        msg = f"step {step}: {', '.join(signals)}"
        tag = has_tag(job.name, ctx.cfg.ablation_tags)
        if tag:
            out.append(_flag("rl_collapse", "info", job, f"{msg} — ablation observation ({tag}), not actionable"))
        elif job.source == "squeue":
            out.append(_flag("rl_collapse", "critical", job, msg, "cancel+salvage"))
        else:
            out.append(_flag("rl_collapse", "warn", job, msg + " (already ended): salvage"))
    return out


_DEEP_DIVE = (
    "deep-dive (rl-job-health-deep-dive) for a KILL/NO-KILL verdict: sync trace_jobs + logs, "
    "GPU utilisation vs the serving LUT, read literal rollouts, check for all-reward-0; "
    "state-poll + metrics can read healthy on a silently dead run"
)


def rule_rl_new_untested(ctx: RuleContext) -> list[Flag]:
    """A RUNNING RL job in a new/untested setting -> a deep-dive saying what to look at.

    Untested = a debug/smoke/canary name tag, a series no earlier sweep saw, or a launch
    fingerprint (nodes, partition, model, config, image, commit; sweep_core/fanin/fingerprint.py) that
    differs from the one remembered for the series. Every RL job's series and fingerprint are kept
    in its metrics (``run_series``, ``fingerprint``) for the sweep state.
    """
    out = []
    fcfg = ctx.cfg.fingerprint
    for job in ctx.jobs("RL"):
        series = series_of(job.name, fcfg)
        fp = launch_fingerprint(job, fcfg)
        job.metrics["run_series"], job.metrics["fingerprint"] = series, fp
        if job.source != "squeue":
            continue
        reasons: list[str] = []
        first: list[str] = []
        tag = has_tag(job.name, ctx.cfg.untested_tags)
        if tag:
            reasons.append(f"untested setting ({tag})")
        seen = series in ctx.history.rl_series or job.name in ctx.history.rl_names
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
        if reasons:
            look = _DEEP_DIVE + (f"; look first at: {'; '.join(dict.fromkeys(first))}" if first else "")
            out.append(_flag("rl_new_untested", "warn", job, f"{'; '.join(reasons)}: {look}", "deep-dive"))
    return out


def rule_eval_health(ctx: RuleContext) -> list[Flag]:
    """Eval stall (silent), zombie (all trials done, still RUNNING), instant-fail; DCAgent2 exempt."""
    out = []
    for job in ctx.jobs("Eval"):
        exempt = _calibration(ctx, job)
        problem = ""
        if job.source == "squeue":
            done, total = job.metrics.get("done"), job.metrics.get("total")
            if job.stale:
                problem = "stall: no trial output past cadence"
            elif done is not None and total and done >= total:
                problem = f"zombie: {done}/{total} trials done but still RUNNING"
        elif base_state(job) in ctx.cfg.failure_states:
            mins = elapsed_minutes(job.elapsed)
            if mins is not None and mins < ctx.cfg.instant_fail_minutes:
                problem = f"instant-fail after {job.elapsed}"
        if not problem:
            continue
        if exempt:
            out.append(_flag("eval_health", "info", job, f"{problem} — calibration run (DCAgent2), exempt"))
        else:
            out.append(_flag("eval_health", "warn", job, problem, "investigate"))
    return out


def rule_rl_concurrency_cap(ctx: RuleContext) -> list[Flag]:
    """RL RUNNING per cluster vs the cap in ops.md: report, never act."""
    out = []
    for s in ctx.snaps:
        cap = ctx.caps.get(s.cluster)
        rl = [j for j in s.running or [] if j.bucket == "RL"]
        if cap is not None and len(rl) > cap:
            out.append(
                Flag(
                    "rl_concurrency_cap",
                    "warn",
                    s.cluster,
                    "",
                    "",
                    "RL",
                    f"{len(rl)} RL jobs RUNNING > cap {cap} (ops.md rl_concurrency_cap)",
                )
            )
    return out


def rule_concluded_series(ctx: RuleContext) -> list[Flag]:
    """A RUNNING job in a concluded series (a3): do not launch/refill — report."""
    out = []
    for job in ctx.jobs("RL", "squeue"):
        tag = has_tag(job.name, ctx.cfg.concluded)
        if tag:
            out.append(
                _flag("concluded_series", "warn", job, f"series {tag} is CONCLUDED: this launch should not exist")
            )
    return out


def rule_datagen_realness(ctx: RuleContext) -> list[Flag]:
    """avg_turns ≈ 1.0 means the generator is dead (no multi-turn trajectories)."""
    out = []
    for job in ctx.jobs("Datagen"):
        turns = job.metrics.get("avg_turns")
        if turns is not None and abs(turns - 1.0) < 0.05:
            out.append(
                _flag("datagen_realness", "critical", job, f"avg_turns={turns:g} ≈ 1.0: dead datagen", "investigate")
            )
    return out


def rule_tree_hygiene(ctx: RuleContext) -> list[Flag]:
    """The cluster clone has piled-up files or is behind/ahead: what to do in the LOCAL clone."""
    out = []
    for s in ctx.snaps:
        tree = s.tree or {}
        if tree.get("error"):
            out.append(Flag("tree_hygiene", "warn", s.cluster, "", "", "", tree["error"]))
        elif tree and not tree.get("clean", True):
            items = tree.get("items", [])
            shown = "; ".join(f"{i['path']}: {i['suggestion']}" for i in items[:6])
            more = f"; … {len(items) - 6} more" if len(items) > 6 else ""
            out.append(
                Flag(
                    "tree_hygiene",
                    "warn",
                    s.cluster,
                    "",
                    "",
                    "",
                    f"{tree.get('summary', '')} — {shown}{more}".strip(" —"),
                    "triage-local",
                )
            )
    return out


def rule_inode_headroom(ctx: RuleContext) -> list[Flag]:
    """INODE HEADROOM: at/over the soft limit -> red flag + reclaim (the cleanup DAG over the
    completed-but-not-removed backlog); near it -> warn; unreadable -> UNKNOWN, never "fine"."""
    out = []
    for s in ctx.snaps:
        q = s.quota
        if not q:
            continue
        status = q.get("status")
        if status == "OVER":
            out.append(
                Flag(
                    "inode_headroom",
                    "critical",
                    s.cluster,
                    "",
                    "",
                    "",
                    f"OVER the soft limit: {q.get('reason')}",
                    "reclaim",
                )
            )
        elif status == "NEAR":
            out.append(Flag("inode_headroom", "warn", s.cluster, "", "", "", f"near the soft limit: {q.get('reason')}"))
        elif status == "UNKNOWN":
            out.append(Flag("inode_headroom", "warn", s.cluster, "", "", "", f"quota UNKNOWN: {q.get('reason')}"))
    return out


RULES: dict[str, Callable[[RuleContext], list[Flag]]] = {
    "liveness_stale": rule_liveness_stale,
    "completion_cleanup": rule_completion_cleanup,
    "rl_resume_overshoot": rule_rl_resume_overshoot,
    "chain_timeout": rule_chain_timeout,
    "genuine_failure": rule_genuine_failure,
    "rl_collapse": rule_rl_collapse,
    "rl_new_untested": rule_rl_new_untested,
    "eval_health": rule_eval_health,
    "rl_concurrency_cap": rule_rl_concurrency_cap,
    "concluded_series": rule_concluded_series,
    "datagen_realness": rule_datagen_realness,
    "tree_hygiene": rule_tree_hygiene,
    "inode_headroom": rule_inode_headroom,
}


def apply_rules(ctx: RuleContext) -> list[Flag]:
    """Every rule over the sweep; each flag is also attached to its job (for the Note column)."""
    flags = [f for name, rule in RULES.items() for f in run_isolated(name, rule, ctx)]  # one bad job: a note
    by_job: dict[tuple[str, str], list[Flag]] = {}
    for f in flags:
        by_job.setdefault((f.cluster, f.job_id), []).append(f)
    for s in ctx.snaps:
        for job in s.all_jobs():
            job.flags = [f.to_dict() for f in by_job.get((job.cluster, job.job_id), [])]
    return flags
