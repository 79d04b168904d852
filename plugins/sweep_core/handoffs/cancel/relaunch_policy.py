"""The relaunch policy (pure): which failure a flag's evidence names, whether "Cancel and relaunch"
is offered (a kind a relaunch can fix, under the series' attempt cap counted in its own ledger
record across renames, out of its cooldown, not RECURRING: wedged again at the step of its last
relaunch, or with no readable step at all on its second wedge), whether a standing permission lets
it proceed without a human (its rule, clusters, full-match name, silence, nodes; the caps and the
circuit breaker are handoffs.cancel.brakes), and whether a Rejected request may be asked again.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from typing import Any

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.config.relaunch_schema import RelaunchConfig, SeriesRelaunch, StandingPermission
from sweep_core.ledger.acts import ActKind, acts_of, relaunch_series, series_acts, series_key, series_record
from sweep_core.ledger.entries import Ledger


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
    *,
    cluster: str,
    job_id: str,
    name: str,
    evidence: str,
    state: str,
    step: int | None,
    ledger: Ledger,
    cfg: RelaunchConfig,
    now: dt.datetime,
) -> Offer:
    """Whether "Cancel and relaunch" is offered for this job (RUNNING SLURM jobs only), and why."""
    kind = failure_kind(evidence, cfg) or "unknown"
    series = relaunch_series(ledger, cluster, job_id, name)
    spec = series_spec(name, cfg)
    cap = (spec.max_attempts if spec else None) or cfg.max_attempts
    cool = spec.cooldown_minutes if spec and spec.cooldown_minutes is not None else cfg.cooldown_minutes
    done = series_acts(ledger, series, ActKind.RELAUNCH)
    rec = series_record(ledger, series)
    count = max(rec.count, len(done))  # its own record; the acts of a ledger from before it
    base = Offer(False, "", kind, series, count + 1, False, spec.checkpoint_signal if spec else "", 0)
    base.grace_s = spec.grace_s if spec else 0
    if state != "RUNNING":
        base.why = f"{state or 'not listed'}: only a RUNNING job is relaunched"
        return base
    if kind not in cfg.fixable:
        base.why = f"failure kind {kind}: a relaunch cannot fix it (never relaunched as it is)"
        return base
    mine = acts_of(ledger, cluster, job_id, ActKind.RELAUNCH)
    last = (mine or done or [None])[-1]
    last_at = (last or {}).get("at") or rec.last_at or "?"
    last_step = last.get("step") if last is not None else (rec.last_step if rec.count else None)
    if last_step is not None and step is not None and last_step == str(step):
        base.recurring = True
        base.why = f"RECURRING: wedged again at step {step}, the step of its relaunch at {last_at}: escalated"
        return base
    if count and step is None:
        base.recurring = True
        base.why = (
            f"RECURRING: wedged again with no readable step after {count} relaunch(es) of series {series} "
            f"(the last at {last_at}): escalated"
        )
        return base
    if count >= cap:
        base.capped = True
        told = f" (escalated at {rec.escalated})" if rec.escalated else ": escalated"
        base.why = f"attempt cap reached: {count} relaunch(es) of series {series} (max {cap}){told}"
        return base
    last_any = (done[-1].get("at", "") if done else "") or rec.last_at
    if count and _ago_min(last_any, now) < cool:
        base.why = f"cooldown: series {series} relaunched {_ago_min(last_any, now):.0f} min ago (< {cool:g} min)"
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


def asked_again(ledger: Ledger, cluster: str, job_id: str, silent_s: int | None, factor: float) -> tuple[bool, str]:
    """(may ask, why not): a Reject is remembered until the silence grows ``factor`` times."""
    rejects = acts_of(ledger, cluster, job_id, ActKind.REJECT)
    if not rejects:
        return True, ""
    last = rejects[-1]
    then = int(last.get("silent_s") or 0)
    if silent_s is not None and then and silent_s >= factor * then:
        return True, ""
    need = f"; asked again once silent >= {factor * then / 60:.0f} min" if then else ""
    return False, f"rejected by {last.get('by') or '?'} at {last.get('at', '?')} (silent {then // 60} min){need}"


def series_pending(ledger: Ledger | None, cluster: str, job_id: str, name: str, cap: int) -> list[tuple[str, str]]:
    """(id, name) of the PENDING jobs the ledger knows in the job's series (or under its name) on its
    cluster, at most ``cap`` (the requeue script re-checks each is still PENDING under its name)."""
    if ledger is None or cap <= 0:
        return []
    series = series_key(ledger.jobs.get(f"{cluster}|{job_id}"), cluster, name)
    out = [
        (e.job_id, e.name)
        for e in ledger.jobs.values()
        if e.cluster == cluster
        and e.job_id != job_id
        and e.state == "PENDING"
        and (e.name == name or series_key(e, cluster, e.name) == series)
    ]
    return sorted(out)[:cap]


def relaunch_config(ccfg: CancelConfig) -> RelaunchConfig:
    return ccfg.relaunch
