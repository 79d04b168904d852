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
from collections.abc import Sequence
from dataclasses import dataclass, field

from sweep_core.config.sweep_schema import GatherLimits
from sweep_core.slurm.parse import (
    SACCT_FORMAT,
    SACCT_TERMINAL_STATES,
    CommandResult,
    squeue_format,
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


_LIMITS = GatherLimits()


@dataclass(frozen=True)
class GatherRequest:
    """What to ask one SLURM cluster for."""

    user: str
    window_start: int  # epoch seconds, inclusive
    window_end: int  # epoch seconds, exclusive
    tail_bytes: int = _LIMITS.tail_bytes  # defaults: sweep.yaml gather:, in the schema
    max_jobs: int = _LIMITS.max_jobs
    # slurmdbd answers a windowed `sacct -S/-E -s` query for a just-ended job only some seconds
    # after `sacct -j` already shows it (measured: up to ~5 s on 22.05). The script waits until
    # the remote clock is settle_s past the window end before it asks, so a job that ended in the
    # last seconds of a window is not lost from that window's sweep.
    settle_s: int = _LIMITS.sacct_settle_s
    # RUNNING jobs whose name starts with one of these get their earlier chain links' logs
    # (same name, older files in the same log dir, depth-1 ls) tailed too: up to chain_logs.
    chain_prefixes: tuple[str, ...] = _LIMITS.chain_prefixes
    chain_logs: int = 2
    # Jobs that ended in the window: their log (scontrol StdOut while the controller still
    # knows the job, else log_pattern with %j %x %A %a %u expanded) is tailed: the traceback of
    # a failure, the final step of a completion, an eval's upload/register lines.
    log_pattern: str = ""
    max_finished_logs: int = 200
    # Array jobs seen: `sacct -j <array id>` once each for datagen chunk counts.
    max_arrays: int = 100
    array_lookback_s: int = 60 * 86400
    # The cluster's clone (ops.md repo_path): `git status` only, read-only; for each modified
    # file whether it equals the upstream version (identical = stale HEAD, a ff pull fixes it).
    repo_path: str = ""
    max_git_files: int = 100
    # INODE HEADROOM: `df -i -P` of these paths (the artifact roots) and the ops.md quota command
    # (operator config, run as written through bash -c). Empty = not checked (dormant, none).
    df_paths: tuple[str, ...] = ()
    quota_command: str = ""
    # Bound on the whole script (remote clock): `timeout` kills it and every process it started
    # (a tail blocked on a FIFO, a hung filesystem), so nothing of the sweep outlives it on the
    # login node. 0 = unbounded. Set it below the SSH command timeout.
    bound_s: int = 0


# Bash helpers every script that reads a cluster log uses (the gather, the tracker harvest).
LOG_HELPERS = r"""# Only a regular file is stat'ed or tailed: a FIFO would block tail, a device has no age.
nonreg() { [ -e "$1" ] && [ ! -f "$1" ]; }
kind() { if [ -p "$1" ]; then echo FIFO; elif [ -c "$1" ]; then echo character device; \
elif [ -b "$1" ]; then echo block device; elif [ -d "$1" ]; then echo directory; \
elif [ -S "$1" ]; then echo socket; else echo not a regular file; fi; }
norec() { kind "$2" >"$T/o"; : >"$T/e"; rec "$1" 0; }
# The StdOut path of `scontrol show job` ($T/o), or "?" when it is ambiguous: a newline in the
# job name or the path adds StdOut-looking lines (JobName=x<NL>   StdOut=/etc/hostname), so
# exactly ONE StdOut line, followed by a Key= line, is trusted. One awk, no per-line processes.
stdout_of() { awk 'chk { if ($0 !~ /^ +[A-Za-z][A-Za-z0-9_\/:-]*=/ && $0 !~ /^ *$/) bad = 1; chk = 0 }
  /^ *StdOut=/ { n++; p = substr($0, index($0, "=") + 1); chk = 1 }
  END { if (n > 1 || bad) print "?"; else if (n == 1) print p }' "$T/o"; }
"""


def new_marker() -> str:
    """A random record marker: a log line or file content cannot forge a record."""
    return f"@@SWEEP-{secrets.token_hex(6)}@@"


def script_prelude(marker: str) -> str:
    """The head every batched script shares: strict vars, C locale, a private temp dir removed
    on exit, ``rec NAME RC`` (emit the record of $T/o and $T/e) and ``run NAME CMD...``."""
    return f"""\
set -u
export LC_ALL=C
M={shlex.quote(marker)}
T=$(mktemp -d "${{TMPDIR:-/tmp}}/sweep.XXXXXX") || {{ echo "$M mktemp 1 - -"; exit 3; }}
trap 'rm -rf -- "$T"' EXIT
rec() {{ printf '%s %s %s ' "$M" "$1" "$2"; base64 -w0 <"$T/o"; printf ' '; base64 -w0 <"$T/e"; printf '\\n'; }}
run() {{ local name=$1; shift; "$@" >"$T/o" 2>"$T/e"; rc=$?; rec "$name" "$rc"; return $rc; }}
"""


def build_gather_script(req: GatherRequest, marker: str | None = None) -> tuple[str, str]:
    """The bash script for ``bash -s`` and the record marker it prints; values shlex-quoted."""
    for name in (
        "window_start",
        "window_end",
        "tail_bytes",
        "max_jobs",
        "settle_s",
        "chain_logs",
        "max_finished_logs",
        "max_arrays",
        "array_lookback_s",
        "bound_s",
    ):
        value = getattr(req, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if not req.user:
        raise ValueError("user is required")
    marker = marker or new_marker()
    q = shlex.quote
    # bash reads a piped script line by line, so the bounded bash reads the rest of stdin;
    # timeout (not --foreground) kills its whole process group when the bound is hit.
    bound = f"exec timeout -k 5 {req.bound_s} bash -s\n" if req.bound_s else ""
    chain_case = "|".join(f"{q(p)}*" for p in req.chain_prefixes if p) or "''"
    script = (
        bound
        + script_prelude(marker)
        + f"""\
U={q(req.user)}
# Field delimiter of squeue/sacct: the run's marker, which no job name can contain.
D={q(marker)}
{LOG_HELPERS}trap 'exit 143' TERM  # the bound hit: exit through the EXIT trap (temp dir removed)
wait=$(( {req.window_end} + {req.settle_s} - $(date +%s) ))
if [ "$wait" -gt 0 ] && [ "$wait" -le {req.settle_s} ]; then sleep "$wait"; fi
run meta sh -c 'hostname; date +%s; date +%z; id -un'
S=$(date -d @{req.window_start} +%Y-%m-%dT%H:%M:%S)
E=$(date -d @{req.window_end} +%Y-%m-%dT%H:%M:%S)
run squeue squeue -u "$U" -t RUNNING -o {q(squeue_format(marker))}
sq=$rc
cp "$T/o" "$T/squeue"
if [ "$sq" -eq 0 ]; then run pending squeue -u "$U" -t PENDING -o {q(squeue_format(marker))}; fi
run sacct sacct -u "$U" -S "$S" -E "$E" -X -P --delimiter="$D" -s {q(SACCT_TERMINAL_STATES)} -o {q(SACCT_FORMAT)}
sa=$rc
cp "$T/o" "$T/sacct"
ok_id() {{ case $1 in ''|*[!0-9_+]*) return 1 ;; esac; return 0; }}
arrays=" "
add_array() {{ case $1 in *_*) a=${{1%%_*}}; case $arrays in *" $a "*) ;; *) arrays="$arrays$a " ;; esac ;; esac; }}
if [ "$sq" -eq 0 ]; then
  count=0
  while IFS= read -r line; do
    case $line in *"$D"*) ;; *) continue ;; esac  # a line of a name that holds a newline
    id=${{line%%"$D"*}}; name=${{line##*"$D"}}
    ok_id "$id" || continue
    add_array "$id"
    count=$((count + 1)); [ "$count" -le {req.max_jobs} ] || continue
    run "scontrol:$id" scontrol show job "$id" || continue
    p=$(stdout_of)
    if [ "$p" = "?" ]; then : >"$T/o"; : >"$T/e"; rec "ambiguous:$id" 0; continue; fi
    case $p in /*) ;; *) continue ;; esac
    if nonreg "$p"; then norec "nolog:$id" "$p"; continue; fi
    run "stat:$id" stat -L -c %Y -- "$p" || continue
    run "tail:$id" tail -c {req.tail_bytes} -- "$p"
    case $id in *_*) continue ;; esac  # array tasks share a name: siblings, not chain links
    case $name in {chain_case}) ;; *) continue ;; esac
    d=${{p%/*}}; b=${{p##*/}}; k=0
    ls -1t -- "$d" 2>/dev/null >"$T/ls"
    while IFS= read -r f; do
      [ "$k" -lt {req.chain_logs} ] || break
      [ "$f" = "$b" ] && continue
      case $f in "$name"*) ;; *) continue ;; esac
      [ -f "$d/$f" ] || continue
      k=$((k + 1))
      run "chain:$id:$k" tail -c {req.tail_bytes} -- "$d/$f"
    done <"$T/ls"
  done <"$T/squeue"
fi
LP={q(req.log_pattern)}
if [ "$sa" -eq 0 ]; then
  nf=0
  while IFS= read -r line; do
    case $line in *"$D"*) ;; *) continue ;; esac
    jid=${{line%%"$D"*}}; raw=${{line#*"$D"}}; raw=${{raw%%"$D"*}}; name=${{line##*"$D"}}
    ok_id "$jid" || continue
    add_array "$jid"
    nf=$((nf + 1)); [ "$nf" -le {req.max_finished_logs} ] || continue
    p=""
    # ops.md log_pattern first (no controller RPC); scontrol when the pattern finds no file,
    # and only while the controller answers (each call would wait out its timeout otherwise)
    if [ -n "$LP" ]; then
      # replacements quoted: bash 5.2 (patsub_replacement) would expand a & in them
      p=${{LP//%j/"$raw"}}; p=${{p//%x/"$name"}}; p=${{p//%u/"$U"}}
      case $jid in *_*) p=${{p//%A/"${{jid%%_*}}"}}; p=${{p//%a/"${{jid#*_}}"}} ;; esac
      [ -e "$p" ] || p=""
    fi
    if [ -z "$p" ] && [ "$sq" -eq 0 ] && scontrol show job "$jid" >"$T/o" 2>/dev/null; then
      p=$(stdout_of)
    fi
    case $p in /*) ;; *) continue ;; esac
    printf '%s' "$p" >"$T/o"; : >"$T/e"; rec "fpath:$jid" 0
    if nonreg "$p"; then norec "fnolog:$jid" "$p"; continue; fi
    run "ftail:$jid" tail -c {req.tail_bytes} -- "$p"
  done <"$T/sacct"
fi
CS=$(date -d @{max(0, req.window_start - req.array_lookback_s)} +%Y-%m-%dT%H:%M:%S)
na=0
for a in $arrays; do
  na=$((na + 1)); [ "$na" -le {req.max_arrays} ] || break
  run "chunks:$a" sacct -j "$a" -X -P -n -S "$CS" -o JobID,State
done
R={q(req.repo_path)}
if [ -n "$R" ] && run gitstatus git -C "$R" status --porcelain=v1 -b -z; then
  cp "$T/o" "$T/git"
  k=0
  while IFS= read -r -d '' e; do
    case $e in "## "*) continue ;; esac
    xy=${{e:0:2}}; f=${{e:3}}
    case $xy in R*|C*) IFS= read -r -d '' _ ;; esac
    case $xy in *M*) ;; *) continue ;; esac
    k=$((k + 1)); [ "$k" -le {req.max_git_files} ] || break
    git -C "$R" diff --quiet "@{{u}}" -- "$f" 2>"$T/e"; r=$?
    printf '%s' "$f" >"$T/o"; rec "gitsame:$k" "$r"
  done <"$T/git"
fi
{headroom_lines(req.df_paths, req.quota_command)}echo "$M end 0 - -"
"""
    )
    return script, marker


def headroom_lines(df_paths: Sequence[str], quota_command: str) -> str:
    """INODE HEADROOM records ``dfi:<k>`` (df -i -P of each path) and ``quota`` (the ops.md quota
    command, operator config, run through bash -c); shared by the gather and the cleanup scripts."""
    q = shlex.quote
    lines = [f"run dfi:{k} df -i -P -- {q(p)}" for k, p in enumerate(df_paths)]
    if quota_command:
        lines.append(f"run quota bash -c {q(quota_command)}")
    return "".join(line + "\n" for line in lines)


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
