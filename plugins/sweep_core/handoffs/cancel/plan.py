"""sweep_cancel's guards and texts (pure): which requested jobs may be scancelled, the approval
prompt, and what the scancel script reported.

A requested job is cancellable only when a validated squeue (UNKNOWN = nothing is cancelled on
that cluster) shows it under the cluster user with the SAME job name as in the request (a reused
or renumbered id is never cancelled) and in a state its action allows: RUNNING for every action,
PENDING only for ``cancel`` (a spurious past-max chain link that has not started yet).

Approval: EVERY job needs the human's approval, also ``cancel`` chain links. The link verdict is
read from log tails (step == max_steps), scancel is irreversible, a PENDING link may start before
anyone acts, and a spurious link that waits for a human costs only its own queue slot; RUNNING
jobs need approval anyway (DESIGN.md). A timeout means reject.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.config.schema_base import section
from sweep_core.handoffs.cancel.outcome import ActOutcome, Did
from sweep_core.handoffs.cancel.overrides import parse_overrides
from sweep_core.handoffs.flag_record import IRIS_JOB_ID_RE, FlagRecord
from sweep_core.records.vocab import CANCEL_ACTIONS, Action
from sweep_core.safe.names import check_job_line
from sweep_core.safe.text import md_code, md_text
from sweep_core.slurm.parse import SacctRow, SqueueRow

check_slurm_job = check_job_line  # the quoted identity check (safe_names); paths and templates: plain_name


class CancelConfigError(ValueError):
    """sweep.yaml's ``cancel:`` is malformed; the message names the key."""


def cancel_config(raw: CancelConfig | dict[str, Any] | None) -> CancelConfig:
    """sweep.yaml's ``cancel:`` section, validated by the schema (positive numbers, its defaults)."""
    return section(CancelConfig, raw, "cancel", CancelConfigError)


@dataclass(frozen=True)
class CancelRequest:
    """One job of the hand-off conf (sweep_core.handoffs.dispatch.triggers: a flag_record.FlagRecord)."""

    cluster: str
    job_id: str
    name: str
    action: str  # one of vocab.CANCEL_ACTIONS (from_dict checks)
    evidence: str = ""  # the SWEEP's flag line from the ledger (authority.authorize), never the conf's
    asked_evidence: str = ""  # the conf's evidence: shown as "given by hand, not verified", never used
    rule: str = ""  # the SWEEP's flag rule from the ledger ("" = by hand), never the conf's
    severity: str = ""  # the SWEEP's flag severity from the ledger ("" = by hand)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CancelRequest:
        """Strictly checked (flag_record.FlagRecord.from_conf): a malformed entry raises ValueError naming the field and is never sent to a cluster.
        The conf's evidence goes to ``asked_evidence`` only (the conf is not trusted)."""
        if not isinstance(data, dict):
            raise TypeError(f"job entry must be an object, got {type(data).__name__}")
        action = data.get("action")
        if action not in tuple(CANCEL_ACTIONS):  # the actions sweep_cancel carries out, named
            raise ValueError(
                f"flag record field 'action': {str(action)[:80]!r} is not one of {tuple(a.value for a in CANCEL_ACTIONS)}"
            )
        rec = FlagRecord.from_conf(data)
        return cls(rec.cluster, rec.job_id, rec.name, rec.action, asked_evidence=rec.evidence)

    @classmethod
    def from_xcom(cls, data: dict[str, Any]) -> CancelRequest:
        """As validate kept it. One an earlier version's validate kept (a run in flight across an
        upgrade: no ``rule``) keeps rule and severity '' (its line is not read): no standing
        permission covers it, a person is asked."""
        return cls(**data)


