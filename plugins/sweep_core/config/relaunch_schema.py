"""The schema of sweep.yaml ``cancel.relaunch`` (which failures a relaunch may fix, the attempt cap,
the cooldown, a checkpoint signal per series) and ``cancel.standing`` (standing permissions: acts
that proceed without waiting for a human, still validated first). Default: no standing permission.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator

from sweep_core.config.schema_base import Regex, StrictModel, Tup
from sweep_core.safe.names import check_argv_template

NonEmpty = Annotated[str, Field(min_length=1)]
Positive = Annotated[int, Field(gt=0)]

# ops.md relaunch_commands templates: every placeholder, and those whose value comes from the job
# (its name, ids, the bad nodes its log named), never allowed inside shell code.
# {overrides}: the corrected setting a human gives with "Cancel and relaunch with …" (a deep-dive
# KILL), an element of its own expanding to one element per validated key=value
# (sweep_core.handoffs.cancel.overrides); without an answer it expands to nothing.
RELAUNCH_PLACEHOLDERS = ("job_id", "name", "array_job", "task", "exclude", "controller", "overrides")
RELAUNCH_JOB_DERIVED = ("job_id", "name", "array_job", "task", "exclude", "overrides")

# Failure kinds read off a flag's evidence (sweep_core.handoffs.relaunch.plan).
FIXABLE_KINDS = ("wedge", "nccl_timeout", "rpc_timeout", "node_fail", "preemption")
NEVER_KINDS = ("oom", "traceback", "nan", "collapse", "kill_verdict")


class KindPattern(StrictModel):
    """A failure kind and the regex that names it in a flag's evidence (the first match wins)."""

    kind: NonEmpty
    pattern: Regex


DEFAULT_KINDS = (
    KindPattern(kind="oom", pattern=r"OutOfMemoryError|CUDA out of memory|OUT_OF_MEMORY|oom[-_ ]kill"),
    KindPattern(kind="nan", pattern=r"\bnan_or_inf\b|loss[=: ]+nan\b|\bNaN\b"),
    KindPattern(kind="collapse", pattern=r"\[rl_collapse\]"),
    KindPattern(kind="kill_verdict", pattern=r"\[deep_dive_kill\]|KILL verdict"),
    KindPattern(kind="traceback", pattern=r"Traceback \(most recent call last\)|\[genuine_failure\]"),
    KindPattern(kind="nccl_timeout", pattern=r"NCCL[^\n]*[Tt]imeout|[Ww]atchdog"),
    KindPattern(kind="rpc_timeout", pattern=r"RPC[^\n]*[Tt]imeout|EngineDead"),
    KindPattern(kind="node_fail", pattern=r"NODE_FAIL"),
    KindPattern(kind="preemption", pattern=r"PREEMPTED|preempt"),
    KindPattern(kind="wedge", pattern=r"\[(?:liveness_stale|wedged)\]"),  # silent log; iris 0 pods
)


# A bad node named in the saved log tail (group 1 = the node; sweep_core.handoffs.relaunch.bad_nodes).
DEFAULT_BAD_NODES = tuple(
    re.compile(p)
    for p in (
        r"NCCL WARN [^\n]*\bhost (\S+)",
        r"(?m)^(?:[A-Z][a-z]{2} +\d+ [\d:]+ )?(\S+) kernel: [^\n]*NVRM: Xid",  # syslog: <host> kernel:
        r"\bXid [^\n]* on (?:node |host )?(\S+)",
        r"(?i)(?:uncorrectable|double[- ]bit|DBE) ECC error[^\n]* on (?:node |host )?(\S+)",
    )
)


class SeriesRelaunch(StrictModel):
    """Per series (job names matching ``match``): the attempt cap, the cooldown, a checkpoint signal."""

    match: Regex = Field(description="regex over job names")
    max_attempts: Positive | None = Field(None, description="null = relaunch.max_attempts")
    cooldown_minutes: float | None = Field(None, ge=0, description="null = relaunch.cooldown_minutes")
    checkpoint_signal: str = Field(
        "", pattern=r"^(|[A-Z][A-Z0-9+]{1,10}|\d{1,2})$", description="scancel --signal= --batch first; '' = none"
    )
    grace_s: int = Field(0, ge=0, le=3600, description="wait after the checkpoint signal before the requeue")


