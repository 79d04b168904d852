"""DB registration's pure part. A job's registration record (kernel.attempt.Record) is its
ledger acts of kind ``db_register``: one per attempt, with ``outcome`` ``done`` (the command exited 0), ``failed``
(it answered non-zero: its words kept) or ``UNKNOWN`` (sent, the answer lost: never run again
blind, a person checks the DB). It runs once the hub holds the job's artifact, never for an
HF-only series (handoffs.chain.hf_only), at most ``1 + register_retries`` times."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweep_core.handoffs.batch_job.plan import Placeholders, exhausted, retry_note
from sweep_core.handoffs.chain.hf_only import HfOnly
from sweep_core.handoffs.kernel.attempt import Kinds, Record, record_of
from sweep_core.safe.names import UPLOAD_PLACEHOLDERS

REGISTER = "db_register"
DONE, FAILED, UNKNOWN = "done", "failed", "UNKNOWN"
PLACEHOLDERS = Placeholders(UPLOAD_PLACEHOLDERS)


KINDS = Kinds(submitted=REGISTER)  # one act per attempt, its outcome word in it (done = the first ok)


def story_of(acts: Sequence[Mapping[str, str]]) -> Record:
    """The job's registration record from its acts (oldest first)."""
    return record_of(KINDS, acts)


@dataclass(frozen=True)
class RegMove:
    """``register`` (attempt n), ``wait`` (asked again next run) or ``none`` (never, or done)."""

    move: str
    why: str
    attempt: int = 0


def listed_hf_only(series: Sequence[Any], cluster: str, name: str) -> list[str]:
    """The sweep.yaml ``hf_chain.series`` (db_registration false, a match given) naming this job."""
    return [
        s.name for s in series if s.match and not s.db_registration and s.cluster == cluster and re.match(s.match, name)
    ]


def needs_verdict(story: Record, hub: str) -> bool:
    """Whether the job's HF-only verdict decides its move now (the hub holds it, nothing done yet)."""
    return story.done is None and story.unknown is None and hub == "ok"


def next_register(story: Record, hub: str, hf_only: HfOnly | None, retries: int) -> RegMove:
    """The move for one job whose hub check said ``hub`` (ok | missing | unknown | n/a);
    ``hf_only``: the verdict (None = not judged yet: asked of the cluster first)."""
    if (d := story.done) is not None:
        return RegMove("none", f"registered by run {d.get('run', '?')} at {d.get('at', '?')}")
    if (u := story.unknown) is not None:
        return RegMove(
            "wait",
            f"registration attempt {u.get('attempt', '?')} outcome UNKNOWN ({(u.problem or u.get('why'))[:160]}): never run "
            "again blind; a person checks the DB and records it",
        )
    if hub != "ok":
        return RegMove("wait", f"hub {hub}: registered once the hub holds the upload")
    if hf_only is None:
        return RegMove("wait", "HF-only not judged yet")
    if hf_only.hf_only is True:
        return RegMove("none", f"HF-only, never DB-registered: {hf_only.why}")
    if hf_only.hf_only is None:
        return RegMove("wait", f"not registered while HF-only is {hf_only.why}")
    n = story.failures
    last = story.submissions[-1] if story.submissions else None
    if n and exhausted(n, retries):
        return RegMove("none", f"given up after {n} failed attempt(s); last: {(last.why or '' if last else '')[:200]}")
    why = "the hub holds the upload: DB registration"
    if n:
        why = f"attempt {n} failed ({(last.why or '' if last else '')[:160]}); {retry_note(n, retries)}"
    return RegMove("register", why, n + 1)


def register_argv(argv: Sequence[str], values: Mapping[str, str]) -> tuple[str, ...]:
    """The configured argv filled (each value its own element; quoted when the script is built)."""
    return PLACEHOLDERS.render_argv(argv, values)
