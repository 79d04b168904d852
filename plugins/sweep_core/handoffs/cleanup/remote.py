"""The batched scripts of sweep_cleanup (sweep_core/programs/cleanup_{probe,rm,verify}.sh, one SSH
session each) and the readers of their records.

probe  (read-only): squeue (validated), ``sacct -j`` done-signals, ``realpath -e`` + ``stat`` of
       every candidate tree and of every artifact root, ``df -i -P`` of the roots, the ops.md
       quota command.
rm     : one validated squeue first (UNKNOWN -> nothing removed; a job it lists with the
       target's name or array id -> that target is refused), then per path: ``cd -P`` into the
       validated parent, ``pwd -P`` must be that parent (a component swapped to a symlink is
       caught here, and the cwd is pinned from then on), and a DETACHED ``rm -rf`` of the
       RELATIVE name (setsid nohup: a GPFS delete of a trace tree can take longer than an SSH
       session should live; GNU rm follows no symlink inside the tree it removes).
verify : which paths still exist, ``df -i -P`` and the quota command again (the reclaim).

Every value goes in the script's header, shlex-quoted; job ids are checked against a strict
pattern and paths for being absolute and single-line first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sweep_core.handoffs.cleanup.plan import ClusterState, PathCheck
from sweep_core.health.quota_parsers import parse_df_inodes
from sweep_core.slurm.gather import GatherOutput
from sweep_core.slurm.parse import (
    SACCT_JOBS_FORMAT,
    SlurmOutputError,
    parse_squeue,
    read_sacct_jobs,
    squeue_format,
)
from sweep_core.slurm.remote_scripts import compose, headroom_lines

_JOB_ID = re.compile(r"^\d+(_\d+)?$")
SACCT_LOOKBACK_DAYS = 60


def _ids(job_ids: list[str]) -> list[str]:
    for j in job_ids:
        if not _JOB_ID.match(j):
            raise ValueError(f"job id {j!r} is not a Slurm job id")
    return sorted(set(job_ids))


def _paths(paths: list[str]) -> list[str]:
    for p in paths:
        if not p.startswith("/") or "\n" in p or "\0" in p:
            raise ValueError(f"path {p!r} is not an absolute single-line path")
    return paths


@dataclass(frozen=True)
class ProbeRequest:
    user: str
    job_ids: list[str]  # sacct -j: job ids and datagen array ids
    paths: list[str]  # candidate trees (unresolved)
    roots: list[str]  # ops.md artifact_roots
    quota_command: str = ""  # ops.md quota.command (operator config, run as written)


def build_probe_script(req: ProbeRequest, marker: str) -> str:
    """Read-only probe before any delete (sweep_core/programs/cleanup_probe.sh)."""
    values = {
        "U": req.user,
        "SQUEUE_FORMAT": squeue_format(marker),
        "JOB_IDS": ",".join(_ids(req.job_ids)),
        "SACCT_JOBS_FORMAT": SACCT_JOBS_FORMAT,
        "LOOKBACK_DAYS": SACCT_LOOKBACK_DAYS,
        "ROOTS": _paths(req.roots),
        "PATHS": _paths(req.paths),
    }
    return compose(marker, values, ("cleanup_probe.sh",), headroom_lines(req.roots, req.quota_command))


def read_probe(out: GatherOutput, req: ProbeRequest) -> tuple[ClusterState, list[PathCheck], dict[str, str]]:
    """The validated scheduler state, one PathCheck per candidate, and each root's realpath ('' = none)."""
    state = ClusterState(squeue_ok=False)
    sq = out.get("squeue")
    if sq is None:
        state.squeue_problem = "no squeue record (script cut short)"
    else:
        try:
            rows = parse_squeue(sq)
            state.squeue_ok = True
            for r in rows:
                state.live_jobs.append((r.job_id, r.name, r.state))
                state.live[r.job_id] = r.state
                state.live.setdefault(r.raw_id, r.state)
                state.live.setdefault(r.job_id.split("_", 1)[0], r.state)
        except SlurmOutputError as exc:
            state.squeue_problem = str(exc)
    sa = out.get("sacct")
    if req.job_ids:
        if sa is None:
            state.sacct_ok, state.sacct_problem = False, "no sacct record (script cut short)"
        elif sa.rc != 0 or "error" in sa.stderr.lower():
            state.sacct_ok, state.sacct_problem = False, f"exit {sa.rc}: {sa.stderr.strip()[:300]}"
        else:
            for row in read_sacct_jobs(sa.stdout, out.marker):
                state.states[row.job_id] = row.state
    roots = {}
    for k, root in enumerate(req.roots):
        r = out.get(f"rootreal:{k}")
        roots[root] = r.stdout.strip() if r is not None and r.rc == 0 else ""
    checks = []
    for k, path in enumerate(req.paths):
        if out.get(f"missing:{k}") is not None:
            checks.append(PathCheck(path, exists=False))
            continue
        real, kind = out.get(f"real:{k}"), out.get(f"kind:{k}")
        if real is None:
            checks.append(PathCheck(path, exists=True, problem="no probe record (script cut short)"))
        elif real.rc != 0:
            # a dangling symlink: realpath -e fails; never followed, never deleted
            checks.append(PathCheck(path, exists=True, problem=f"does not resolve: {real.stderr.strip()[:200]}"))
        else:
            kind_text = kind.stdout.strip() if kind is not None and kind.rc == 0 else ""
            checks.append(PathCheck(path, exists=True, resolved=real.stdout.strip(), kind=kind_text))
    return state, checks, roots


