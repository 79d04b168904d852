"""What was done to a job, and how a human answered, in its ledger entry (``acts``): a relaunch with
the wedge's evidence (saved BEFORE the requeue truncates the log), a cancel, a Reject (asked again
only when the evidence grows), an unanswered request (asked again next sweep), an escalation.
Each act is a flat object of strings; its ``kind`` is one of ActKind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from sweep_core.ledger.entries import Ledger, LedgerEntry, SeriesRelaunches
from sweep_core.ledger.given import release_given
from sweep_core.ledger.store import load_ledger, update_jobs

MAX_ACTS = 50  # per job; the oldest go first
CANCEL_KIND = "cancel"  # the per-job hand-off kind (ledger.runs.PER_JOB) a request was given under


class ActKind(StrEnum):
    EVIDENCE = "evidence"  # saved right before a relaunch: tail, last output, step, nodes
    RELAUNCH = "relaunch"
    CANCEL = "cancel"
    REJECT = "reject"
    UNANSWERED = "unanswered"
    ESCALATED = "escalated"
    RELAUNCHED_FROM = "relaunched_from"  # on a new id an ops.md relaunch command submitted: "from" = old key
    VERDICT = "verdict"  # an RL deep-dive verdict: its evidence, watch signals, signal count (handoffs.deep_dive)


def _int(text: str | None) -> int:
    return int(text) if text and text.isdigit() else 0


@dataclass(frozen=True)
class PastAct:
    """One act as the ledger keeps it (a flat object of strings), typed: what the policies read."""

    kind: str
    run: str = ""
    at: str = ""
    step: str = ""  # the step judged ("" = no readable step)
    by: str = ""
    silent_s: int = 0  # the silence judged (0 = not read)
    standing: str = ""  # the standing permission it ran under ("" = a human's answer)
    rule: str = ""  # a Reject's request rule (deep_dive_kill)
    weight: int = 0  # a verdict's, or a rejected KILL's, evidence weight
    line: str = ""  # what a settled kernel attempt came to (act_line), '' = not one

    @classmethod
    def of(cls, act: Mapping[str, str]) -> PastAct:
        return cls(
            str(act.get("kind", "")),
            str(act.get("run", "")),
            str(act.get("at", "")),
            str(act.get("step", "")),
            str(act.get("by", "")),
            _int(act.get("silent_s")),
            str(act.get("standing", "")),
            str(act.get("rule", "")),
            _int(act.get("weight")),
            act_line(act),
        )


def act_line(act: Mapping[str, Any]) -> str:
    """``<act> <target>: <outcome> (<why>)`` of a stored attempt that names its act (kernel.attempt
    ``to_row``: ``act``, ``target``) and its outcome word, with its ``why`` else its ``evidence``
    (``rm /scratch/x: ok (started pid 77)``); '' for any other act."""
    kind, target, said = (str(act.get(k) or "") for k in ("act", "target", "outcome"))
    if not (kind and target and said):
        return ""
    why = str(act.get("why") or act.get("evidence") or "")
    return f"{kind} {target}: {said.lower()}" + (f" ({why})" if why else "")


def series_key(entry: LedgerEntry | None, cluster: str, name: str) -> str:
    """The series a job's relaunches count against: its RL series, else its name on its cluster."""
    if entry is not None and entry.series:
        return entry.series
    return f"{cluster}|{name}"


def relaunch_series(ledger: Ledger, cluster: str, job_id: str, name: str) -> str:
    """The series a job's relaunches count against: the one a relaunch link gave it (an ops.md
    command's new id, whatever its name), else series_key."""
    e = ledger.jobs.get(f"{cluster}|{job_id}")
    return e.relaunch_series if e is not None and e.relaunch_series else series_key(e, cluster, name)


def series_record(ledger: Ledger, series: str) -> SeriesRelaunches:
    """The series' own relaunch record (an empty one when it has none; not stored)."""
    return ledger.relaunches.get(series) or SeriesRelaunches()


def acts_of(ledger: Ledger, cluster: str, job_id: str, kind: str = "") -> list[dict[str, str]]:
    """The job's acts, oldest first (only ``kind`` when given)."""
    e = ledger.jobs.get(f"{cluster}|{job_id}")
    return [a for a in (e.acts if e else []) if not kind or a.get("kind") == kind]


def add_act(ledger: Ledger, cluster: str, job_id: str, name: str, act: Mapping[str, Any]) -> Ledger:
    """The act appended to the job's entry (created when the ledger does not know it; in place); a
    new relaunch also counts in its series' own record, a "cap reached" escalation is marked there."""
    key = f"{cluster}|{job_id}"
    e = ledger.jobs.get(key)
    if e is None:
        e = ledger.jobs[key] = LedgerEntry(cluster, job_id, name)
    rec = {k: str(v) for k, v in act.items() if v is not None}
    if rec not in e.acts:
        e.acts = [*e.acts, rec][-MAX_ACTS:]
        _count(ledger, e, rec)
    return ledger


