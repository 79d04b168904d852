"""Plain fakes of the I/O a hand-off use-case is given (sweep_core.handoffs.ports): ops.md by
cluster name, a script runner that records each call and answers with records, a hub that records
what it was asked. The real SSH and hub paths stay covered by the cluster tests."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sweep_core.config.ops import ClusterConfig, OpsConfigError, QuotaConfig
from sweep_core.handoffs.hub_evidence import HubEvidence
from sweep_core.slurm.gather import GatherOutput, parse_gather_output
from sweep_core.slurm.parse import SQUEUE_FIELDS, CommandResult

ROOT = "/work/art"
# One HF-only chain series as sweep.yaml hf_chain.series names it (the chain tests' delphi grid).
DELPHI_SERIES = {
    "name": "delphi",
    "cluster": "local",
    "match": r"^sft__(?P<cell>delphi_[a-z0-9_]+)$",
    "hub_repo": "{org}/{cell}",
    "upload": ["sbatch", "--parsable", "-J", "hf_upload__{cell}", "up.sh", "{hub_repo}"],
    "eval": ["sbatch", "--parsable", "-J", "eval-{cell}", "eval.sh", "{hub_repo}"],
    "tracker": "x/grid.md",
}


def cluster(name: str = "local", *, scheduler: str = "slurm", status: str = "active", **kw: object) -> ClusterConfig:
    """An ops.md as read: user ``sweep``, one artifact root unless told otherwise."""
    kw.setdefault("user", "sweep")
    kw.setdefault("artifact_roots", (ROOT,))
    kw.setdefault("quota", QuotaConfig())
    # model_construct: the schema's defaults for the rest, no cross-field check (a partial ops.md)
    return ClusterConfig.model_construct(
        name=name, scheduler=scheduler, status=status, path=f"/ops/{name}/ops.md", body="", **kw
    )


def ops(*configs: ClusterConfig) -> Callable[[str], ClusterConfig]:
    """LoadCluster over these configs; any other name has no ops.md."""
    by_name = {c.name: c for c in configs}

    def load(name: str) -> ClusterConfig:
        if name not in by_name:
            raise OpsConfigError(f"/ops/{name}/ops.md", "file", "does not exist")
        return by_name[name]

    return load


def squeue(marker: str, rows: Sequence[tuple[str, str, str]] = ()) -> CommandResult:
    """A validated squeue answer: (job id, state, name) rows under the header, fields split by the marker."""
    header = marker.join(head for _, head in SQUEUE_FIELDS)
    lines = [
        marker.join([jid, jid.split("_")[0], st, "1:00", "2:00:00", "1", "gpu", "node1", name])
        for jid, st, name in rows
    ]
    return CommandResult(0, "\n".join([header, *lines]) + "\n", "")


def ok(stdout: str = "") -> CommandResult:
    return CommandResult(0, stdout, "")


@dataclass
class Call:
    cluster: str
    what: str
    script: str


# (marker, script) -> the records the script "printed" (None: no login node reached)
Answer = Callable[[str, str], dict[str, CommandResult] | None]


@dataclass
class FakeSsh:
    """RunScript: answers each call by its ``what`` (``cleanup probe``, ``scancel`` ...) and records it.
    A ``what`` with no answer is unreachable: (None, 'unreachable: ...')."""

    answers: dict[str, Answer] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)

    def __call__(self, cfg: ClusterConfig, script: str, marker: str, what: str) -> tuple[GatherOutput | None, str]:
        self.calls.append(Call(cfg.name, what, script))
        answer = self.answers.get(what)
        records = answer(marker, script) if answer else None
        if records is None:
            return None, "unreachable: login1 (127.0.0.1:22): connect failed"
        return GatherOutput(dict(records), complete=True, marker=marker), ""

    def whats(self) -> list[tuple[str, str]]:
        return [(c.cluster, c.what) for c in self.calls]


@dataclass
class FakeHub:
    """HubCheck: ``ok`` per repo id, or ``<repo id>@<commit>`` (absent: not on the hub); records every question."""

    ok: dict[str, bool | None] = field(default_factory=dict)
    asked: list[tuple] = field(default_factory=list)  # (repo, type, expected[, revision])

    def __call__(self, repo_id: str, repo_type: str, expected: Sequence[str], revision: str = "main") -> HubEvidence:
        """A revision other than main is answered from ``ok["<repo>@<sha>"]`` (absent: not there)."""
        self.asked.append((repo_id, repo_type, tuple(expected)) + ((revision,) if revision != "main" else ()))
        got = self.ok.get(repo_id, False) if revision == "main" else self.ok.get(f"{repo_id}@{revision}", False)
        said = {True: "all present", False: "repo not on the hub", None: "hub unreachable: HTTP 503"}[got]
        return HubEvidence(got, f"{repo_type} {repo_id}: {said}", revision=revision)


def lost_after_send(ssh: FakeSsh, *whats: str) -> Callable[[ClusterConfig, str, str, str], tuple[None, str]]:
    """RunScript: a script named in ``whats`` is sent and its session drops (its outcome unknown,
    as cluster_ssh.run_checked says it); any other goes to ``ssh``. Every call is recorded in ``ssh``."""
    from sweep_core.slurm.failover import OUTCOME_UNKNOWN

    def run(cfg: ClusterConfig, script: str, marker: str, what: str):  # type: ignore[no-untyped-def]
        if what in whats:
            ssh.calls.append(Call(cfg.name, what, script))
            return None, f"{OUTCOME_UNKNOWN}: sent to login1 (127.0.0.1:22), then session failed: EOFError"
        return ssh(cfg, script, marker, what)

    return run


NO_JOB_SQUEUE = "#!/bin/sh\necho 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n"


def local_bash(tmp: Path, stubs: dict[str, str] | None = None) -> Callable[..., tuple[GatherOutput | None, str]]:
    """A RunScript that runs the script with real bash on this machine, the ``stubs`` (command
    name -> script text; default: a squeue that knows no job) first on PATH, TMPDIR in ``tmp``."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (stubs or {"squeue": NO_JOB_SQUEUE}).items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)

    def run(cfg: ClusterConfig, script: str, marker: str, what: str) -> tuple[GatherOutput | None, str]:
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TMPDIR": str(tmp)}
        proc = subprocess.run(["bash", "-s"], input=script, text=True, capture_output=True, env=env, timeout=30)
        out = parse_gather_output(proc.stdout, marker)
        assert out.complete, proc.stderr
        return out, ""

    return run
