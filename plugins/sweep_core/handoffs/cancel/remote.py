"""The batched scripts of sweep_cancel (one SSH session each) and the readers of their records.

validate (read-only): ``squeue -u <user>`` in SQUEUE_FORMAT, parsed and validated locally.
scancel : right before the scancels and in the same script, ONE ``squeue -h -j <all ids>`` must
          list each approved job exactly once as ``<id> <state> <name>`` (fields ended by the
          run's marker), else the job is refused (record rc 2); scancel itself is filtered by
          user, name and state too (``-u -n -t``). Then ONE ``sacct -j`` is polled (bounded)
          until every sent job reads CANCELLED.

scancel is sweep_core/programs/recheck.sh + cancel_scancel.sh under a header of its values. Every value is
shlex-quoted; job ids and names are checked (sweep_core.handoffs.cancel.plan) first.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweep_core.handoffs.cancel.plan import check_slurm_job
from sweep_core.handoffs.cancel.recheck import guard_values
from sweep_core.slurm.gather import GatherOutput
from sweep_core.slurm.parse import SACCT_FORMAT, SacctRow, SlurmOutputError, parse_sacct, squeue_format
from sweep_core.slurm.remote_scripts import compose

SACCT_LOOKBACK_DAYS = 60


@dataclass(frozen=True)
class ApprovedJob:
    """A job the human approved, in the state and with the name they saw."""

    job_id: str
    name: str
    state: str

    def __post_init__(self) -> None:
        check_slurm_job(self.job_id, self.name)
        if self.state not in ("RUNNING", "PENDING"):
            raise ValueError(f"state {self.state!r} is not RUNNING or PENDING")


def build_validate_script(user: str, marker: str) -> str:
    """squeue of the cluster user's jobs: the one read validate decides from (fields delimited by
    the marker, so a job name with a newline cannot forge a row): one ``run`` line, no file."""
    if not user:
        raise ValueError("user is required")
    run_line = f'run squeue squeue -u "$U" -o {shlex.quote(squeue_format(marker))}\n'
    return compose(marker, {"U": user}, (), run_line)


def build_scancel_script(
    user: str,
    jobs: list[ApprovedJob],
    marker: str,
    confirm_timeout_s: int,
    judged: Sequence[Mapping[str, Any]] = (),
    tail_bytes: int = 4096,
) -> str:
    """Re-check + scancel each job (record ``scancel:<k>``), then ``sacct`` until CANCELLED (``sacct``):
    sweep_core/programs/cancel_scancel.sh. ``judged``: per job the evidence it was judged on (an Evidence
    as a dict, {} = none): a job whose log moved since is left alone (record rc 3, handoffs.cancel.fresh)."""
    if not user:
        raise ValueError("user is required")
    if isinstance(confirm_timeout_s, bool) or not isinstance(confirm_timeout_s, int) or confirm_timeout_s < 0:
        raise ValueError(f"confirm_timeout_s must be a non-negative integer, got {confirm_timeout_s!r}")
    values = {
        "U": user,
        "IDS": [j.job_id for j in jobs],
        "NAMES": [j.name for j in jobs],
        "STATES": [j.state for j in jobs],
        "CONFIRM_TIMEOUT_S": confirm_timeout_s,
        "LOOKBACK_DAYS": SACCT_LOOKBACK_DAYS,
        "SACCT_FORMAT": SACCT_FORMAT,
        **guard_values([(j.job_id, ev) for j, ev in zip(jobs, judged or [{}] * len(jobs), strict=True)], tail_bytes),
    }
    return compose(marker, values, ("recheck.sh", "cancel_scancel.sh"), act=True)


def read_scancel(
    out: GatherOutput, jobs: list[ApprovedJob]
) -> tuple[list[tuple[int | None, str]], dict[str, SacctRow], str]:
    """Per job (record rc or None, its text), sacct rows by job id, and the sacct problem ('' = fine)."""
    per_job = []
    for k in range(len(jobs)):
        r = out.get(f"scancel:{k}")
        per_job.append((None, "") if r is None else (r.rc, r.stdout + r.stderr))
    sa = out.get("sacct")
    if sa is None:
        return per_job, {}, "" if not any(rc == 0 for rc, _ in per_job) else "no sacct record"
    try:
        rows = parse_sacct(sa)
    except SlurmOutputError as exc:
        return per_job, {}, str(exc)
    return per_job, {r.job_id: r for r in rows}, ""


def scancel_line(user: str, j: ApprovedJob) -> str:
    """The scancel a dry run prints (the script runs the same, after its re-check)."""
    q = shlex.quote
    return f"scancel -u {q(user)} -n {q(j.name)} -t {j.state} -- {j.job_id}"