def _count(ledger: Ledger, e: LedgerEntry, act: Mapping[str, str]) -> None:
    """A relaunch counted in its series' record (the act's series, else the job's); a "cap reached"
    escalation (``cap`` set) marks when it was told; a link's new id joins the old one's series."""
    kind = act.get("kind")
    if kind == ActKind.RELAUNCHED_FROM:
        old = ledger.jobs.get(str(act.get("from")))
        e.relaunch_series = act.get("series") or (
            relaunch_series(ledger, old.cluster, old.job_id, old.name) if old else e.relaunch_series
        )
        return
    if kind not in (ActKind.RELAUNCH, ActKind.ESCALATED):
        return
    series = act.get("series") or relaunch_series(ledger, e.cluster, e.job_id, e.name)
    r = ledger.relaunches.setdefault(series, SeriesRelaunches())
    if kind == ActKind.RELAUNCH:
        r.count, r.last_at, r.last_step, r.last_job = r.count + 1, act.get("at", ""), act.get("step", ""), e.key
    elif act.get("cap"):
        r.escalated = r.escalated or act.get("at", "") or "yes"


def relaunched_from(ledger: Ledger, cluster: str, job_id: str) -> str:
    """The "cluster|job_id" this job was relaunched from (an ops.md relaunch command's new id), "" = none."""
    links = acts_of(ledger, cluster, job_id, ActKind.RELAUNCHED_FROM)
    return links[-1].get("from", "") if links else ""


def link_acts(
    cluster: str, old_id: str, new_id: str, name: str, act: Mapping[str, Any]
) -> list[tuple[str, str, str, dict[str, str]]]:
    """The acts linking a relaunch's new id to the old (same series in the ledger): ``relaunched_from``
    on the new id, carrying ``act``'s run, time, series and step."""
    keep = {k: str(act[k]) for k in ("run", "at", "series", "step") if k in act}
    return [(cluster, new_id, name, {**keep, "kind": ActKind.RELAUNCHED_FROM, "from": f"{cluster}|{old_id}"})]


def act_rows(
    acts: Iterable[tuple[str, str, str, Mapping[str, Any]]], release: Iterable[Mapping[str, Any]] = ()
) -> tuple[set[str], bool]:
    """The job rows storing ``acts`` (and releasing ``release``) touches: each act's job, the job a
    relaunch link comes from; and whether it changes the ledger row too (a relaunch counted in its
    series, a "cap reached" escalation marked there)."""
    keys = {f"{c}|{j}" for c, j, _, _ in acts} | {f"{r['cluster']}|{r['job_id']}" for r in release}
    keys |= {str(a["from"]) for _, _, _, a in acts if a.get("kind") == ActKind.RELAUNCHED_FROM and a.get("from")}
    top = any(
        a.get("kind") == ActKind.RELAUNCH or (a.get("kind") == ActKind.ESCALATED and a.get("cap")) for *_, a in acts
    )
    return keys, top


def record_acts(
    run_log_dir: str | Path,
    acts: list[tuple[str, str, str, Mapping[str, Any]]],
    *,
    release: list[Mapping[str, Any]] = (),  # type: ignore[assignment]
) -> Ledger:
    """Store ``(cluster, job id, name, act)`` each under the lock of those jobs' rows (act_rows);
    ``release``: jobs whose cancel hand-off is released (asked again next sweep). Returns the ledger
    as saved: its ledger row and the jobs these acts and releases touched."""

    def change(ledger: Ledger) -> tuple[Ledger, Ledger]:
        for cluster, job_id, name, act in acts:
            add_act(ledger, cluster, job_id, name, act)
            _inherit_series(ledger, cluster, job_id, act)
        release_given(ledger, CANCEL_KIND, list(release))
        return ledger, ledger

    keys, top = act_rows(acts, release)
    return update_jobs(run_log_dir, keys, change, top=top)


def _inherit_series(ledger: Ledger, cluster: str, job_id: str, act: Mapping[str, Any]) -> None:
    """A relaunch's new id takes the old link's RL series (its relaunches count against the same cap)."""
    if act.get("kind") != ActKind.RELAUNCHED_FROM:
        return
    new, old = ledger.jobs[f"{cluster}|{job_id}"], ledger.jobs.get(str(act.get("from")))
    if old is not None and old.series and not new.series:
        new.series = old.series


def read_ledger(run_log_dir: str | Path) -> Ledger:
    """The stored ledger, read-only (empty when none)."""
    return load_ledger(run_log_dir)


def standing_record(ledger: Ledger, since: str, cap: int = 50) -> list[dict[str, str]]:
    """Every relaunch and cancel a standing permission took at or after ``since`` (ISO), newest first,
    at most ``cap``: when, the job, the act, the permission, its result (the Sweeps page's panel)."""
    rows = [
        {
            "at": str(a.get("at", "")),
            "cluster": e.cluster,
            "job_id": e.job_id,
            "name": e.name,
            "kind": str(a.get("kind", "")),
            "standing": str(a.get("standing", "")),
            "result": str(a.get("result", "")),
            "run": str(a.get("run", "")),
        }
        for e in ledger.jobs.values()
        for a in e.acts
        if a.get("kind") in (ActKind.RELAUNCH, ActKind.CANCEL) and a.get("standing") and str(a.get("at", "")) >= since
    ]
    return sorted(rows, key=lambda r: r["at"], reverse=True)[:cap]
