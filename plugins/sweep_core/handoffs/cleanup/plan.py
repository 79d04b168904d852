"""Cleanup by flavor (spec §4 "Completion → cleanup"): what may be deleted, and every guard.

"Cleanup is not done until the artifact dir is rm'd" — and never before the evidence holds.
A target's artifact trees are deleted only when ALL of these hold (each guard has its test):

- the cluster's squeue was validated this run and the job is neither RUNNING nor PENDING, and no
  job squeue still lists for the user (any live state) maps to the same artifact dir (names are
  reused: a rerun, a resume, a chain link's successor);
- ``sacct -j`` positively says COMPLETED (datagen: every chunk of the array COMPLETED), or, for a
  job the ledger records for salvage (a collapse-cancel, sweep_core.handoffs.upload), CANCELLED;
- the hub holds the artifact (every expected file pattern matched: ``hub_evidence``);
- the path is built from a sane job name (no ``/``, no ``..``), resolves (``realpath -e`` on the
  cluster, symlinks followed) strictly inside one of ops.md ``artifact_roots``, and is not a
  root itself.

A tree already gone is "nothing to do" (re-running a cleanup does nothing twice).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from sweep_core.config.handoffs_schema import CleanupSection
from sweep_core.config.schema_base import default_of, section
from sweep_core.records.models import Flag
from sweep_core.records.vocab import cleanup_flavor
from sweep_core.safe.names import check_plain_name

DEFAULT_ARTIFACT_DIR: str = default_of(CleanupSection, "artifact_dir")  # the schema's, for the guards' callers
_SANE_SUBDIR = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$")


class CleanupConfigError(ValueError):
    """The ``cleanup:`` section of sweep.yaml is malformed; the message names the field."""


@dataclass(frozen=True)
class HubArtifact:
    """One hub repo that must hold the job's artifact before anything is deleted."""

    repo: str  # template: {org} {name} {job_id} {cluster}
    repo_type: str  # model | dataset
    expected: tuple[str, ...]  # glob patterns, each must match a file of the repo


@dataclass(frozen=True)
class FlavorSpec:
    """What one cleanup skill checks on the hub and which artifact subtrees it deletes."""

    name: str
    hub: tuple[HubArtifact, ...]
    delete: tuple[str, ...]  # subdirs of the job's artifact dir
    all_chunks: bool  # datagen: every array chunk must be COMPLETED in sacct


@dataclass(frozen=True)
class CleanupConfig:
    artifact_dir: str  # template under each ops.md artifact root: {root} {name} {job_id}
    hub_org: str
    flavors: dict[str, FlavorSpec]
    verify_timeout_s: int
    verify_poll_s: int


def cleanup_config(raw: CleanupSection | dict[str, Any] | None) -> CleanupConfig:
    """``from_section`` of sweep.yaml's ``cleanup:`` as a mapping (tests, a caller holding raw
    YAML), validated by the schema here; a schema error is a CleanupConfigError."""
    return from_section(section(CleanupSection, raw, "cleanup", CleanupConfigError))


def from_section(sect: CleanupSection) -> CleanupConfig:
    """Build from sweep.yaml's validated ``cleanup:`` (the schema's flavors a section's own
    extend); here the guards: a non-empty hub, plain relative delete subdirs, one dir per job."""
    flavors = {}
    for name, spec in sect.flavors.items():
        where = f"cleanup.flavors.{name}"
        hubs = tuple(HubArtifact(h.repo, h.type, h.expected) for h in spec.hub)
        if not hubs:
            raise CleanupConfigError(f"{where}.hub is empty: nothing would prove the artifact is safe")
        for d in spec.delete:
            if not _SANE_SUBDIR.match(d) or ".." in d.split("/"):
                raise CleanupConfigError(f"{where}.delete: {d!r} is not a plain relative subdirectory")
        flavors[name] = FlavorSpec(name, hubs, spec.delete, spec.all_chunks)
    artifact_dir = sect.artifact_dir
    if not artifact_dir.startswith("{root}/"):
        raise CleanupConfigError("cleanup.artifact_dir must start with {root}/")
    if "{name}" not in artifact_dir and "{job_id}" not in artifact_dir:
        raise CleanupConfigError("cleanup.artifact_dir must contain {name} or {job_id}: one dir per job")
    try:
        artifact_dir.format(root="", name="", job_id="")
    except (KeyError, IndexError, ValueError) as exc:
        raise CleanupConfigError(
            f"cleanup.artifact_dir {artifact_dir!r}: only {{root}} {{name}} {{job_id}}: {exc}"
        ) from exc
    return CleanupConfig(
        artifact_dir=artifact_dir,
        hub_org=sect.hub_org,
        flavors=flavors,
        verify_timeout_s=sect.verify_timeout_s,
        verify_poll_s=sect.verify_poll_s,
    )


