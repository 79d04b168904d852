"""The upload's pure part: which argv (sweep.yaml flavor, ops.md override), its templates, and what
the ledger's acts say a job's upload is at: submit, wait, retry, give up, or nothing to do.

A job's upload story is a list of acts in its ledger entry (sweep_core.ledger.acts), read as one
kernel Record (kernel.attempt; ``KINDS`` below):
``upload`` (an attempt: its Slurm id, attempt number, log, step, hub repo; or, with ``outcome:
UNKNOWN`` and no id, a submission sent whose answer never came back: found next run by its job
name in sacct, never sent again blind), ``upload_unsent`` (sacct showed that UNKNOWN submission
never ran: the attempt may be made), ``upload_state`` (a state sacct read for that id, a failure's
traceback, the hub commit a COMPLETED one's log names), ``upload_gave_up`` and ``salvage`` (a
collapse-cancel: the step to salvage). A job with a salvage or an attempt is cleaned only on its
OWN upload: the hub asked for that commit, never the repo's name alone. Nothing here touches a
cluster.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweep_core.handoffs.batch_job.plan import (
    BatchConfigError,
    Placeholders,
    base_state,
    check_sbatch,
    exhausted,
    is_live,
    job_name_of,
    retry_note,
)
from sweep_core.handoffs.kernel.attempt import Kinds, Record, record_of
from sweep_core.safe.names import UPLOAD_PLACEHOLDERS

UPLOAD = "upload"
UPLOAD_STATE = "upload_state"
UNSENT = "upload_unsent"
UNKNOWN = "UNKNOWN"
GAVE_UP = "upload_gave_up"
SALVAGE = "salvage"
PLACEHOLDERS = Placeholders(UPLOAD_PLACEHOLDERS)
KINDS = Kinds(submitted=UPLOAD, state=UPLOAD_STATE, gave_up=GAVE_UP, unsent=UNSENT, salvage=SALVAGE)
# a hub commit URL as huggingface_hub prints it (`hf upload`, ``print(upload_folder(...))``):
# <endpoint>/[datasets/|spaces/]<org>/<name>/commit/<40-hex sha>
_COMMIT_URL = re.compile(r"(?:/(?:datasets|spaces))?/([\w.-]+/[\w.-]+)/commit/([0-9a-f]{40})\b")


class UploadConfigError(BatchConfigError):
    """An upload argv that must not be run (not an sbatch job); the message names where."""


def check_argv(argv: Sequence[str], where: str) -> tuple[str, ...]:
    """The argv when it submits a batch job; a heavy upload never runs on the login node."""
    return check_sbatch(argv, where, UploadConfigError)


def upload_argv(flavor: str, flavor_argv: Sequence[str], ops_commands: Sequence[Any]) -> tuple[str, ...]:
    """The cluster's ops.md ``upload_commands`` entry for the flavor, else the flavor's own ``upload``."""
    for cmd in ops_commands:
        if cmd.flavor == flavor:
            return check_argv(cmd.argv, f"ops.md upload_commands[{flavor}].argv")
    return check_argv(flavor_argv, f"cleanup.flavors.{flavor}.upload")


def render(template: str, values: Mapping[str, str]) -> str:
    """``{name}``-style placeholders filled; every other brace left alone (JSON in a --wrap)."""
    return PLACEHOLDERS.render(template, values)


def submit_argv(argv: Sequence[str], values: Mapping[str, str], log: str) -> tuple[str, ...]:
    """The filled argv with ``--parsable`` (its job id comes back), ``--output=<log>`` (its
    traceback is read there) and ``--job-name=upload__<name>`` when the argv names no job (the name
    a submission whose answer was lost is found by in sacct) right after ``sbatch``.
    Quoting happens when the script is built."""
    filled = [render(a, values) for a in argv]
    named = () if job_name_of(filled) else (f"--job-name=upload__{values['name']}",)
    return (filled[0], "--parsable", f"--output={log}", *named, *filled[1:])


def story_of(acts: Sequence[Mapping[str, str]]) -> Record:
    """The job's upload record from its acts (oldest first): its sent attempts (``last``), the
    latest state of each, a give-up, a salvage, a submission whose outcome is UNKNOWN."""
    return record_of(KINDS, acts)


def still_open(story: Record) -> bool:
    """Still to be followed: a salvage or an attempt, not given up, not verified on the hub."""
    if story.gave_up is not None:
        return False
    if story.unknown is not None:
        return True
    last = story.last
    if last is not None and story.state_of(last["upload_job"]) == "VERIFIED":
        return False
    return last is not None or story.salvage is not None


def tracked(story: Record) -> str:
    """The upload job id whose state must be asked of sacct ('' when none is in flight)."""
    last = story.last
    if last is None or story.gave_up is not None:
        return ""
    state = story.state_of(last["upload_job"])
    return last["upload_job"] if not state or is_live(state) else ""


@dataclass(frozen=True)
class Move:
    """What this run does for one job: ``submit`` | ``wait`` | ``give-up`` | ``verified`` | ``none``."""

    move: str
    why: str
    attempt: int = 0  # the attempt a submit makes (1 = first)


def next_move(story: Record, hub: str, retries: int, has_command: bool) -> Move:
    """The move for a job whose hub check said ``hub`` (ok | missing | unknown | n/a)."""
    last = story.last
    if story.gave_up is not None:
        return Move("none", f"upload given up: {story.gave_up.get('why', '')}")
    if story.unknown is not None:
        u = story.unknown
        return Move(
            "wait",
            f"upload attempt {u.get('attempt', '?')} outcome UNKNOWN ({(u.problem or u.get('why'))[:160]}): looked up in sacct "
            f"by its job name {u.get('job_name', '')!r}, never submitted again blind"
            + (f"; {story.note}" if story.note else ""),
        )
    if hub == "ok":
        if last is not None and story.state_of(last["upload_job"]) != "VERIFIED":
            return Move("verified", f"upload job {last['upload_job']} landed: the hub holds the artifact")
        return Move("none", "on the hub")
    if hub != "missing":
        if last is not None:
            return Move(
                "wait",
                f"upload job {last['upload_job']} {story.state_of(last['upload_job']) or 'submitted'}; hub {hub}",
            )
        return Move("none", f"hub {hub}: no upload")
    if not has_command:
        return Move("none", "not on the hub and the flavor names no upload command")
    if last is None:
        return Move("submit", "not on the hub: upload submitted", 1)
    jid = last["upload_job"]
    state = story.state_of(jid)
    base = base_state(state)
    if not state or is_live(state):
        return Move("wait", f"upload job {jid} {state or 'submitted'}: the hub is checked again next run")
    st = story.states.get(jid)
    why = st.get("why") if st is not None else ""
    failed = f"upload job {jid} {state}" + (f": {why}" if why else "")
    if base == "COMPLETED":
        failed = f"upload job {jid} COMPLETED but the hub still lacks the artifact"
    n = len(story.sent)
    if exhausted(n, retries):
        return Move("give-up", f"{failed}; given up after {n} attempt(s)")
    return Move("submit", f"{failed}; {retry_note(n, retries)}", n + 1)


def commits_in(text: str) -> dict[str, str]:
    """Hub repo id -> the last commit sha the log's commit URLs name for it."""
    return {m.group(1): m.group(2) for m in _COMMIT_URL.finditer(text or "")}


def commit_of(text: str, hub_repo: str) -> str:
    """The commit the upload log names for ``hub_repo`` ('' = none; any repo's last when the
    attempt did not record its repo)."""
    found = commits_in(text)
    if hub_repo:
        return found.get(hub_repo, "")
    return list(found.values())[-1] if found else ""


def needs_own_upload(story: Record) -> bool:
    """A job the sweep salvaged or uploaded for: only its OWN upload, verified on the hub at the
    commit that upload wrote, is evidence (never an earlier upload under the same name)."""
    return story.salvage is not None or bool(story.sent)


def own_revision(story: Record) -> str:
    """The hub commit the last upload attempt wrote, as its log named it ('' = none yet)."""
    last = story.last
    if last is None:
        return ""
    st = story.states.get(last["upload_job"])
    return st.get("revision") if st is not None else ""


def salvage_step(evidence: str) -> int | None:
    """The last healthy step of a collapse flag's evidence (``step N: …`` → N - 1); None if unread."""
    m = re.search(r"\bstep (\d+):", evidence or "")
    if m is None:
        return None
    return max(0, int(m.group(1)) - 1)
