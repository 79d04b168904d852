"""The brakes on standing permissions (pure): each permission's caps (``max_per_run`` in this run,
``max_per_day`` over the ledger's acts of the last 24 h) and the circuit breaker (many of one
cluster's RUNNING jobs flagged by one rule at once: a hung filesystem or a slow controller is
likelier than that many wedges, so no standing act runs on that cluster). A job a brake stops asks
a human; its offer's ``brake`` says why, and the approval prompt shows it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.config.relaunch_schema import BreakerConfig
from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.ledger.acts import PastAct
from sweep_core.ledger.view import LedgerView

STANDING_RE = re.compile(r"^standing\[(\d+)\] \S+ \S+")  # the label standing_permission returns
BREAKER = "circuit breaker"


@dataclass(frozen=True)
class Trip:
    """The circuit breaker tripped on one cluster: the rule, how many RUNNING jobs it flagged of how many."""

    cluster: str
    rule: str
    flagged: int
    running: int
    why: str


def breaker_trips(
    decisions: Sequence[CancelDecision], running: Mapping[str, int], cfg: BreakerConfig
) -> dict[str, Trip]:
    """cluster -> its trip, where one rule flagged >= ``min_jobs`` of the cluster's RUNNING jobs and
    >= ``min_share`` of them (``running``: RUNNING jobs per cluster in the validating squeue; a count
    below the flagged jobs, or none, counts as the flagged jobs alone: a share of 1)."""
    flagged = Counter((d.request.cluster, d.request.rule) for d in decisions if d.state == "RUNNING")
    trips: dict[str, Trip] = {}
    for (cluster, rule), n in sorted(flagged.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1])):
        total = max(int(running.get(cluster, 0)), n)
        if cluster in trips or n < cfg.min_jobs or n / total < cfg.min_share:
            continue
        why = (
            f"{BREAKER}: {n} of {total} RUNNING jobs on {cluster} flagged [{rule or '?'}] at once "
            f"(>= {cfg.min_share:.0%} and >= {cfg.min_jobs}): a filesystem or scheduler fault is likelier "
            f"than {n} wedges; standing permissions suspended on {cluster}, every job asks a human"
        )
        trips[cluster] = Trip(cluster, rule, n, total, why)
    return trips


def standing_acts(standing: Sequence[PastAct], label: str, *, since: str = "", run_id: str = "") -> int:
    """Relaunches and cancels taken under standing permission ``label`` (``standing``: the folded
    ledger's, ledger.view.LedgerView.standing; at or after ``since``, ISO; of run ``run_id`` when given)."""
    return sum(
        1 for a in standing if a.standing.startswith(label) and a.at >= since and (not run_id or a.run == run_id)
    )


def apply_brakes(
    decisions: Sequence[CancelDecision],
    view: LedgerView,
    ccfg: CancelConfig,
    *,
    running: Mapping[str, int],
    now: dt.datetime,
    run_id: str,
) -> dict[str, Trip]:
    """Per decision a standing permission covers (in place, in order): suspended on a cluster the
    circuit breaker tripped on, or beyond the permission's ``max_per_run`` / ``max_per_day``, its
    ``standing`` cleared and ``brake`` saying why (a human is asked); ``view``: the ledger folded
    for them (its standing acts counted). Returns the trips."""
    trips = breaker_trips(decisions, running, ccfg.breaker)
    day_ago = (now - dt.timedelta(days=1)).isoformat()
    used: Counter[str] = Counter()
    for d in decisions:
        label = str(d.offer.get("standing") or "")
        m = STANDING_RE.match(label)
        if d.verdict != "cancel" or m is None:
            continue
        perm = ccfg.standing[int(m.group(1))]
        key = m.group(0)
        why = ""
        if d.request.cluster in trips:
            why = trips[d.request.cluster].why
        else:
            in_run = standing_acts(view.standing, key, run_id=run_id) + used[key]
            today = standing_acts(view.standing, key, since=day_ago) + used[key]
            if in_run >= perm.max_per_run:
                why = f"{key}: max_per_run {perm.max_per_run} reached in this run: a human decides the rest"
            elif today >= perm.max_per_day:
                why = f"{key}: max_per_day {perm.max_per_day} reached ({today} in the last 24 h): a human decides"
        if why:
            d.offer["standing"], d.offer["brake"] = "", why
        else:
            used[key] += 1
    return trips