@dataclass(frozen=True)
class CleanupTarget:
    """One completed job handed to sweep_cleanup (the sweep's completion_cleanup flags)."""

    cluster: str
    job_id: str
    name: str
    flavor: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CleanupTarget:
        missing = [k for k in ("cluster", "job_id", "name", "flavor") if not d.get(k)]
        if missing:
            raise ValueError(f"cleanup target {d!r} lacks {', '.join(missing)}")
        given = str(d["flavor"])
        flavor = cleanup_flavor(given)  # the flavor, or the flag's action that names it
        return cls(str(d["cluster"]), str(d["job_id"]), str(d["name"]), given if flavor is None else flavor)

    def to_dict(self) -> dict[str, str]:
        return {"cluster": self.cluster, "job_id": self.job_id, "name": self.name, "flavor": self.flavor}

    @property
    def array_id(self) -> str:
        return self.job_id.split("_", 1)[0]

    @property
    def entry(self) -> dict[str, str]:
        """The job's ledger entry key (``cluster``, ``job_id``, ``name``): what a claim is on."""
        return {"cluster": self.cluster, "job_id": self.job_id, "name": self.name}


def targets_from_flags(flags: list[Flag]) -> list[CleanupTarget]:
    """The cleanup hand-offs among a sweep's flags, one per job."""
    out, seen = [], set()
    for f in flags:
        flavor = cleanup_flavor(f.action)
        if flavor is not None and (f.cluster, f.job_id) not in seen:
            seen.add((f.cluster, f.job_id))
            out.append(CleanupTarget(f.cluster, f.job_id, f.job_name, flavor))
    return out


def hub_repo_id(art: HubArtifact, target: CleanupTarget, org: str) -> str:
    """The hub repo id of one artifact for one target."""
    repo = art.repo.format(org=org, name=target.name, job_id=target.array_id, cluster=target.cluster)
    return repo.strip("/")


def candidate_paths(target: CleanupTarget, spec: FlavorSpec, roots: tuple[str, ...], cfg: CleanupConfig) -> list[str]:
    """The unresolved paths of the trees to delete: every delete subdir under every root.

    Raises ValueError for a job name that could climb out of the root (``/``, ``..``)."""
    check_plain_name(target.name)
    out = []
    for root in roots:
        base = cfg.artifact_dir.format(root=root.rstrip("/"), name=target.name, job_id=target.array_id)
        out.extend(posixpath.join(base, sub) for sub in spec.delete)
    return out


def inside_roots(given: str, resolved: str, resolved_roots: dict[str, str]) -> str | None:
    """Why ``given`` (resolved on the cluster to ``resolved``) must not be deleted; None if it may.

    ``resolved_roots`` maps each configured root to its own realpath on the cluster. A root may
    itself be a symlink ($WORK -> /gpfs/...); below the root no symlink is followed: the path
    must resolve to exactly the root's realpath + the rest of the path."""
    if not given.startswith("/") or not resolved.startswith("/"):
        return f"{given}: not an absolute path"
    if ".." in given.split("/") or ".." in resolved.split("/"):
        return f"{given}: contains '..'"
    g, norm = posixpath.normpath(given), posixpath.normpath(resolved)
    for root, real_root in resolved_roots.items():
        if norm in (posixpath.normpath(root), posixpath.normpath(real_root)) or g == posixpath.normpath(root):
            return f"{given}: is the artifact root {root} itself"
    for root, real_root in resolved_roots.items():
        r = posixpath.normpath(root)
        if r == "/" or not g.startswith(r + "/"):
            continue
        expected = posixpath.normpath(real_root) + g[len(r) :]
        if norm == expected:
            return None
        inside = any(norm.startswith(posixpath.normpath(x) + "/") for x in resolved_roots.values())
        where = "inside the roots" if inside else "OUTSIDE the artifact roots (symlink escape)"
        return f"{given}: a symlink below the root leads to {norm}, {where}: not followed"
    return f"{given}: not under any artifact root {sorted(resolved_roots)}"


