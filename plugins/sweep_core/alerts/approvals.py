"""Who is asked to approve an act and what they read: the approvers named per cluster in sweep.yaml
``notify.approvers`` (``*`` for every other cluster); who may answer (``notify.approver_users``,
never the user who asked: may_answer and answer_counts, called by every approval, people compared
by their user name under every auth manager: responder_key); the prompt's subject and evidence, and the link to the Required Actions page; the overrun alert's message, and the ones for a sweep
and for a watch that keep failing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sweep_core.alerts.layout import Message
from sweep_core.safe.text import clean


def approval_clusters(validated: Mapping[str, Any], job_key: str = "") -> set[str]:
    """The clusters one approval asks about, from its DAG's ``validate`` XCom: sweep_cancel's jobs to
    cancel (only the job ``job_key`` names, ``cluster|job``, when one task asks per job), or
    sweep_snapshots' one cluster, or sweep_hygiene's clusters offered a pull."""
    from sweep_core.handoffs.cancel.plan import CancelDecision

    decisions = [CancelDecision.from_dict(d) for d in validated.get("decisions", [])]
    clusters = {
        d.request.cluster
        for d in decisions
        if d.verdict == "cancel" and (not job_key or job_key.startswith(f"{d.request.cluster}|"))
    }
    if validated.get("cluster"):
        clusters.add(str(validated["cluster"]))
    clusters.update(str(c) for c in validated.get("clusters") or [])
    return clusters


def approvers_for(clusters: Iterable[str], approvers: Mapping[str, Sequence[str]]) -> list[str]:
    """The addresses named for these clusters (a cluster not named takes ``*``), each once."""
    out: list[str] = []
    for cluster in sorted(set(clusters)):
        for addr in approvers.get(cluster, approvers.get("*", ())):
            if addr not in out:
                out.append(addr)
    return out


def responder_key(user: Any) -> str:
    """The one key a person is compared by: the user NAME Airflow records (``get_name()``: the
    username under the simple auth manager and FAB alike, also the DAG run's
    ``triggering_user_name``). Never the id: FAB's is a number, the simple auth manager's the name."""
    if isinstance(user, Mapping):
        return str(user.get("name") or "")
    return str(user or "")


def may_answer(cluster: str, users: Mapping[str, Sequence[str]], *, requester: str) -> list[str] | None:
    """The user names that may answer one approval of ``cluster``: its ``notify.approver_users``
    without ``requester`` (the user who triggered the run; "" = a scheduled run, nobody to leave
    out). Every approval (cancel, relaunch, snapshots, hygiene) asks this. None = no approver users
    configured (anyone Airflow lets answer, still never the requester: answer_counts); [] = nobody
    may (it is then not asked: nothing is done)."""
    if not users:
        return None
    return [u for u in approvers_for([cluster], users) if not (requester and u == requester)]


def answer_counts(
    responder: str, allowed: Sequence[str] | None, *, requester: str, timed_out: bool
) -> tuple[bool, str]:
    """(whether the answer counts, why not), ``responder`` and ``allowed`` by responder_key: the
    requester never approves her own request, and only the allowed users do (Airflow enforces
    ``assigned_users`` too where it can: hitl_assignees; this is checked again)."""
    if timed_out:
        return True, ""
    if not responder:
        return False, "answered by a user Airflow did not name: not counted"
    if requester and responder == requester:
        return False, f"answered by {responder}, who requested it: not counted"
    if allowed is not None and responder not in allowed:
        return (
            False,
            f"answered by {responder}, not an approver of this job ({', '.join(allowed) or 'none'}): not counted",
        )
    return True, ""


def hitl_assignees(users: Sequence[str] | None, *, ids_are_names: bool) -> list[dict[str, str]] | None:
    """HITL ``assigned_users`` for these user names. Airflow checks an answerer by user ID, which is
    the name only under the simple auth manager; under FAB (numeric ids, not known to a task) the
    prompt is left unassigned (None) and answer_counts refuses any other name's answer."""
    if not users or not ids_are_names:
        return None
    return [{"id": u, "name": u} for u in users]


def who_may(users: Sequence[str] | None, requester: str) -> str:
    """The prompt's line saying who may answer (may_answer's users; the requester left out)."""
    may = (
        ", ".join(users)
        if users
        else "anyone allowed to answer in Airflow" + (f" except {requester}" if requester else "")
    )
    return f"Who may answer: {may}.\n"


def hitl_answer(
    event: Mapping[str, Any], allowed: Sequence[str] | None, chosen: Sequence[str], *, requester: str
) -> dict[str, Any]:
    """What a hand-off's act reads of one HITL answer (sweep_snapshots, sweep_hygiene): the options
    ``chosen`` (none on a timeout or an answer that does not count), whether it timed out, why it was
    not counted, who answered."""
    who = responder_key(event.get("responded_by_user"))
    timed_out = bool(event.get("timedout"))
    counts, why = answer_counts(who, allowed, requester=requester, timed_out=timed_out)
    return {
        "chosen": [] if timed_out or not counts else list(chosen),
        "timed_out": timed_out,
        "refused": why,
        "responded_by": who or None,
    }


def approval_message(subject: str, body: str, link: str, clusters: Iterable[str]) -> Message:
    """The approvers' message: the prompt's subject, its evidence lines, where to answer."""
    where = ", ".join(sorted(set(clusters))) or "?"
    lines = [ln for ln in clean(body).splitlines() if ln.strip()]
    return Message(
        clean(f"Approval needed ({where}): {subject}", newlines=False),
        [("Evidence", lines or ["(no evidence given)"])],
        [("Approve or reject (Required Actions)", link)],
    )


def overrun_message(dag_id: str, run_id: str, intervals: int, link: str) -> Message:
    """A sweep still running ``intervals`` schedule intervals after it was queued."""
    return Message(
        clean(f"{dag_id}: sweep {run_id} has not finished {intervals} interval(s) after it was queued", newlines=False),
        [("What this means", ["the next sweep is waiting (one run at a time): nobody is being told of new problems"])],
        [("this run", link)],
    )


def failing_message(dag_id: str, streak: int, last_success: str, link: str) -> Message:
    """The sweep has not succeeded for ``streak`` runs in a row (``last_success``: when it last did)."""
    since = f"last success: {last_success}" if last_success else "no successful sweep on record"
    return Message(
        clean(f"{dag_id}: {streak} sweeps in a row have failed ({since})", newlines=False),
        [("What this means", ["no digest reaches anyone while the sweep fails: open the latest run's failed task"])],
        [("latest run", link)],
    )


def watch_failing_message(dag_id: str, runs: int, since: str, latest: str, last_success: str, link: str) -> Message:
    """The watch has failed ``runs`` runs in a row since ``since`` (ISO UTC; ``latest``: the latest
    failed window's end): the wedges it is there to see within minutes are not being seen."""
    start, end = dt.datetime.fromisoformat(since).astimezone(dt.UTC), dt.datetime.fromisoformat(latest)
    at = start.strftime("%H:%M UTC" if start.date() == end.astimezone(dt.UTC).date() else "%Y-%m-%d %H:%M UTC")
    done = f"last success: {last_success}" if last_success else "no successful watch run on record"
    return Message(
        clean(
            f"{dag_id}: the watch has failed {runs} runs in a row since {at}: wedges are not being seen", newlines=False
        ),
        [
            (
                "What this means",
                [
                    "no wedge, collapse, failed job or UNKNOWN cluster is told and no kill is asked for until a watch "
                    "run succeeds; the report sweep still runs every few hours: open the latest watch run's failed task",
                    done,
                ],
            )
        ],
        [("latest watch run", link)],
    )
