"""What sweep_cancel announces where people are (issue 20): an act a standing permission took with
no human (to the channels that hear hand-offs), a RECURRING job escalated (relaunched, wedged
again at the same step: to the channels that hear critical), a series at its relaunch cap (once
per series, critical) and the circuit breaker suspending standing permissions on a cluster (once
per cluster and day, critical); and sweep_hf_chain's ESCALATED leg (a failed upload/eval leg past
``leg_retries``: once per escalation, critical). Each is told once: its ``key`` is what the ledger's told-once
record (ledger/told.py) remembers, so a re-run tells nothing again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sweep_core.alerts.layout import Message
from sweep_core.safe.text import clean

STANDING, ESCALATED = "standing", "escalated"  # ESCALATED: every critical notice (the channels hearing critical)


@dataclass(frozen=True)
class Notice:
    """One announcement: ``kind`` (standing | escalated), its told-once key, its message."""

    kind: str
    key: str
    message: Message


def hears(channel: Any, n: Notice) -> bool:
    """Whether a channel hears a notice: a critical one, the channels hearing critical; the others,
    the channels hearing hand-offs."""
    return "critical" in channel.severities if n.kind == ESCALATED else bool(channel.handoffs)


def _where(d: Mapping[str, Any]) -> str:
    r = d["request"]
    return clean(f"{r['cluster']} {r['job_id']} {r['name']}", newlines=False)


def _evidence(d: Mapping[str, Any]) -> list[str]:
    ev = d.get("evidence") or {}
    lines = [clean(str(d["request"].get("evidence") or ""), newlines=False)]
    if ev:
        silent = ev["remote_now"] - ev["last_output"] if ev.get("remote_now") and ev.get("last_output") else None
        lines.append(
            f"step {ev.get('step')}, nodes {clean(str(ev.get('nodelist') or '?'), newlines=False)}, "
            f"silent {silent // 60 if silent is not None else '?'} min, Restarts={ev.get('restarts') or '?'}"
        )
    return [ln for ln in lines if ln]


def notices(
    decisions: Iterable[Mapping[str, Any]],
    results: Mapping[str, Mapping[str, object]],
    *,
    run_id: str,
    links: list[tuple[str, str]],
) -> list[Notice]:
    """The announcements of one sweep_cancel run: per job a standing-permission act that ran (its
    result in ``results``: cluster -> job id -> outcome, said as its text) and per RECURRING job its
    escalation."""
    out: list[Notice] = []
    for d in decisions:
        if d.get("verdict") != "cancel":
            continue
        r, offer = d["request"], d.get("offer") or {}
        where = _where(d)
        step = str((d.get("evidence") or {}).get("step"))
        if offer.get("recurring"):
            msg = Message(
                clean(f"ESCALATED (critical): {where} is RECURRING, no relaunch offered", newlines=False),
                [
                    ("Why", [clean(str(offer.get("why") or ""), newlines=False)]),
                    ("Evidence", _evidence(d)),
                    (
                        "What now",
                        [
                            "a person must look: the same failure came back after a relaunch; "
                            "sweep_cancel asks only Cancel / Reject"
                        ],
                    ),
                ],
                list(links),
                keys=[f"escalated|{r['cluster']}|{r['job_id']}|{step}"],
            )
            out.append(Notice(ESCALATED, f"escalated|{r['cluster']}|{r['job_id']}|{step}", msg))
        if offer.get("capped"):
            key = f"capped|{offer.get('series') or r['cluster'] + '|' + r['name']}"
            msg = Message(
                clean(f"ESCALATED (critical): {where}: relaunch cap reached, no relaunch offered", newlines=False),
                [
                    ("Why", [clean(str(offer.get("why") or ""), newlines=False)]),
                    ("Evidence", _evidence(d)),
                    ("What now", ["a person must look: the series was relaunched as often as allowed"]),
                ],
                list(links),
                keys=[key],
            )
            out.append(Notice(ESCALATED, key, msg))
        res = str(results.get(r["cluster"], {}).get(r["job_id"]) or "")
        if offer.get("standing") and res:
            msg = Message(
                clean(f"Standing permission acted, no human asked: {where}: {res}", newlines=False),
                [
                    ("Permission", [clean(str(offer["standing"]), newlines=False)]),
                    ("Evidence", _evidence(d)),
                    ("Relaunch policy", [clean(str(offer.get("why") or "-"), newlines=False)]),
                ],
                list(links),
                keys=[f"standing|{r['cluster']}|{r['job_id']}|{run_id}"],
            )
            out.append(Notice(STANDING, f"standing|{r['cluster']}|{r['job_id']}|{run_id}", msg))
    return out


def breaker_notices(trips: Iterable[Any], *, day: str, links: list[tuple[str, str]]) -> list[Notice]:
    """ONE critical notice for every cluster the circuit breaker tripped on (handoffs.relaunch.brakes.Trip),
    told once per set of clusters and ``day`` (a fault that lasts hours is told once, not every sweep)."""
    trips = sorted(trips, key=lambda t: t.cluster)
    if not trips:
        return []
    keys = [f"breaker|{t.cluster}|{day}" for t in trips]
    where = ", ".join(f"{t.cluster} ({t.flagged} of {t.running} RUNNING flagged [{t.rule}])" for t in trips)
    msg = Message(
        clean(f"CRITICAL: standing permissions suspended on {where}", newlines=False),
        [
            ("Why", [clean(t.why, newlines=False) for t in trips]),
            (
                "What now",
                [
                    "check the clusters' filesystems and controllers first; sweep_cancel asks a "
                    "human for every one of these jobs (no standing act runs there today)"
                ],
            ),
        ],
        list(links),
        keys=keys,
    )
    return [Notice(ESCALATED, "|".join(keys), msg)]


TRACEBACK_LINES = 20  # the traceback excerpt an escalated HF-chain leg's notice carries (its last lines)


def chain_notices(steps: Iterable[Mapping[str, Any]], *, links: list[tuple[str, str]]) -> list[Notice]:
    """ONE critical notice per HF-chain leg escalated in this advance (sweep_hf_chain's step dicts,
    ``escalated`` set on the run it happened): the series, cell, leg, the job that failed last, the
    traceback excerpt. Told once per escalation (key: series, cell, leg, failed job)."""
    out: list[Notice] = []
    for st in steps:
        leg = str(st.get("escalated") or "")
        if not leg:
            continue
        series, cell, job = (clean(str(st.get(k) or ""), newlines=False) for k in ("series", "cell", "failed_job"))
        key = f"hfchain|{series}|{cell}|{leg}|{job}"
        raw_tb = str(st.get("traceback") or "")
        tb = [clean(ln, newlines=False) for ln in raw_tb.splitlines() if ln.strip()]
        why = str(st.get("note") or "").replace(f": {raw_tb}", "") if raw_tb else str(st.get("note") or "")
        msg = Message(
            clean(
                f"ESCALATED (critical): HF chain {series}/{cell}: the {leg} leg failed past its retries", newlines=False
            ),
            [
                ("Leg", [f"series {series}, cell {cell}, leg {leg}, last failed job {job or '?'}"]),
                ("Why", [clean(why, newlines=False)]),
                ("Traceback (excerpt)", tb[-TRACEBACK_LINES:] or ["none found in the job's log"]),
                ("What now", ["a person takes over: the chain does not resubmit this leg again"]),
            ],
            list(links),
            keys=[key],
        )
        out.append(Notice(ESCALATED, key, msg))
    return out