@dataclass
class PathCheck:
    """What the cluster said about one candidate path (probe script)."""

    given: str
    exists: bool
    resolved: str = ""
    kind: str = ""  # stat %F: directory | regular file | symbolic link ...
    problem: str = ""  # a probe error (not "missing")


@dataclass
class CleanupDecision:
    """The plan for one target: delete these resolved paths, or why nothing is deleted."""

    target: CleanupTarget
    action: str  # delete | blocked | nothing-to-do
    reasons: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # resolved, validated: what rm gets
    roots: dict[str, str] = field(default_factory=dict)  # path -> the resolved root it lies in
    hub: list[dict[str, Any]] = field(default_factory=list)  # evidence per hub artifact

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.to_dict(),
            "action": self.action,
            "reasons": list(self.reasons),
            "paths": list(self.paths),
            "roots": dict(self.roots),
            "hub": list(self.hub),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CleanupDecision:
        return cls(
            target=CleanupTarget.from_dict(d["target"]),
            action=d["action"],
            reasons=list(d.get("reasons", [])),
            paths=list(d.get("paths", [])),
            roots=dict(d.get("roots", {})),
            hub=list(d.get("hub", [])),
        )


@dataclass
class ClusterState:
    """What the probe established for one cluster: validated scheduler state per job."""

    squeue_ok: bool
    squeue_problem: str = ""
    live: dict[str, str] = field(default_factory=dict)  # job id (and array id) -> RUNNING/PENDING...
    live_jobs: list[tuple[str, str, str]] = field(default_factory=list)  # every squeue row: (id, name, state)
    sacct_ok: bool = True
    sacct_problem: str = ""
    states: dict[str, str] = field(default_factory=dict)  # sacct -j JobID -> State


def artifact_key(template: str, name: str, job_id: str) -> str:
    """The artifact dir a job maps to, relative to any root (same key = same trees)."""
    return posixpath.normpath("/" + template.format(root="", name=name, job_id=job_id.split("_", 1)[0]))


def live_same_dir(target: CleanupTarget, state: ClusterState, template: str = DEFAULT_ARTIFACT_DIR) -> list[str]:
    """The live jobs (every row squeue lists) that map to the target's artifact dir, as 'id (STATE)'."""
    key = artifact_key(template, target.name, target.array_id)
    return [f"{jid} ({st})" for jid, name, st in state.live_jobs if artifact_key(template, name, jid) == key]


def done_signal(target: CleanupTarget, spec: FlavorSpec, state: ClusterState, salvage: bool = False) -> str | None:
    """Why sacct does not positively say the job (every chunk, for datagen) is COMPLETED (a
    salvage: CANCELLED, as its cancel confirmed)."""
    if not state.sacct_ok:
        return f"sacct failed: no positive done-signal ({state.sacct_problem})"
    if spec.all_chunks:
        rows = {k: v for k, v in state.states.items() if k == target.array_id or k.startswith(target.array_id + "_")}
        if not rows:
            return f"sacct -j {target.array_id} shows no chunk: no positive done-signal"
        bad = sorted({v for v in rows.values() if v.split(" ")[0] != "COMPLETED"})
        if bad:
            done = sum(1 for v in rows.values() if v.split(" ")[0] == "COMPLETED")
            return f"not every chunk is COMPLETED ({done}/{len(rows)} rows; others {', '.join(bad)})"
        return None
    got = state.states.get(target.job_id)
    if got is None:
        return f"sacct -j {target.job_id} shows no record: no positive done-signal"
    if salvage and got.split(" ")[0] == "CANCELLED":
        return None
    if got.split(" ")[0] != "COMPLETED":
        return f"sacct state is {got}, not COMPLETED" + (" or CANCELLED (salvage)" if salvage else "")
    return None