@dataclass
class CancelDecision:
    """What validate found for one request: ``cancel`` (may be scancelled once approved) or ``blocked``."""

    request: CancelRequest
    verdict: str
    reasons: list[str] = field(default_factory=list)
    state: str = ""  # squeue state at validation: what the human approves, re-checked before scancel
    elapsed: str = ""
    nodes: str = ""
    nodelist: str = ""  # squeue %R: the node list, or the pending reason
    offer: dict[str, Any] = field(default_factory=dict)  # handoffs.relaunch.plan.Offer (SLURM RUNNING jobs)
    evidence: dict[str, Any] = field(default_factory=dict)  # handoffs.cancel.fresh.Evidence read at validation
    by_hand: bool = True  # authority.authorize: False only when the sweep's own records back it
    authority: str = ""  # why it is a sweep or a by-hand request

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CancelDecision:
        return cls(**{**data, "request": CancelRequest.from_xcom(data["request"])})


def job_key(cluster: str, job_id: str) -> str:
    """One job of a request: what each per-job approval is keyed by."""
    return f"{cluster}|{job_id}"


def allowed_states(action: str) -> tuple[str, ...]:
    """The squeue states a job of this action may be cancelled in."""
    return ("RUNNING", "PENDING") if action == Action.CANCEL else ("RUNNING",)


def validate(
    requests: list[CancelRequest], rows: list[SqueueRow] | None, problem: str = "", source: str = "squeue"
) -> list[CancelDecision]:
    """Decide per request from ONE validated squeue of its cluster (``source``: what listed the
    rows, e.g. "the iris controller"); ``rows`` None = that list UNKNOWN."""
    if rows is None:
        why = f"{source} UNKNOWN ({problem or 'no answer'}): nothing is cancelled on this cluster"
        return [CancelDecision(r, "blocked", [why]) for r in requests]
    by_id = {row.job_id: row for row in rows}
    out = []
    for r in requests:
        row = by_id.get(r.job_id)
        if row is None:
            out.append(CancelDecision(r, "blocked", [f"not in {source}: finished, or not the cluster user's job"]))
            continue
        found = CancelDecision(r, "blocked", state=row.state, elapsed=row.elapsed, nodes=row.nodes, nodelist=row.reason)
        if row.name != r.name:
            found.reasons.append(f"job id reused: {source} names it {row.name!r}, the request {r.name!r}")
        elif row.state not in allowed_states(r.action):
            found.reasons.append(f"{row.state}: action {r.action!r} cancels only {'/'.join(allowed_states(r.action))}")
        else:
            found.verdict = "cancel"
        out.append(found)
    return out


def asked(decisions: list[CancelDecision]) -> list[CancelDecision]:
    """The decisions a human is asked about: passed validation, and by hand or no standing
    permission covers them (a by-hand request always asks)."""
    return [d for d in decisions if d.verdict == "cancel" and (d.by_hand or not d.offer.get("standing"))]


def standing_acts(decisions: list[CancelDecision]) -> list[CancelDecision]:
    """The decisions a standing permission acts on without a human: the sweep's requests only."""
    return [d for d in decisions if d.verdict == "cancel" and not d.by_hand and d.offer.get("standing")]


CANCEL, RELAUNCH, RELAUNCH_WITH, REJECT = "Cancel", "Cancel and relaunch", "Cancel and relaunch with …", "Reject"
OVERRIDES_FIELD = "overrides"  # the approval form's field for RELAUNCH_WITH


def approval_options(d: CancelDecision) -> list[str]:
    """The answers the approval form offers for one job: Cancel, Cancel and relaunch (a relaunch
    offered), Cancel and relaunch with … (a deep-dive KILL whose ops.md command takes {overrides}),
    Reject."""
    return [
        CANCEL,
        *([RELAUNCH] if d.offer.get("relaunch") else []),
        *([RELAUNCH_WITH] if d.offer.get("overrides") else []),
        REJECT,
    ]


def override_answer(chosen: list[str], params_input: Any) -> tuple[tuple[str, ...], str]:
    """(the validated overrides, why the answer is refused: "" = it counts) of one form answer;
    only RELAUNCH_WITH takes overrides, and they must parse (handoffs.cancel.overrides)."""
    if chosen != [RELAUNCH_WITH]:
        return (), ""
    raw = (params_input or {}).get(OVERRIDES_FIELD) if isinstance(params_input, dict) else None
    try:
        return parse_overrides(raw if raw is not None else ""), ""
    except ValueError as exc:
        return (), f"{RELAUNCH_WITH} refused, nothing done: {exc}"


