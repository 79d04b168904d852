"""Datagen consolidate: what one array's consolidation does next, and every guard (pure).

Submitted only when ALL of these hold (each has its test):

- the cluster's squeue was validated this run (UNKNOWN -> nothing; the runbook: "Mandatory before
  any destructive datagen consolidate+delete"), and no chunk of the array is listed by it;
- ``sacct -j`` positively says COMPLETED for EVERY chunk (cleanup.plan's done-signal);
- the chunk trees exist under an ops.md artifact root (that root is the command's ``{root}``);
- (a dataset of the same name already on the hub is NOT this array's: a reused name; the hub is
  asked only for the commit this array's own consolidate job printed);
- the ledger holds no submission in flight for the array (history.reserve re-checks under the lock).

A tracked consolidate job: waiting while RUNNING/PENDING; COMPLETED + the dataset on the hub at
the commit its log names (its own upload, consolidate.usecase) -> advance (the tracker row, then cleanup may delete); FAILED -> reported with its first real
traceback and submitted again at most ``max_retries`` times, then given up (a person takes over).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sweep_core.config.consolidate_schema import ConsolidateCommand, ConsolidateSection
from sweep_core.config.schema_base import section
from sweep_core.fanin.tracebacks import first_real_traceback
from sweep_core.handoffs.batch_job.plan import Placeholders, base_state, exhausted, is_live
from sweep_core.handoffs.cleanup.plan import CleanupTarget, ClusterState, FlavorSpec, done_signal
from sweep_core.handoffs.kernel.attempt import Record
from sweep_core.safe.names import CONSOLIDATE_PLACEHOLDERS

PLACEHOLDERS = Placeholders(CONSOLIDATE_PLACEHOLDERS)


class ConsolidateConfigError(ValueError):
    """sweep.yaml ``consolidate:`` is malformed; the message names the field."""


def consolidate_config(raw: ConsolidateSection | dict[str, Any] | None) -> ConsolidateSection:
    return section(ConsolidateSection, raw, "consolidate", ConsolidateConfigError)


def render_argv(template: tuple[str, ...], values: dict[str, str]) -> tuple[str, ...]:
    """Each argv element with its ``{name}``-style placeholders filled (other braces left alone);
    quoting happens when the submit script is built."""
    return PLACEHOLDERS.render_argv(template, values)


def job_name(cmd: ConsolidateCommand, target: CleanupTarget) -> str:
    return cmd.job_name.replace("{name}", target.name).replace("{job_id}", target.array_id)


@dataclass
class Step:
    """What one array's consolidation does this run."""

    target: CleanupTarget
    action: str  # submit | wait | advance | blocked | failed | gave-up | done
    reasons: list[str] = field(default_factory=list)
    argv: tuple[str, ...] = ()
    job: str = ""  # the tracked consolidate job
    state: str = ""  # its sacct/squeue state
    traceback: str = ""
    attempt: int = 0
    hub: str = ""  # the hub's verdict, when asked

    @property
    def releases_cleanup(self) -> bool:
        """Cleanup may delete the chunk trees (the row advanced, now or before)."""
        return self.action in ("advance", "done")

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.to_dict(),
            "action": self.action,
            "reasons": list(self.reasons),
            "argv": list(self.argv),
            "job": self.job,
            "state": self.state,
            "traceback": self.traceback,
            "attempt": self.attempt,
            "hub": self.hub,
        }


def chunk_guard(target: CleanupTarget, spec: FlavorSpec, state: ClusterState) -> str | None:
    """Why the array is not positively done (squeue validated, nothing listed, every chunk COMPLETED)."""
    if not state.squeue_ok:
        return f"squeue UNKNOWN on {target.cluster}: nothing submitted ({state.squeue_problem})"
    live = state.live.get(target.array_id) or state.live.get(target.job_id)
    if live:
        return f"array {target.array_id} still has a chunk {live} in squeue"
    return done_signal(target, FlavorSpec(spec.name, spec.hub, spec.delete, True), state)