def live_reason(target: CleanupTarget, state: ClusterState, template: str = DEFAULT_ARTIFACT_DIR) -> str | None:
    """Why squeue's live jobs hold the target's trees (the job itself, or a live job mapping to the
    same artifact dir: a rerun, a chain successor); None when none does."""
    live = state.live.get(target.job_id) or state.live.get(target.array_id)
    if live:
        return f"job is {live} in squeue: a live job is never cleaned"
    same = live_same_dir(target, state, template)
    if same:
        return (
            f"live job {', '.join(same)} of the same name maps to the same artifact dir: "
            "its trees are never deleted while it is listed by squeue"
        )
    return None


def hub_reasons(hub: list[dict[str, Any]]) -> list[str]:
    """Why the hub evidence does not hold (one reason per artifact not positively there; [] = it holds)."""
    if not hub:
        return ["no hub evidence: nothing deleted"]
    out = []
    for h in hub:
        if h.get("ok") is not True:
            verdict = "UNKNOWN" if h.get("ok") is None else "failed"
            out.append(f"hub check {verdict} for {h.get('repo_type')} {h.get('repo_id')}: {h.get('reason')}")
    return out


def _local_guards(
    d: CleanupDecision,
    spec: FlavorSpec | None,
    state: ClusterState,
    checks: list[PathCheck],
    resolved_roots: dict[str, str],
    template: str,
    salvage: bool = False,
) -> bool:
    """The scheduler and path guards (no hub needed); False with the reason added to ``d``."""
    target = d.target
    if spec is None:
        d.reasons.append(f"unknown cleanup flavor {target.flavor!r}")
        return False
    if not state.squeue_ok:
        d.reasons.append(f"squeue UNKNOWN on {target.cluster}: no destructive step ({state.squeue_problem})")
        return False
    why = live_reason(target, state, template)
    if why:
        d.reasons.append(why)
        return False
    why = done_signal(target, spec, state, salvage)
    if why:
        d.reasons.append(why)
        return False
    unresolved = [r for r, real in resolved_roots.items() if not real]
    if unresolved or not resolved_roots:
        d.reasons.append(f"artifact root(s) {unresolved or '(none configured)'} do not resolve on the cluster")
        return False
    for check in checks:
        if check.problem:
            d.reasons.append(f"{check.given}: probe error: {check.problem}")
            return False
        if not check.exists:
            continue
        why = inside_roots(check.given, check.resolved, resolved_roots)
        if why:
            d.reasons.append(why)
            return False
        if check.kind != "directory":
            d.reasons.append(f"{check.given}: is a {check.kind or 'thing of unknown kind'}, not a directory")
            return False
    return True


def precheck(
    target: CleanupTarget,
    spec: FlavorSpec | None,
    state: ClusterState,
    checks: list[PathCheck],
    resolved_roots: dict[str, str],
    template: str = DEFAULT_ARTIFACT_DIR,
    salvage: bool = False,
) -> CleanupDecision | None:
    """The decision when the hub need not be asked (blocked, or every tree already gone);
    None when the scheduler and path guards hold and trees remain: ask the hub, then ``decide``."""
    d = CleanupDecision(target, "blocked")
    if not _local_guards(d, spec, state, checks, resolved_roots, template, salvage):
        return d
    if not any(c.exists for c in checks):
        d.action = "nothing-to-do"
        d.reasons.append("artifact trees already removed")
        return d
    return None


def decide(
    target: CleanupTarget,
    spec: FlavorSpec | None,
    state: ClusterState,
    checks: list[PathCheck],
    resolved_roots: dict[str, str],
    hub: list[dict[str, Any]],
    template: str = DEFAULT_ARTIFACT_DIR,
    salvage: bool = False,
) -> CleanupDecision:
    """Apply every guard; the first failing one blocks the whole target (nothing deleted)."""
    d = CleanupDecision(target, "blocked", hub=hub)
    if not _local_guards(d, spec, state, checks, resolved_roots, template, salvage):
        return d
    hub_bad = hub_reasons(hub)
    if hub_bad:
        d.reasons += hub_bad
        return d
    present = [c for c in checks if c.exists]
    if not present:
        d.action = "nothing-to-do"
        d.reasons.append("artifact trees already removed")
        return d
    d.action = "delete"
    for c in present:
        path = posixpath.normpath(c.resolved)
        d.paths.append(path)
        d.roots[path] = next(
            posixpath.normpath(r) for r in resolved_roots.values() if path.startswith(posixpath.normpath(r) + "/")
        )
    return d
