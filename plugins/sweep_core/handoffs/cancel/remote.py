"""The batched scripts of sweep_cancel (one SSH session each) and the readers of their records.

validate (read-only): ``squeue -u <user>`` in SQUEUE_FORMAT, parsed and validated locally.
scancel : per approved job, right before its scancel and in the same script, ``squeue -h -j``
          must print exactly ``<id>|<state>|<name>`` as approved, else the job is refused
          (record rc 2); scancel itself is filtered by user, name and state too (``-u -n -t``).
          Then ``sacct -j`` is polled (bounded) until every sent job reads CANCELLED.

Every value is shlex-quoted; job ids and names are checked (sweep_core.handoffs.cancel.plan) first.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from sweep_core.handoffs.cancel.plan import JOB_ID_RE, MAX_NAME
from sweep_core.slurm.gather import GatherOutput, script_prelude
from sweep_core.slurm.parse import SACCT_FORMAT, SacctRow, SlurmOutputError, parse_sacct, squeue_format

SACCT_LOOKBACK_DAYS = 60


@dataclass(frozen=True)
class ApprovedJob:
    """A job the human approved, in the state and with the name they saw."""

    job_id: str
    name: str
    state: str

    def __post_init__(self) -> None:
        if not JOB_ID_RE.match(self.job_id):
            raise ValueError(f"job id {self.job_id!r} is not a Slurm job id")
        if not self.name or len(self.name) > MAX_NAME or any(c in self.name for c in "\n\r\0"):
            raise ValueError(f"job name {self.name[:80]!r} is empty, too long or not one line")
        if self.state not in ("RUNNING", "PENDING"):
            raise ValueError(f"state {self.state!r} is not RUNNING or PENDING")


def build_validate_script(user: str, marker: str) -> str:
    """squeue of the cluster user's jobs: the one read validate decides from (fields delimited by
    the marker, so a job name with a newline cannot forge a row)."""
    if not user:
        raise ValueError("user is required")
    q = shlex.quote
    return (
        script_prelude(marker)
        + f'U={q(user)}\nrun squeue squeue -u "$U" -o {q(squeue_format(marker))}\necho "$M end 0 - -"\n'
    )


def build_scancel_script(user: str, jobs: list[ApprovedJob], marker: str, confirm_timeout_s: int) -> str:
    """Re-check + scancel each job (record ``scancel:<k>``), then ``sacct`` until CANCELLED (``sacct``)."""
    if not user:
        raise ValueError("user is required")
    if isinstance(confirm_timeout_s, bool) or not isinstance(confirm_timeout_s, int) or confirm_timeout_s < 0:
        raise ValueError(f"confirm_timeout_s must be a non-negative integer, got {confirm_timeout_s!r}")
    q = shlex.quote
    body = [f"U={q(user)}", 'sent=""', "ns=0"]
    for k, j in enumerate(jobs):
        body.append(
            f"id={q(j.job_id)}; nm={q(j.name)}; st={q(j.state)}\n"
            f'squeue -h -u "$U" -j "$id" -o \'%i|%T|%j\' >"$T/o" 2>"$T/e"; rc=$?\n'
            f'if [ "$rc" -eq 0 ] && [ "$(cat "$T/o")" = "$id|$st|$nm" ]; then\n'
            f'  if run scancel:{k} scancel -u "$U" -n "$nm" -t "$st" -- "$id"; then sent="$sent,$id"; ns=$((ns + 1)); fi\n'
            f"else\n"
            f'  seen=$(head -c 300 "$T/o" | tr "\\n" " ")\n'
            f'  printf "squeue (exit %s) shows [%s], approved [%s]" "$rc" "$seen" "$id|$st|$nm" >"$T/o"\n'
            f"  rec scancel:{k} 2\n"
            f"fi"
        )
    body.append(
        'if [ "$ns" -gt 0 ]; then\n'
        f"  end=$(( $(date +%s) + {confirm_timeout_s} ))\n"
        "  while :; do\n"
        f'    sacct -j "${{sent#,}}" -X -P --delimiter="$M" -S now-{SACCT_LOOKBACK_DAYS}days -o {q(SACCT_FORMAT)} '
        '>"$T/o" 2>"$T/e"; rc=$?\n'
        # fields split by the marker, which no job name holds: a name cannot fake a CANCELLED row
        '    c=$(awk -F "$M" \'NF > 2 && $3 ~ /^CANCELLED/ { c++ } END { print c + 0 }\' "$T/o")\n'
        '    if [ "$rc" -eq 0 ] && [ "$c" -ge "$ns" ]; then break; fi\n'
        '    if [ "$(date +%s)" -ge "$end" ]; then break; fi\n'
        "    sleep 1\n"
        "  done\n"
        '  rec sacct "$rc"\n'
        "fi"
    )
    return script_prelude(marker) + "\n".join(body) + '\necho "$M end 0 - -"\n'


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