def approved(answer: dict[str, Any] | None) -> bool:
    """Whether a human allowed to answer chose Cancel or Cancel and relaunch (not the timeout default;
    Cancel and relaunch with … only with its overrides)."""
    a = answer or {}
    chosen = a.get("chosen_options")
    ok = chosen in ([CANCEL], [RELAUNCH]) or (chosen == [RELAUNCH_WITH] and bool(a.get("overrides")))
    return ok and not a.get("timed_out") and not a.get("refused")


def approved_batches(
    decisions: list[CancelDecision], answers: dict[str, dict[str, Any]]
) -> dict[tuple[bool, str], list[CancelDecision]]:
    """(relaunch, approver) -> the approved decisions, one act call each (each job's act records who
    approved it); a Cancel and relaunch with … puts its overrides in the offer (validated when answered,
    command_argv checks again)."""
    batches: dict[tuple[bool, str], list[CancelDecision]] = {}
    for d in decisions:
        a = answers.get(job_key(d.request.cluster, d.request.job_id))
        if not approved(a):
            continue
        assert a is not None
        if a["chosen_options"] == [RELAUNCH_WITH]:
            d.offer = {**d.offer, "relaunch": True, "with": list(a.get("overrides") or [])}
        relaunch = a["chosen_options"] in ([RELAUNCH], [RELAUNCH_WITH])
        batches.setdefault((relaunch, str(a.get("responded_by") or "")), []).append(d)
    return batches


