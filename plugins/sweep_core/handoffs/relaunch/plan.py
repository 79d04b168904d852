"""The relaunch policy (pure), judged on a job's folded history (ledger.view.JobView, folded once:
the policy never goes back to the ledger): which failure a flag's evidence names, whether "Cancel
and relaunch" is offered (a kind a relaunch can fix, under the series' attempt cap counted in its
own ledger record across renames, out of its cooldown, not RECURRING: wedged again at the step of
its last relaunch, or with no readable step at all on its second wedge), whether a standing
permission lets it proceed without a human (its rule, clusters, full-match name, silence, nodes;
the caps and the circuit breaker are handoffs.relaunch.brakes), whether a Rejected request may be
asked again; ``assess`` puts it on each validated decision, ``rejudge`` judges it again on the
evidence read right before the act, and ``relaunch_plan`` says how one job is relaunched.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.config.relaunch_schema import RelaunchConfig, SeriesRelaunch, StandingPermission
from sweep_core.handoffs.cancel.fresh import Evidence, moved, on_silence
from sweep_core.handoffs.cancel.overrides import takes_overrides
from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.handoffs.relaunch.bad_nodes import find_bad_nodes, merged_exclude
from sweep_core.handoffs.relaunch.remote import RelaunchJob, command_argv
from sweep_core.ledger.acts import ActKind
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.verdicts import DEEP_DIVE_KILL
from sweep_core.ledger.view import JobView, LedgerView, fold_view
from sweep_core.records.vocab import Action

NO_COMMAND = "iris has no requeue: relaunched only through an ops.md relaunch_commands entry, none matches"


def failure_kind(evidence: str, cfg: RelaunchConfig) -> str:
    """The first configured kind whose regex matches the flag line (its evidence); "" = none."""
    for kp in cfg.kinds:
        if kp.pattern.search(evidence):
            return kp.kind
    return ""


def series_spec(name: str, cfg: RelaunchConfig) -> SeriesRelaunch | None:
    """The first per-series override matching the job name."""
    return next((s for s in cfg.series if s.match.search(name)), None)


@dataclass
class Offer:
    """What the policy says for one job: relaunch offered or not and why, RECURRING, the plan."""

    relaunch: bool
    why: str
    kind: str = ""
    series: str = ""
    attempt: int = 0  # the attempt this relaunch would be (1 = first)
    recurring: bool = False
    signal: str = ""
    grace_s: int = 0
    standing: str = ""  # the standing permission that lets it proceed without a human ("" = ask)
    capped: bool = False  # the series' attempt cap is reached: escalated (told once per series)
    brake: str = ""  # why a standing permission that covers it was not used (caps, circuit breaker)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Offer:
        return cls(**data)


def _ago_min(at: str, now: dt.datetime) -> float:
    try:
        return (now - dt.datetime.fromisoformat(at)).total_seconds() / 60.0
    except ValueError:
        return float("inf")


def relaunch_offer(
    job: JobView,
    *,
    evidence: str,
    state: str,
    step: int | None,
    cfg: RelaunchConfig,
    now: dt.datetime,
) -> Offer:
    """Whether "Cancel and relaunch" is offered for this job (RUNNING SLURM jobs only), and why."""
    kind = failure_kind(evidence, cfg) or "unknown"
    s = job.series
    spec = series_spec(job.name, cfg)
    cap = (spec.max_attempts if spec else None) or cfg.max_attempts
    cool = spec.cooldown_minutes if spec and spec.cooldown_minutes is not None else cfg.cooldown_minutes
    count = s.count  # its own record; the acts of a ledger from before it
    base = Offer(False, "", kind, s.key, count + 1, False, spec.checkpoint_signal if spec else "", 0)
    base.grace_s = spec.grace_s if spec else 0
    if state != "RUNNING":
        base.why = f"{state or 'not listed'}: only a RUNNING job is relaunched"
        return base
    if kind not in cfg.fixable:
        base.why = f"failure kind {kind}: a relaunch cannot fix it (never relaunched as it is)"
        return base
    mine = [a for a in job.acts if a.kind == ActKind.RELAUNCH]
    last = (mine or list(s.relaunches) or [None])[-1]
    last_at = (last.at if last else "") or s.record_at or "?"
    last_step = last.step if last is not None else (s.record_step if s.recorded else None)
    if last_step is not None and step is not None and last_step == str(step):
        base.recurring = True
        base.why = f"RECURRING: wedged again at step {step}, the step of its relaunch at {last_at}: escalated"
        return base
    if count and step is None:
        base.recurring = True
        base.why = (
            f"RECURRING: wedged again with no readable step after {count} relaunch(es) of series {s.key} "
            f"(the last at {last_at}): escalated"
        )
        return base
    if count >= cap:
        base.capped = True
        told = f" (escalated at {s.escalated})" if s.escalated else ": escalated"
        base.why = f"attempt cap reached: {count} relaunch(es) of series {s.key} (max {cap}){told}"
        return base
    last_any = (s.relaunches[-1].at if s.relaunches else "") or s.record_at
    if count and _ago_min(last_any, now) < cool:
        base.why = f"cooldown: series {s.key} relaunched {_ago_min(last_any, now):.0f} min ago (< {cool:g} min)"
        return base
    base.relaunch = True
    base.why = f"{kind}: a relaunch can fix it (attempt {base.attempt} of {cap})"
    return base


def standing_permission(
    perms: tuple[StandingPermission, ...],
    *,
    action: str,
    rule: str,
    cluster: str,
    name: str,
    silent_s: int | None,
    nodes: int,
) -> str:
    """The first standing permission covering this act ("" = none: a human is asked): its action,
    rule and clusters, its name pattern matching the WHOLE name, the silence and node count."""
    for i, p in enumerate(perms):
        if p.action != action or p.rule != rule or cluster not in p.clusters:
            continue
        if p.name is not None and not p.name.fullmatch(name):
            continue
        if p.min_silent_hours > 0 and (silent_s is None or silent_s < p.min_silent_hours * 3600):
            continue
        if nodes < p.min_nodes:
            continue
        return f"standing[{i}] {p.action} {p.rule}" + (
            f" silent>={p.min_silent_hours:g}h" if p.min_silent_hours else ""
        )
    return ""


def asked_again(job: JobView, silent_s: int | None, factor: float) -> tuple[bool, str]:
    """(may ask, why not): a Reject is remembered until the silence grows ``factor`` times."""
    rejects = [a for a in job.acts if a.kind == ActKind.REJECT]
    if not rejects:
        return True, ""
    last = rejects[-1]
    then = last.silent_s
    if silent_s is not None and then and silent_s >= factor * then:
        return True, ""
    need = f"; asked again once silent >= {factor * then / 60:.0f} min" if then else ""
    return False, f"rejected by {last.by or '?'} at {last.at or '?'} (silent {then // 60} min){need}"


def may_ask(job: JobView, rule: str, silent_s: int | None, factor: float) -> tuple[bool, str]:
    """(may ask, why not) after a Reject: a deep-dive KILL once a probe weighs more than the KILL
    rejected (folded: ``kill_blocked``), any other request once its silence grew ``factor`` times."""
    if rule == DEEP_DIVE_KILL:
        return not job.kill_blocked, job.kill_blocked
    return asked_again(job, silent_s, factor)


def decisions_view(ledger: Ledger, decisions: Iterable[CancelDecision]) -> LedgerView:
    """The ledger folded once for these decisions' jobs (what assess, rejudge and the brakes read)."""
    return fold_view(ledger, jobs_of(decisions))