class RelaunchConfig(StrictModel):
    """sweep.yaml ``cancel.relaunch``: when "Cancel and relaunch" is offered and how it runs."""

    fixable: Tup[NonEmpty] = Field(FIXABLE_KINDS, description="failure kinds a relaunch can fix")
    kinds: Tup[KindPattern] = Field(DEFAULT_KINDS, description="failure kind by evidence regex, first match")
    max_attempts: Positive = Field(2, description="relaunches per series (all its links) before it is escalated")
    cooldown_minutes: float = Field(60.0, ge=0, description="no second relaunch of a series within this")
    requeue_disabled: Literal["set", "refuse"] = Field(
        "set", description="a job with Requeue=0: `scontrol update Requeue=1` first, or refuse with the reason"
    )
    series: Tup[SeriesRelaunch] = Field((), description="per-series overrides, the first match wins")
    evidence_tail_bytes: Positive = Field(4096, description="log tail kept as the wedge's evidence")
    confirm_timeout_s: Positive = Field(30, description="how long the requeue waits to see PENDING + Restarts")
    bad_nodes: Tup[Regex] = Field(
        DEFAULT_BAD_NODES, description="regexes naming a bad node (group 1) in the saved log tail: excluded"
    )
    max_bad_nodes: Positive = Field(2, description="more of the job's nodes named than this = not a node fault")
    max_pending_excluded: int = Field(
        8, ge=0, le=50, description="PENDING jobs of the series given the exclusion too (one scontrol each)"
    )
    command_timeout_s: Positive = Field(300, description="iris: how long the ops.md relaunch command may run")
    reask_factor: float = Field(
        2.0, gt=1, description="a Rejected job is asked again once silent this many times longer"
    )


class StandingPermission(StrictModel):
    """One standing permission: ``action`` on jobs whose flag and evidence meet every condition, on
    the ``clusters`` it names (required: a permission scoped to nothing would be a config error, not
    a permission for everything), within ``max_per_run`` / ``max_per_day`` acts (beyond: a human is
    asked, the prompt says why). A circuit breaker (``cancel.breaker``) suspends every standing
    permission on a cluster where many jobs are flagged at once."""

    action: Literal["relaunch", "cancel"]
    rule: NonEmpty = Field(description="the flag's rule, e.g. liveness_stale, rl_resume_overshoot")
    clusters: Tup[NonEmpty] = Field(min_length=1, description="the clusters it covers (by name; required)")
    name: Regex | None = Field(
        None, description="regex that must match the WHOLE job name (fullmatch: '^rl__' matches nothing); null = any"
    )
    min_silent_hours: float = Field(0.0, ge=0, description="the log silent at least this long (read right before)")
    min_nodes: Positive = 1
    max_per_run: Positive = Field(3, description="acts under this permission in one sweep_cancel run; beyond: ask")
    max_per_day: Positive = Field(10, description="acts under it in the last 24 h (the ledger's acts); beyond: ask")


class BreakerConfig(StrictModel):
    """sweep.yaml ``cancel.breaker``: when this many of one cluster's RUNNING jobs are flagged by the
    same rule in one run (a filesystem or scheduler fault, not N independent wedges), no standing
    permission acts on that cluster (every job asks a human) and one critical alert says why."""

    min_share: float = Field(0.3, gt=0, le=1, description="flagged / RUNNING jobs of the cluster")
    min_jobs: Positive = Field(3, description="and at least this many jobs flagged by one rule")


class RelaunchCommand(StrictModel):
    """ops.md ``relaunch_commands``: for job names matching ``match``, relaunch by scancel then this
    argv (each value shell-quoted; templates {job_id} {name} {array_job} {task}, {exclude}: the
    bad nodes found, comma-separated, maybe '', and {overrides} as an element of its own: the
    validated key=value overrides of "Cancel and relaunch with …", one element each) instead of a
    requeue."""

    match: Regex = Field(description="regex over job names")
    argv: Tup[NonEmpty] = Field(min_length=1, description="e.g. [sbatch, --parsable, -J, '{name}', run.sbatch]")

    @field_validator("argv")
    @classmethod
    def _templates(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        check_argv_template(value, RELAUNCH_PLACEHOLDERS, RELAUNCH_JOB_DERIVED, "argv")
        for i, a in enumerate(value):
            if "{overrides}" in a and a != "{overrides}":
                raise ValueError(f"argv[{i}] {a!r}: {{overrides}} must be an argv element of its own (it expands)")
        return value
