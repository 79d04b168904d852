"""The hygiene hand-off's cluster side: the read session (sweep_core/programs/tree_status.sh +
hygiene_read.sh: the clone's git status, the files the triage brings, bounded, and each RUNNING
job's launch text) and its reader, and the approved pull's act script (``git pull --ff-only``, run
only while the tree still hashes to the status the gates were judged on). Every value is
shlex-quoted; a path that is not plain and relative is never sent.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from sweep_core.config.ops import ClusterConfig
from sweep_core.handoffs.hygiene.plan import PullOffer
from sweep_core.health.tree_hygiene import TreeReport
from sweep_core.slurm.gather import GatherOutput
from sweep_core.slurm.remote_scripts import compose
from sweep_core.slurm.snapshot import tree_report

MAX_FILE_BYTES = 256 * 1024  # one file brought to the local clone at most
MAX_TOTAL_BYTES = 2 * 1024 * 1024  # all of them in one read
MAX_GIT_FILES = 100  # modified files compared with upstream (as the gather)
BANNER_BYTES = 4096  # the head of a RUNNING job's log read for its launch text
MAX_BANNERS = 200  # logs read so in one session at most (the others: their Command alone)
LAUNCH_FIELDS = ("JobArrayID", "Command", "StdOut")  # squeue -O names, as the gather's PATHS_FIELDS


def _plain(rel: str) -> bool:
    p = PurePosixPath(rel)
    return bool(p.parts) and not p.is_absolute() and ".." not in p.parts and "\n" not in rel and "\0" not in rel


def read_script(cfg: ClusterConfig, paths: Sequence[str], marker: str) -> str:
    """ONE read session: the clone's status (tree_status.sh), the launches and ``paths``' bytes."""
    values = {
        "R": cfg.repo_path,
        "U": cfg.user,
        "MAX_GIT_FILES": MAX_GIT_FILES,
        "FILES": [p for p in paths if _plain(p)],
        "MAX_FILE_BYTES": MAX_FILE_BYTES,
        "MAX_TOTAL_BYTES": MAX_TOTAL_BYTES,
        "BANNER_BYTES": BANNER_BYTES,
        "MAX_BANNERS": MAX_BANNERS,
        "LAUNCH_FORMAT": ",".join(f"{f}:0{marker}" for f in LAUNCH_FIELDS),
    }
    return compose(marker, values, ("tree_status.sh", "hygiene_read.sh"))


@dataclass
class TreeRead:
    """One read of a cluster clone: its report (None: not read, ``why``), the files' bytes (path ->
    bytes), the files left out (path -> why) and each RUNNING job's launch text (None: not read)."""

    report: TreeReport | None
    why: str = ""
    status_sha1: str = ""  # of the git status read (the act pulls only while it is the same)
    contents: dict[str, bytes] = field(default_factory=dict)
    left: dict[str, str] = field(default_factory=dict)
    launches: dict[str, str | None] = field(default_factory=dict)


def _launches(out: GatherOutput) -> dict[str, str | None]:
    rec = out.get("launches")
    if rec is None or rec.rc != 0:
        return {"(squeue)": None}  # not read: no pull is offered
    got: dict[str, str | None] = {}
    for line in rec.stdout.splitlines():
        parts = line.split(out.marker)
        if len(parts) < 3 or not parts[0].strip():
            continue
        banner = out.get(f"banner:{parts[0].strip()}")
        text = "\n".join(
            [parts[1], parts[2], *((banner.stdout.splitlines()[:20]) if banner and banner.rc == 0 else [])]
        )
        got[parts[0].strip()] = text if parts[1].strip() or banner else None
    return got


def read_tree(out: GatherOutput, paths: Sequence[str]) -> TreeRead:
    """The records of ``read_script`` -> a TreeRead (a non-UTF-8 file is left out: never mangled)."""
    report = tree_report(out)
    if not isinstance(report, TreeReport):
        return TreeRead(None, report or "no git status record (repo_path unset?)")
    status = out.get("gitstatus")
    sha = hashlib.sha1(status.stdout.encode("utf-8")).hexdigest() if status else ""
    got = TreeRead(report, status_sha1=sha, launches=_launches(out))
    for k, path in enumerate([p for p in paths if _plain(p)], start=1):
        rec = out.get(f"file:{k}")
        if rec is None:
            got.left[path] = "not read (the script stopped early)"
        elif rec.rc != 0:
            got.left[path] = f"not brought: {rec.stderr.strip()[:200] or rec.rc}"
        elif "\ufffd" in rec.stdout:
            got.left[path] = "not UTF-8 text: not brought (copy it by hand)"
        else:
            got.contents[path] = rec.stdout.encode("utf-8")
    got.left.update({p: "not a plain relative path: refused" for p in paths if not _plain(p)})
    return got


CHANGED_RC = 97  # the pull's record when the tree is not the one the gates were judged on


def pull_script(offer: PullOffer, marker: str, status_sha1: str = "") -> str:
    """The act run once the offer is approved: ``git -C <repo> pull --ff-only``, record ``pull``.
    ``status_sha1``: the sha1 of the ``git status --porcelain=v1 -b -z`` the gates were judged on
    right before; the act session pulls only when its own status still hashes to it (else record
    ``pull`` with rc CHANGED_RC)."""
    if not offer.offer or offer.argv[:2] != ("git", "-C") or offer.argv[3:] != ("pull", "--ff-only"):
        raise ValueError(f"not an approvable ff pull: {offer.why}")
    run = f"run pull {offer.command()}\n"
    if status_sha1:
        status = shlex.join(["git", "-C", offer.argv[2], "status", "--porcelain=v1", "-b", "-z"])
        changed = "the tree changed since the check right before: not pulled"
        run = (
            f'if [ "$({status} | sha1sum)" = {shlex.quote(status_sha1 + "  -")} ]; then {run.strip()}; '
            f'else echo {shlex.quote(changed)} >"$T/e"; : >"$T/o"; rec pull {CHANGED_RC}; fi\n'
        )
    return compose(marker, {}, (), trailer=run, act=True)