def jobs_of(decisions: Iterable[CancelDecision]) -> list[tuple[str, str, str]]:
    """(cluster, job id, name) of each decision."""
    return [(d.request.cluster, d.request.job_id, d.request.name) for d in decisions]


def view_of(view: LedgerView, d: CancelDecision) -> JobView:
    """The decision's job in ``view`` (an empty history when it was not folded)."""
    r = d.request
    return view.jobs.get(f"{r.cluster}|{r.job_id}") or JobView(r.cluster, r.job_id, r.name)


def _nodes(d: CancelDecision) -> int:
    return int(d.nodes) if d.nodes.isdigit() else 1


def assess(
    decisions: list[CancelDecision],
    evidence: Mapping[tuple[str, str], Evidence],
    view: LedgerView,
    ccfg: CancelConfig,
    *,
    now: dt.datetime,
    run_id: str,
    iris: Mapping[str, Any] | None = None,
    commands: Mapping[str, Sequence[Any]] | None = None,
) -> None:
    """Per ``cancel`` decision (in place): its evidence and relaunch offer, the standing permission
    that covers it, or ``blocked`` when a Reject is remembered or this run already acted on it.
    ``view``: the ledger folded for these jobs; ``iris``: cluster -> ops.md of the iris clusters
    (relaunched only through an ops.md command); ``commands``: cluster -> its ops.md
    relaunch_commands (a deep-dive KILL is offered "Cancel and relaunch with …" where one matching
    its name takes ``{overrides}``)."""
    for d in decisions:
        _assess_one(d, evidence, view_of(view, d), ccfg, now=now, run_id=run_id, iris=iris)
        if d.verdict == "cancel" and d.state == "RUNNING" and d.request.rule == DEEP_DIVE_KILL:
            cmds = (commands or {}).get(d.request.cluster) or ()
            cmd = next((c for c in cmds if c.match.search(d.request.name)), None)
            if cmd is not None and takes_overrides(cmd.argv):
                d.offer["overrides"] = "the corrected setting through the ops.md relaunch command's {overrides}"


