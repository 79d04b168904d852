"""The harvest's batched script (one SSH session per cluster, read-only) and its reader.

``sacct -j <ids>`` for every pending row's eval job; for a COMPLETED job the ``results_*.json``
files in its results dir (ops.md ``eval_results_dir``, ``%j`` = job id; depth-1 ``ls``, no find,
each file at most ``max_bytes``); for a failed job the tail of its log (ops.md ``log_pattern``).
"""

from __future__ import annotations

import re
import shlex

from sweep_core.config.schema_base import default_of
from sweep_core.config.sweep_schema import GatherLimits
from sweep_core.handoffs.harvest.plan import JobReport
from sweep_core.slurm.gather import LOG_HELPERS, GatherOutput, script_prelude
from sweep_core.slurm.parse import read_records

_JOB_ID = re.compile(r"^\d+(_\d+)?$")
SACCT_LOOKBACK_DAYS = 120


def build_harvest_script(
    job_ids: list[str],
    results_dir: str,
    log_pattern: str,
    marker: str,
    max_bytes: int,
    tail_bytes: int = default_of(GatherLimits, "tail_bytes"),
) -> str:
    """Read-only: states, results files of COMPLETED jobs, log tails of failed ones."""
    ids = sorted(set(job_ids))
    for j in ids:
        if not _JOB_ID.match(j):
            raise ValueError(f"job id {j!r} is not a Slurm job id")
    q = shlex.quote
    return (
        script_prelude(marker)
        + f"""\
RD={q(results_dir)}
LP={q(log_pattern)}
{LOG_HELPERS}run sacct sacct -j {q(",".join(ids))} -X -P -n --delimiter="$M" -S now-{SACCT_LOOKBACK_DAYS}days -o JobID,State,JobName
cp "$T/o" "$T/sacct"
# fields split by the marker, which no job name holds: a line of a name with a newline is skipped
while IFS= read -r line; do
  case $line in *"$M"*"$M"*) ;; *) continue ;; esac
  jid=${{line%%"$M"*}}; state=${{line#*"$M"}}; state=${{state%%"$M"*}}; name=${{line#*"$M"*"$M"}}
  case $jid in ''|*[!0-9_]*) continue ;; esac
  case $state in
    COMPLETED*)
      [ -n "$RD" ] || continue
      d=${{RD//%j/$jid}}
      if ! ls -1 -- "$d" >"$T/ls" 2>"$T/e"; then : >"$T/o"; rec "nodir:$jid" 1; continue; fi
      n=0
      while IFS= read -r f; do
        case $f in results_*.json) ;; *) continue ;; esac
        n=$((n + 1)); [ "$n" -le 50 ] || break
        s=$(stat -c %s -- "$d/$f" 2>/dev/null || echo 0)
        if [ "$s" -gt {int(max_bytes)} ]; then printf '%s' "$f" >"$T/o"; printf 'too big: %s bytes' "$s" >"$T/e"; rec "big:$jid:$n" 1; continue; fi
        printf '%s' "$f" >"$T/o"; : >"$T/e"; rec "rname:$jid:$n" 0
        run "rfile:$jid:$n" cat -- "$d/$f"
      done <"$T/ls" ;;
    RUNNING*|PENDING*) ;;
    *)
      # the controller's StdOut while it still knows the job; else ops.md log_pattern (sacct's
      # JobName of a just-ended job can read "allocation" for a while: not trusted alone)
      # (one StdOut line trusted, see stdout_of); replacements quoted (bash 5.2 expands & in them)
      p=""
      if scontrol show job "$jid" >"$T/o" 2>/dev/null; then p=$(stdout_of); fi
      case $p in /*) ;; *) p="" ;; esac
      if [ -z "$p" ] || [ ! -e "$p" ]; then [ -n "$LP" ] || continue; p=${{LP//%j/"$jid"}}; p=${{p//%x/"$name"}}; fi
      if nonreg "$p"; then norec "nolog:$jid" "$p"
      elif [ -e "$p" ]; then run "tail:$jid" tail -c {int(tail_bytes)} -- "$p"
      else printf '%s' "$p" >"$T/o"; : >"$T/e"; rec "notail:$jid" 1; fi ;;
  esac
done <"$T/sacct"
echo "$M end 0 - -"
"""
    )


def read_harvest(
    out: GatherOutput | None, job_ids: list[str], problem: str = "", delimiter: str = "|"
) -> dict[str, JobReport]:
    """One JobReport per job id; a cluster-side problem makes every report UNKNOWN (never 'failed').
    ``delimiter``: sacct's field delimiter (the script's marker)."""
    reports = {j: JobReport() for j in job_ids}
    sa = out.get("sacct") if out else None
    why = problem or ("" if sa else "no sacct record (script cut short)")
    if sa is not None and (sa.rc != 0 or "error" in sa.stderr.lower()):
        why = f"sacct exited {sa.rc}: {sa.stderr.strip()[:200]}"
    if why or out is None or sa is None:
        for r in reports.values():
            r.problem = why
        return reports
    for (jid, state, _name), _ in read_records(sa.stdout, delimiter, 3):
        if jid in reports:
            reports[jid].state = state.strip()
    for jid, rep in reports.items():
        if out.get(f"nodir:{jid}") is not None:
            rep.results_problem = f"results dir missing ({out.get(f'nodir:{jid}').stderr.strip()[:200]})"
        n = 1
        while n <= 50:
            name, big = out.get(f"rname:{jid}:{n}"), out.get(f"big:{jid}:{n}")
            if big is not None:
                rep.results_problem = f"{big.stdout}: {big.stderr}"
            elif name is not None:
                body = out.get(f"rfile:{jid}:{n}")
                if body is None or body.rc != 0:
                    rep.results_problem = f"{name.stdout}: could not be read"
                else:
                    rep.results[name.stdout] = body.stdout
            elif out.get(f"rname:{jid}:{n + 1}") is None and out.get(f"big:{jid}:{n + 1}") is None:
                break
            n += 1
        t, missing = out.get(f"tail:{jid}"), out.get(f"notail:{jid}")
        if t is not None and t.rc == 0:
            rep.log_tail = t.stdout
        elif t is not None:
            rep.log_problem = f"log unreadable: {t.stderr.strip()[:160]}"
        elif missing is not None:
            rep.log_problem = f"log {missing.stdout} not found"
        elif out.get(f"nolog:{jid}") is not None:
            rep.log_problem = f"log is a {out.get(f'nolog:{jid}').stdout.strip()}, not a regular file: not read"
    return reports
