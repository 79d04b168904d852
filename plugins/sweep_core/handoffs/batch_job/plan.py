"""The batch-job machine's pure part: live states, the job-id check, argv rendering with validated
placeholders, the job name sbatch gives, the id sbatch prints, the retry policy and the typed
outcome of a submission. Nothing here touches a cluster or the ledger."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

# Slurm states in which a job is still queued or running (sacct/squeue base state, before " by ...").
LIVE_STATES = ("PENDING", "RUNNING", "REQUEUED", "RESIZING", "SUSPENDED", "CONFIGURING", "COMPLETING")
_JOB_ID = re.compile(r"^\d+(_\d+)?$")
# sbatch's answer, --parsable (``123`` / ``123;cluster``) or not (``Submitted batch job 123``)
_SUBMITTED = re.compile(r"^(?:Submitted batch job )?(\d{1,12})(?:;[\w.-]+)?\s*$", re.M)


class BatchConfigError(ValueError):
    """A batch-job argv that must not be run; the message names where it is configured."""


def base_state(state: str) -> str:
    """``CANCELLED by 0`` -> ``CANCELLED``."""
    return state.split(" ")[0]


def is_live(state: str) -> bool:
    return base_state(state) in LIVE_STATES


def valid_job_id(job_id: str) -> bool:
    """A Slurm job id (``123`` or an array task ``123_4``)."""
    return bool(_JOB_ID.match(job_id))


def check_job_ids(ids: Sequence[str], what: str = "job id") -> None:
    """ValueError naming the first id that is not a Slurm job id (it would reach a shell)."""
    for j in ids:
        if not valid_job_id(j):
            raise ValueError(f"{what} {j!r} is not a Slurm job id")


def check_sbatch(argv: Sequence[str], where: str, error: type[ValueError] = BatchConfigError) -> tuple[str, ...]:
    """The argv when it submits a batch job (``()`` stays ``()``: none configured); a heavy job
    never runs on the login node."""
    if not argv:
        return ()
    if argv[0] != "sbatch":
        raise error(f"{where} must start with sbatch (it runs as a batch job, never on the login node)")
    return tuple(argv)


@dataclass(frozen=True)
class Placeholders:
    """The ``{name}``-style placeholders an argv may hold; every other brace (JSON in a --wrap) is
    left alone. A placeholder used with no value is an error naming it, never a blank."""

    names: tuple[str, ...]

    @property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(r"\{(" + "|".join(map(re.escape, self.names)) + r")\}")

    def render(self, template: str, values: Mapping[str, str]) -> str:
        def fill(m: re.Match[str]) -> str:
            value = values.get(m.group(1))
            if not isinstance(value, str):
                raise ValueError(f"placeholder {{{m.group(1)}}} in {template!r} has no value")
            return value

        return self.pattern.sub(fill, template)

    def render_argv(self, argv: Sequence[str], values: Mapping[str, str]) -> tuple[str, ...]:
        """Each element filled; quoting happens when the submit script is built."""
        return tuple(self.render(a, values) for a in argv)


def job_name_of(argv: Sequence[str]) -> str:
    """The job name sbatch gives ``argv`` (its last ``-J``/``--job-name``; '' when none)."""
    name = ""
    for k, a in enumerate(argv):
        if a in ("-J", "--job-name") and k + 1 < len(argv):
            name = argv[k + 1]
        elif a.startswith("--job-name="):
            name = a.split("=", 1)[1]
        elif a.startswith("-J") and len(a) > 2:
            name = a[2:]
    return name


def parse_job_id(stdout: str) -> str:
    """The job id of ``sbatch --parsable`` output (``123`` or ``123;cluster``, first line); '' if none."""
    first = stdout.strip().splitlines()[0] if stdout.strip() else ""
    jid = first.split(";", 1)[0].strip()
    return jid if jid.isdigit() else ""


def last_job_id(stdout: str) -> str:
    """The last job id a command that ran sbatch printed (either form, on a line of its own); ''."""
    found = _SUBMITTED.findall(stdout)
    return found[-1] if found else ""


class Outcome(StrEnum):
    """What became of one submission sent in a submit session."""

    SUBMITTED = "submitted"  # sbatch answered with a job id
    REFUSED = "refused"  # sbatch answered without one: nothing runs
    NOT_SENT = "not sent"  # no login node took the script: nothing ran
    UNKNOWN = "unknown"  # sent, answer lost: never sent again blind, found by name next run


@dataclass(frozen=True)
class Submission:
    outcome: Outcome
    job_id: str = ""
    why: str = ""  # refused / not sent / unknown: what became of it, said for a person
    session: str = ""  # not sent / unknown: the session's problem as the runner gave it
    answer: str = ""  # refused: sbatch's own words (stderr, else stdout, else its exit code)

    @property
    def frees_claim(self) -> bool:
        """Nothing of it runs: its claim may be released (an UNKNOWN one keeps its claim)."""
        return self.outcome in (Outcome.REFUSED, Outcome.NOT_SENT)


def exhausted(failures: int, retries: int) -> bool:
    """The retry policy: a job that failed ``failures`` times is given up (escalated) once it
    failed more than ``retries`` times, i.e. after the first attempt and ``retries`` retries."""
    return failures > retries


def retry_note(failures: int, retries: int) -> str:
    return f"retry {failures} of {retries}"


class Found(StrEnum):
    FOUND = "found"  # exactly one job of its name submitted after the claim
    UNSENT = "unsent"  # none, long enough after the claim: it never ran
    WAIT = "wait"  # none yet, or more than one: asked again / a person decides


# An UNKNOWN submission that sacct has not listed this long after its claim never ran.
UNSENT_AFTER_S = 120
# How far before its claim (clock skew between here and the cluster) its job may have been submitted.
CLOCK_SLACK_S = 300


@dataclass(frozen=True)
class Reconciled:
    verdict: Found
    job_id: str = ""
    note: str = ""


def reconcile(
    found: Sequence[tuple[str, int, str]], job_name: str, claimed_at: float | None, known: set[str], clock: float
) -> Reconciled:
    """Which job an UNKNOWN submission became. ``found``: (job id, submit epoch, name) the cluster
    listed; ``claimed_at``: when it was claimed (None: not recorded, never judged unsent);
    ``known``: ids the ledger already follows; ``clock``: now (epoch)."""
    since = (claimed_at or 0) - CLOCK_SLACK_S
    mine = [j for j, submit, name in found if name == job_name and submit >= since and j not in known]
    if len(mine) == 1:
        return Reconciled(Found.FOUND, mine[0])
    if not mine and claimed_at is not None and clock - claimed_at > UNSENT_AFTER_S:
        return Reconciled(Found.UNSENT, note="sacct lists no such job")
    if mine:
        return Reconciled(Found.WAIT, note=f"sacct lists {', '.join(mine)}: a person decides which")
    return Reconciled(Found.WAIT, note="sacct lists none yet: asked again next run")