def _assess_one(
    d: CancelDecision,
    evidence: Mapping[tuple[str, str], Evidence],
    job: JobView,
    ccfg: CancelConfig,
    *,
    now: dt.datetime,
    run_id: str,
    iris: Mapping[str, Any] | None,
) -> None:
    """assess for one decision (see assess)."""
    rcfg = ccfg.relaunch
    if d.verdict != "cancel":
        return
    r = d.request
    if any(a.run == run_id for a in job.acts if a.kind != ActKind.EVIDENCE):
        d.verdict, d.reasons = "blocked", [f"already acted on by this run ({run_id})"]
        return
    ev = evidence.get((r.cluster, r.job_id))
    icfg = (iris or {}).get(r.cluster)
    if ev is None and icfg is not None and d.state == "RUNNING":
        _assess_iris(d, icfg, job, ccfg, now)
        return
    if ev is None:  # a PENDING chain link (or iris not RUNNING): cancel only
        d.offer = Offer(False, "no relaunch here (iris, or not RUNNING)").to_dict()
        d.offer["standing"] = _standing(ccfg, "cancel", d, None)
        return
    d.evidence = ev.to_dict()
    ok, why = may_ask(job, r.rule, ev.silent_s, rcfg.reask_factor)
    if not ok:
        d.verdict, d.reasons = "blocked", [why]
        return
    step = ev.step if ev.step is not None else job.step
    offer = relaunch_offer(job, evidence=r.evidence, state=d.state, step=step, cfg=rcfg, now=now)
    if r.action != Action.KILL_APPROVAL and offer.relaunch:
        offer.relaunch, offer.why = False, f"action {r.action}: cancel only"
    if offer.relaunch and ev.requeue == "0" and rcfg.requeue_disabled == "refuse":
        offer.relaunch = False
        offer.why = "Requeue=0 (sbatch --no-requeue): refused by cancel.relaunch.requeue_disabled: refuse"
    act = "relaunch" if offer.relaunch else "cancel"
    offer.standing = "" if offer.recurring or offer.capped else _standing(ccfg, act, d, ev.silent_s)
    d.offer = offer.to_dict()


def _assess_iris(d: CancelDecision, icfg: Any, job: JobView, ccfg: CancelConfig, now: dt.datetime) -> None:
    """An iris RUNNING job: the same policy (its step from the ledger), offered only where an ops.md
    relaunch command matches its name (iris has no requeue)."""
    r = d.request
    ok, why = may_ask(job, r.rule, None, ccfg.relaunch.reask_factor)
    if not ok:
        d.verdict, d.reasons = "blocked", [why]
        return
    offer = relaunch_offer(job, evidence=r.evidence, state=d.state, step=job.step, cfg=ccfg.relaunch, now=now)
    if r.action != Action.KILL_APPROVAL and offer.relaunch:
        offer.relaunch, offer.why = False, f"action {r.action}: cancel only"
    if offer.relaunch and not has_command(icfg, r.name):
        offer.relaunch, offer.why = False, NO_COMMAND
    elif offer.relaunch:
        offer.why = iris_offer_why(offer.why)
    act = "relaunch" if offer.relaunch else "cancel"
    offer.standing = "" if offer.recurring or offer.capped else _standing(ccfg, act, d, None)
    d.offer = offer.to_dict()