def tracked_state(job: str, state: ClusterState) -> str:
    """The consolidate job's state: squeue's while it lists it, else sacct's ('' = no record)."""
    return state.live.get(job) or state.states.get(job, "")


def decide(
    target: CleanupTarget,
    spec: FlavorSpec,
    cmd: ConsolidateCommand,
    state: ClusterState,
    history: Record,
    root: str,
    hub_ok: bool | None,
    hub_reason: str,
    values: dict[str, str],
    tail: str = "",
) -> Step:
    """The next step of one array. ``history``: its consolidate Record (consolidate.history);
    ``root``: the artifact root holding its chunk trees ('' = none); ``hub_ok``: the hub holds the
    dataset (None = UNKNOWN); ``tail``: the log tail of the tracked job when it failed (first real
    traceback)."""
    step = Step(target, "blocked", hub=hub_reason)
    if history.done is not None:
        step.action, step.job = "done", history.done.get("job", "")
        step.reasons.append(f"consolidated earlier (tracker {history.done.get('commit') or 'advanced'})")
        return step
    if history.gave_up:
        step.action = "gave-up"
        step.reasons.append(f"consolidate failed {history.failures} times: given up, a person takes over")
        return step
    if not state.squeue_ok:
        step.reasons.append(f"squeue UNKNOWN on {target.cluster}: nothing submitted ({state.squeue_problem})")
        return step
    if not state.sacct_ok:
        step.reasons.append(f"sacct failed: no positive done-signal ({state.sacct_problem})")
        return step
    reserved = history.reserved_without_id
    if reserved is not None:
        why = reserved.get("problem") or "no job id recorded"
        step.reasons.append(
            f"submission {reserved.get('attempt')} by run {reserved.get('run')} at {reserved.get('at')} gave no job id "
            f"({why}): check squeue for {values['job_name']} by hand; never resubmitted by itself"
        )
        return step
    job = history.latest_job
    step.attempt = len(history.submissions)
    if job and history.failed(job) is None:
        step.job = job
        got = tracked_state(job, state) if job.isdigit() else ""
        step.state = got
        base = base_state(got)
        if not got:
            step.action = "wait"
            step.reasons.append(f"consolidate job {job}: no sacct record yet")
            return step
        if is_live(got):
            step.action = "wait"
            step.reasons.append(f"consolidate job {job} is {got}")
            return step
        if base == "COMPLETED":
            if hub_ok is True:
                step.action = "advance"
                step.reasons.append(f"consolidate job {job} COMPLETED and the dataset is on the hub ({hub_reason})")
            else:
                verdict = "UNKNOWN" if hub_ok is None else "not on the hub"
                step.reasons.append(f"consolidate job {job} COMPLETED but the dataset is {verdict}: {hub_reason}")
            return step
        step.action = "failed"
        step.traceback = first_real_traceback(tail) if tail else ""
        step.reasons.append(f"consolidate job {job} {got}" + (f": {step.traceback}" if step.traceback else ""))
        return step
    # nothing in flight: never submitted, or the latest attempt failed
    if job and exhausted(history.failures, cmd.max_retries):
        step.action = "gave-up"
        step.reasons.append(f"consolidate failed {history.failures} times (max_retries {cmd.max_retries}): given up")
        return step
    why = chunk_guard(target, spec, state)
    if why:
        step.reasons.append(why)
        return step
    if not root:
        step.reasons.append("no chunk tree under any artifact root: nothing to consolidate")
        return step
    step.action, step.attempt = "submit", len(history.submissions) + 1
    step.argv = render_argv(cmd.argv, values)
    retry = f" (retry {history.failures}/{cmd.max_retries})" if history.failures else ""
    step.reasons.append(f"every chunk COMPLETED, not consolidated by this array yet: consolidate{retry}")
    return step