def _relaunch_lines(d: CancelDecision) -> list[str]:
    """The relaunch offer and the evidence read at validation, for the prompt."""
    o, ev = d.offer, d.evidence
    lines = []
    if o:
        said = "**Cancel and relaunch** requeues it" if o.get("relaunch") else "relaunch NOT offered"
        lines.append(f"- {said}: {md_text(str(o.get('why', '')))}")
    if o.get("overrides"):
        lines.append(
            f"- **{RELAUNCH_WITH}** cancels it, then runs its ops.md relaunch command with the corrected setting "
            f"you type in the form's `{OVERRIDES_FIELD}` field (key=value ..., each validated; a bad one is "
            "refused and nothing is done)"
        )
    if o.get("brake"):
        lines.append(f"- standing permission NOT used: {md_text(str(o['brake']))}")
    if set(ev) == {"last_output_ms"}:  # an iris job: the controller's newest log line
        at = dt.datetime.fromtimestamp(ev["last_output_ms"] / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        lines.append(
            f"- evidence read now: newest log line at {md_text(at)} (a line after it = the job moved: "
            "left alone, not stopped)"
        )
    elif ev:
        silent = ev.get("remote_now", 0) - ev["last_output"] if ev.get("last_output") and ev.get("remote_now") else None
        lines.append(
            f"- evidence read now: silent {md_text(str(silent // 60) + ' min' if silent is not None else '?')}, "
            f"step {md_text(str(ev.get('step')))}, nodes {md_code(str(ev.get('nodelist') or '?'))}, "
            f"Requeue={md_text(str(ev.get('requeue') or '?'))} Restarts={md_text(str(ev.get('restarts') or '?'))}"
        )
        tail = [ln for ln in str(ev.get("tail") or "").splitlines() if ln.strip()][-3:]
        lines += [f"  - log: {md_code(ln[-200:])}" for ln in tail]
    return lines


def _authority_lines(d: CancelDecision, requester: str) -> list[str]:
    """Whose request it is, and the evidence: the sweep's (from the ledger), or what a person typed."""
    r = d.request
    if not d.by_hand:
        return [
            f"- {md_text(d.authority)}",
            f"- evidence (the sweep's flag): {md_code(r.evidence) if r.evidence else '(none)'}",
        ]
    lines = [
        f"- **BY HAND**, requested by {md_code(requester or '?')}: {md_text(d.authority.removeprefix('by hand: '))}. "
        "No standing permission applies; the requester cannot approve it.",
        "- evidence: none from the sweep",
    ]
    if r.asked_evidence:
        lines.append(f"- requested by hand (not verified): {md_code(r.asked_evidence[:300])}")
    return lines


def approval_prompt(
    decisions: list[CancelDecision], *, dry_run: bool, timeout_minutes: float, requester: str = ""
) -> tuple[str, str]:
    """Subject and Markdown body of the approval request: everything the human decides from
    (sweep_cancel asks once per job: ``decisions`` then holds that one job)."""
    todo = asked(decisions)
    clusters = sorted({d.request.cluster for d in todo})
    verb = " / ".join(sorted({"iris job stop" if IRIS_JOB_ID_RE.match(d.request.job_id) else "scancel" for d in todo}))
    relaunch = sum(1 for d in todo if d.offer.get("relaunch"))
    escalated = sum(1 for d in todo if d.offer.get("recurring") or d.offer.get("capped"))
    subject = f"{'[DRY RUN] ' if dry_run else ''}{'[ESCALATED] ' if escalated else ''}"
    subject += "[BY HAND] " if any(d.by_hand for d in todo) else ""
    subject += f"{verb} {len(todo)} job(s) on {', '.join(clusters)}?"
    if relaunch:
        subject += f" ({relaunch} may be relaunched)"
    lines = [
        f"**Cancel**: `{verb}` these {len(todo)} job(s). **Cancel and relaunch**: the jobs marked so "
        "are requeued instead (`scontrol requeue`: same id, Restarts grows, they start again after "
        "Slurm's requeue delay; their log tail is saved first; an iris job, which has no requeue: "
        "stopped, then its ops.md relaunch command), the others cancelled. Each is "
        "re-checked right before: still in the state shown, with the same name, else it is left "
        f"alone. Reject, or no answer within {timeout_minutes:g} min, acts on nothing.",
        "",
    ]
    if dry_run:
        lines += ["**DRY RUN**: even when approved, nothing is cancelled (the commands are printed).", ""]
    for d in todo:
        r = d.request
        lines += [
            f"### {md_text(r.cluster)} job {md_code(r.job_id)} {md_code(r.name)}",
            f"- action: **{md_text(r.action)}**; now {md_text(d.state)}, elapsed {md_text(d.elapsed)}, "
            f"{md_text(d.nodes)} node(s), nodes/reason {md_code(d.nodelist)}",
            *_authority_lines(d, requester),
            *_relaunch_lines(d),
            "",
        ]
    standing = standing_acts(decisions)
    if standing:
        lines.append(f"Acted on under a standing permission (not asked): {len(standing)}")
        lines += [
            f"- {md_code(d.request.job_id)} {md_code(d.request.name)}: {md_text(d.offer['standing'])}" for d in standing
        ]
    blocked = [d for d in decisions if d.verdict != "cancel"]
    if blocked:
        lines.append(f"Not asked (blocked, left alone): {len(blocked)}")
        lines += [
            f"- {md_text(d.request.cluster)} {md_code(d.request.job_id)} {md_code(d.request.name)}: "
            f"{md_text('; '.join(d.reasons))}"
            for d in blocked
        ]
    return subject, "\n".join(lines).rstrip() + "\n"


def outcome(
    decision: CancelDecision, record_rc: int | None, record_text: str, sacct: dict[str, SacctRow]
) -> ActOutcome:
    """One job's result from the scancel script: CANCELLED only when sacct says so."""
    if record_rc is None:
        return ActOutcome(Did.NOT_RUN, "not run (script cut short)")
    if record_rc == 2:
        return ActOutcome(Did.REFUSED, f"refused before scancel: {record_text.strip()}")
    if record_rc != 0:
        return ActOutcome(Did.FAILED, f"scancel failed (exit {record_rc}): {record_text.strip()[:200]}")
    row = sacct.get(decision.request.job_id)
    if row is None:
        return ActOutcome(Did.SENT, "scancel sent; sacct has no row yet")
    if row.base_state == "CANCELLED":
        return ActOutcome(Did.CANCELLED, "cancelled")
    return ActOutcome(Did.SENT, f"scancel sent; sacct says {row.state}")
