"""Named vocabularies the sweep's parts share (issue 10): bucket names, flag severities, flag actions
and the cleanup skills. Each is a StrEnum: a member equals its string, so it travels through XCom
JSON, sweep.yaml, tables and hand-off confs as the plain name; a typo is an AttributeError, not a
comparison that silently never matches.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import TypeVar

E = TypeVar("E", bound=StrEnum)


class Bucket(StrEnum):
    """The five job buckets of the runbook (spec §2), in table order; sweep.yaml may use no other."""

    RL = "RL"
    SFT = "SFT"
    DATAGEN = "Datagen"
    EVAL = "Eval"
    CATCH_ALL = "Catch-all"


class Severity(StrEnum):
    """How loud a flag is; the report lists critical first, then warn, then info."""

    CRITICAL = "critical"
    WARN = "warn"
    INFO = "info"


class Action(StrEnum):
    """The hand-off a flag asks for (``Flag.action``; "" = none). A cleanup hand-off is not a member:
    it names its skill, see cleanup_action / cleanup_flavor."""

    CANCEL = "cancel"  # a spurious chain link past max_steps: scancel, PENDING too (sweep_cancel)
    CANCEL_SALVAGE = "cancel+salvage"  # a collapsing RL run: scancel, then salvage its checkpoints
    KILL_APPROVAL = "kill-approval"  # a silent multi-node hang: scancel once a human approves
    DEEP_DIVE = "deep-dive"  # a new/untested RL setting: rl-job-health-deep-dive
    DIAGNOSE = "diagnose"  # a failure (or NaN, or a TIMEOUT with no successor): read the traceback
    INVESTIGATE = "investigate"  # a stale job, a dead datagen, an unhealthy eval
    RECLAIM = "reclaim"  # over the inode soft limit: the cleanup DAG over the backlog
    TRIAGE_LOCAL = "triage-local"  # the cluster clone's piled-up files: act in the LOCAL clone
    # an SFT completion whose launch YAML does not tell HF-only or not: kept in the cleanup backlog,
    # its YAML read again every sweep (handoffs.cleanup.undecided), handed off once it can be told
    CLEANUP_UNDECIDED = "cleanup-undecided"
    SNAPSHOT_CLEANUP = "snapshot-cleanup"  # Daytona at its HARD cap: delete STALE snapshots once a human approves
    # an SFT completion whose launch YAML says enable_db_registration: false, of no listed series: the
    # HF chain uploads it (sweep_hf_chain, hf_chain.found), never sft-job-cleanup
    HF_CHAIN = "hf-chain"


# The actions sweep_cancel carries out (its conf's ``action``), in the order its messages name them.
CANCEL_ACTIONS: tuple[Action, ...] = (Action.CANCEL, Action.CANCEL_SALVAGE, Action.KILL_APPROVAL)


class Flavor(StrEnum):
    """The cleanup skills the completion_cleanup rule hands off to (sweep.yaml ``cleanup.flavors``
    may add others; each of these has a default spec in sweep_core.handoffs.cleanup.plan)."""

    RL_AGENTIC = "rl-agentic-job-cleanup"
    RL_STANDARD = "rl-standard-job-cleanup"
    SFT = "sft-job-cleanup"
    DATAGEN = "datagen-job-cleanup"
    EVAL_AGENTIC = "eval-agentic-cleanup"


_CLEANUP = "cleanup:"


def cleanup_action(flavor: str) -> str:
    """The action of a flag that hands its job to the cleanup skill ``flavor``: ``cleanup:<flavor>``."""
    return _CLEANUP + flavor


def cleanup_flavor(action: str) -> str | None:
    """The cleanup skill a flag's action hands off to; None when the action is not a cleanup."""
    return action[len(_CLEANUP) :] if action.startswith(_CLEANUP) else None


SALVAGE_BY = "salvage by "  # how a collapse flag line names its salvage's flavor (rules.rl)
_SALVAGE_NAMED = re.compile(
    re.escape(SALVAGE_BY) + f"({re.escape(Flavor.RL_AGENTIC)}|{re.escape(Flavor.RL_STANDARD)})" + r"\b"
)


def salvage_flavor(evidence: str) -> str:
    """The RL cleanup flavor a collapse flag line names (``salvage by <flavor>``); "" = none named."""
    m = _SALVAGE_NAMED.search(evidence)
    return m.group(1) if m else ""


def as_member(vocab: type[E], value: str) -> E | str:
    """``value`` as the member of ``vocab`` it names, else unchanged ("" = none, "?" = unknown)."""
    try:
        return vocab(value)
    except ValueError:
        return value


# Where an alert nobody hears says a channel is added (the task log's WARNING lines, the Sweeps page).
NO_CHANNEL = "no notify channel configured: add one in sweep.yaml notify.channels (docs/alerts.md)"
