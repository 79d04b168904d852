"""The ONE batched script a SLURM gather runs over one SSH session, and the reader of its output.

The script does no parsing of its own beyond picking job ids (validated against a strict
pattern) and the StdOut path line; every command's exit code, stdout and stderr come back
base64-encoded, one record per line, and are parsed locally (slurm_parse).

Rules the script keeps (ops.md STEP 0 gotchas): no find/du walks; the log is located via
``scontrol show job`` StdOut, then ``stat`` and a bounded ``tail -c``; sacct always gets -S and
-E. Every value interpolated into it is shlex-quoted; values that come from the cluster (job
ids, paths) only ever live in shell variables, expanded inside double quotes.
"""

from __future__ import annotations

import base64
import binascii
import secrets
import shlex
from dataclasses import dataclass, field

from sweep_core.slurm_parse import (
    SACCT_FORMAT,
    SACCT_TERMINAL_STATES,
    SQUEUE_FORMAT,
    CommandResult,
)

# Texts on stderr that mean the login node could not fork: try the next login node.
FORK_FAILURE_MARKERS = (
    "fork: Resource temporarily unavailable",
    "fork: retry",
    "Cannot fork",
    "fork failed",
    "Resource temporarily unavailable",
    "cannot allocate memory",
)


@dataclass(frozen=True)
class GatherRequest:
    """What to ask one SLURM cluster for."""

    user: str
    window_start: int  # epoch seconds, inclusive
    window_end: int  # epoch seconds, exclusive
    tail_bytes: int = 16384
    max_jobs: int = 1000
    # slurmdbd answers a windowed `sacct -S/-E -s` query for a just-ended job only some seconds
    # after `sacct -j` already shows it (measured: up to ~5 s on 22.05). The script waits until
    # the remote clock is settle_s past the window end before it asks, so a job that ended in the
    # last seconds of a window is not lost from that window's sweep.
    settle_s: int = 10


def build_gather_script(req: GatherRequest, marker: str | None = None) -> tuple[str, str]:
    """The bash script for ``bash -s`` and the record marker it prints; values shlex-quoted."""
    for name in ("window_start", "window_end", "tail_bytes", "max_jobs", "settle_s"):
        value = getattr(req, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if not req.user:
        raise ValueError("user is required")
    marker = marker or f"@@SWEEP-{secrets.token_hex(6)}@@"
    q = shlex.quote
    script = f"""\
set -u
export LC_ALL=C
M={q(marker)}
U={q(req.user)}
T=$(mktemp -d "${{TMPDIR:-/tmp}}/sweep.XXXXXX") || {{ echo "$M mktemp 1 - -"; exit 3; }}
trap 'rm -rf -- "$T"' EXIT
rec() {{ printf '%s %s %s ' "$M" "$1" "$2"; base64 -w0 <"$T/o"; printf ' '; base64 -w0 <"$T/e"; printf '\\n'; }}
run() {{ local name=$1; shift; "$@" >"$T/o" 2>"$T/e"; rc=$?; rec "$name" "$rc"; return $rc; }}
wait=$(( {req.window_end} + {req.settle_s} - $(date +%s) ))
if [ "$wait" -gt 0 ] && [ "$wait" -le {req.settle_s} ]; then sleep "$wait"; fi
run meta sh -c 'hostname; date +%s; date +%z; id -un'
S=$(date -d @{req.window_start} +%Y-%m-%dT%H:%M:%S)
E=$(date -d @{req.window_end} +%Y-%m-%dT%H:%M:%S)
run squeue squeue -u "$U" -t RUNNING -o {q(SQUEUE_FORMAT)}
sq=$rc
cp "$T/o" "$T/squeue"
run sacct sacct -u "$U" -S "$S" -E "$E" -X -P -s {q(SACCT_TERMINAL_STATES)} -o {q(SACCT_FORMAT)}
if [ "$sq" -eq 0 ]; then
  count=0
  while IFS='|' read -r id _; do
    case $id in ''|*[!0-9_+]*) continue ;; esac
    count=$((count + 1)); [ "$count" -le {req.max_jobs} ] || break
    run "scontrol:$id" scontrol show job "$id" || continue
    p=$(sed -n 's/^ *StdOut=//p' "$T/o" | head -n 1)
    case $p in /*) ;; *) continue ;; esac
    run "stat:$id" stat -c %Y -- "$p" || continue
    run "tail:$id" tail -c {req.tail_bytes} -- "$p"
  done <"$T/squeue"
fi
echo "$M end 0 - -"
"""
    return script, marker


@dataclass
class GatherOutput:
    """The records of one script run, by name (``squeue``, ``scontrol:123``, ...)."""

    records: dict[str, CommandResult] = field(default_factory=dict)
    complete: bool = False  # the end record arrived: the script ran to its last line
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> CommandResult | None:
        return self.records.get(name)


def _b64(text: str) -> str:
    if text == "-":
        return ""
    return base64.b64decode(text, validate=True).decode("utf-8", "replace")


def parse_gather_output(stdout: str, marker: str) -> GatherOutput:
    """Read the script's records; lines that are not records (a login banner, motd) are ignored."""
    out = GatherOutput()
    for lineno, line in enumerate(stdout.splitlines(), start=1):
        if not line.startswith(marker + " "):
            continue
        parts = line.split(" ")
        if len(parts) >= 2 and parts[1] == "end":
            out.complete = True
            continue
        if len(parts) != 5:
            out.problems.append(f"record on line {lineno} is cut short ({len(parts)} fields)")
            continue
        _, name, rc, b64out, b64err = parts
        try:
            out.records[name] = CommandResult(int(rc), _b64(b64out), _b64(b64err))
        except (ValueError, binascii.Error) as exc:
            out.problems.append(f"record {name!r} on line {lineno} is corrupt: {exc}")
    return out


def looks_like_fork_failure(stderr: str) -> bool:
    """Whether a login node's stderr says it could not fork (fork saturation)."""
    low = stderr.lower()
    return any(m.lower() in low for m in FORK_FAILURE_MARKERS)