@dataclass(frozen=True)
class RmItem:
    """One validated tree to remove and what the cluster re-checks right before."""

    path: str  # resolved, validated by the plan
    root: str  # the resolved artifact root it lies strictly inside
    name: str  # refused while squeue lists a job of this name (same artifact dir)...
    array_id: str  # ... or of this (array) job id


# squeue rows as "<id>|<name>" after the header; the first field is the job id, the rest the name.
RM_SQUEUE_FORMAT = "%i|%j"
RM_SQUEUE_HEADER = "JOBID|NAME"


def build_rm_script(user: str, items: list[RmItem], marker: str) -> str:
    """Detached ``rm -rf`` of each validated tree, re-checked on the cluster right before
    (sweep_core/programs/cleanup_rm.sh).

    Records ``rm:<k>`` (items sorted by path): rc 0 + the rm PID when started, rc 0 + "gone"
    when already absent, rc 2 + the reason when the cluster-side check refuses it."""
    if not user:
        raise ValueError("user is required: the rm re-checks the user's squeue")
    ordered = sorted(items, key=lambda i: i.path)
    for it in ordered:
        _paths([it.path, it.root])
        _ids([it.array_id])
    values = {
        "U": user,
        "SQUEUE_FORMAT": RM_SQUEUE_FORMAT,
        "SQUEUE_HEADER": RM_SQUEUE_HEADER,
        "RM_PATHS": [it.path for it in ordered],
        "RM_ROOTS": [it.root for it in ordered],
        "RM_NAMES": [it.name for it in ordered],
        "RM_ARRAYS": [it.array_id for it in ordered],
    }
    return compose(marker, values, ("cleanup_rm.sh",), act=True)


def build_verify_script(paths: list[str], roots: list[str], quota_command: str, marker: str) -> str:
    """Which deleted paths still exist (``left:<k>`` rc 0 = still there), and the reclaim figures."""
    values = {"LEFT_PATHS": sorted(_paths(paths))}
    return compose(marker, values, ("cleanup_verify.sh",), headroom_lines(_paths(roots), quota_command))


def reclaim_lines(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """'df -i <root>: IUsed 1234 -> 1034 (200 inodes freed)' per filesystem read before and after.

    Other writers share the filesystem: a count that did not go down is "no measurable reclaim",
    never a negative amount freed."""
    lines = []
    for key, text in before.items():
        if not key.startswith("df -i"):
            continue
        b, a = parse_df_inodes(text).readings, parse_df_inodes(after.get(key, "")).readings
        if not b or not a:
            lines.append(f"{key}: reclaim UNKNOWN (no df -i reading before and after)")
            continue
        freed = b[0].used - a[0].used
        if freed > 0:
            lines.append(f"{key}: IUsed {b[0].used} -> {a[0].used} ({freed} inodes freed on {b[0].target})")
        else:
            lines.append(
                f"{key}: IUsed {b[0].used} -> {a[0].used}: no measurable reclaim on {b[0].target} "
                f"(df -i moved by {-freed:+d} from other writers on the shared filesystem)"
            )
    return lines