def _standing(ccfg: CancelConfig, act: str, d: CancelDecision, silent_s: int | None) -> str:
    """The standing permission covering this act; never one for a by-hand request (it always asks)."""
    if d.by_hand:
        return ""
    r = d.request
    return standing_permission(
        ccfg.standing, action=act, rule=r.rule, cluster=r.cluster, name=r.name, silent_s=silent_s, nodes=_nodes(d)
    )


def _secs(v: int | None) -> str:
    return "?" if v is None else f"{v:,} s"


def rejudge(
    d: CancelDecision, fresh: Evidence, job: JobView, ccfg: CancelConfig, *, now: dt.datetime, relaunch: bool
) -> str:
    """Why the act must not run now ("" = it may): the job moved since it was judged, the relaunch
    is no longer offered on the new evidence, or its standing permission no longer covers it."""
    why = moved(d.evidence, fresh, on_silence(d))
    if why:
        return why
    r = d.request
    if relaunch and not d.offer.get("with"):  # a relaunch with a human's corrected setting: not the policy's
        step = fresh.step if fresh.step is not None else job.step  # as assess judged
        offer = relaunch_offer(
            job, evidence=r.evidence, state=fresh.state or d.state, step=step, cfg=ccfg.relaunch, now=now
        )
        if not offer.relaunch:
            return f"relaunch no longer offered on the evidence read now: {offer.why}"
    if d.offer.get("standing"):
        still = standing_permission(
            ccfg.standing,
            action="relaunch" if relaunch else "cancel",
            rule=r.rule,
            cluster=r.cluster,
            name=r.name,
            silent_s=fresh.silent_s,
            nodes=_nodes(d),
        )
        if not still:
            return (
                f"{d.offer['standing']} no longer covers it on the evidence read now (silent {_secs(fresh.silent_s)})"
            )
    return ""


def relaunch_plan(
    d: CancelDecision, ev: Evidence, ccfg: CancelConfig, commands: Sequence[Any], job: JobView | None = None
) -> RelaunchJob:
    """How one job is relaunched: the ops.md command matching its name, else ``scontrol requeue``;
    a bad node its saved tail names is excluded from it and from its series' PENDING jobs (at most
    ``max_pending_excluded`` of those ``job``'s view holds; none without a view)."""
    r = d.request
    rcfg = ccfg.relaunch
    spec = series_spec(r.name, rcfg)
    bad = find_bad_nodes(ev.tail, rcfg.bad_nodes, ev.nodelist, rcfg.max_bad_nodes)
    cmd = next((c for c in commands if c.match.search(r.name)), None)
    array, _, task = r.job_id.partition("_")
    fill = {"job_id": r.job_id, "name": r.name, "array_job": array, "task": task, "exclude": ",".join(bad.nodes)}
    given = tuple(d.offer.get("with") or ())  # "Cancel and relaunch with …": the corrected setting
    if given and cmd is None:
        raise ValueError("no ops.md relaunch command matches it: the corrected setting cannot be passed")
    argv = command_argv(cmd.argv, fill, given) if cmd else ()  # ValueError: a name or an override not plain
    cap = max(rcfg.max_pending_excluded, 0)
    pending = job.series.pending[:cap] if bad.nodes and job is not None else ()
    return RelaunchJob(
        r.job_id,
        r.name,
        signal=spec.checkpoint_signal if spec else "",
        grace_s=spec.grace_s if spec else 0,
        set_requeue=ev.requeue == "0" and rcfg.requeue_disabled == "set",
        command=argv,
        exclude=merged_exclude(ev.exc_nodes, bad.nodes) if bad.nodes else "",
        bad=bad.nodes,
        pending=tuple(pending),
        bad_note=bad.note,
    )


# iris has no requeue: a RUNNING iris job is offered a relaunch only through an ops.md command (relaunch.iris)
def iris_offer_why(why: str) -> str:
    """The offer's why for an iris job (stop, then the ops.md command)."""
    return f"{why}; iris: iris job stop, then the ops.md relaunch command"


def has_command(cfg: Any, name: str) -> bool:
    """Whether an ops.md relaunch_commands entry of ``cfg`` matches the job name."""
    return any(c.match.search(name) for c in getattr(cfg, "relaunch_commands", ()))
