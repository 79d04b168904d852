"""The hygiene hand-off on the real local Slurm over real SSH (the lane's user owns the cluster
clone in its HOME; the LOCAL clone is this machine's, in tmp_path): validate reads the clone and
the user's RUNNING jobs in one session and commits the triage in the local clone only; a RUNNING
job launched from an uncommitted file stops the pull offer; once it ended, the approved pull
fast-forwards the cluster clone over one act session."""

from __future__ import annotations

import logging
import shlex
import subprocess
from pathlib import Path

from lab import HOME, LAB_OPS, LOGS, USER
from sweep_runner import ROOT

WHO = "-c user.name=t -c user.email=t@x"


def _as_user(cmd: str) -> str:
    return subprocess.run(["runuser", "-u", USER, "--", "bash", "-c", cmd], check=True, capture_output=True,
                          text=True).stdout  # fmt: skip


def _clones(where: Path) -> Path:
    """As the cluster user: a bare origin, a seed clone that pushed v1 then v2, and the cluster
    clone at v1 (fetched: behind 1)."""
    w = shlex.quote(str(where))
    _as_user(f"mkdir -p {w} && git init -q --bare -b main {w}/origin.git && git clone -q {w}/origin.git {w}/seed")
    _as_user(f"cd {w}/seed && printf 'echo run\\n' > run.sh && git add run.sh && git {WHO} commit -qm v1 "
             "&& git push -q origin HEAD:main")  # fmt: skip
    _as_user(f"git clone -q {w}/origin.git {w}/clone")
    _as_user(f"cd {w}/seed && printf 'v2\\n' > README && git add README && git {WHO} commit -qm v2 "
             f"&& git push -q origin HEAD:main && git -C {w}/clone fetch -q")  # fmt: skip
    return where / "clone"


def test_triage_local_commit_running_gate_and_approved_pull(local_cluster, tag, tmp_path) -> None:
    from sweep_core.config.ops import load_cluster
    from sweep_core.config.sweep import load_sweep_config
    from sweep_core.handoffs.hygiene.usecase import pull, validate_cluster
    from sweep_operators.cluster_ssh import run_checked

    clone = _clones(HOME / "hygiene" / tag)
    origin_copy = tmp_path / "origin.git"  # the local side clones a copy (root never writes the user's repos)
    subprocess.run(["cp", "-r", str(clone.parent / "origin.git"), str(origin_copy)], check=True)
    local = tmp_path / "local"
    subprocess.run(["git", "clone", "-q", str(origin_copy), str(local)], check=True, capture_output=True)
    cfg = load_cluster(str(LAB_OPS), "local").model_copy(update={"repo_path": str(clone), "local_clone": str(local)})
    limits = load_sweep_config(str(ROOT / "include" / "sweep.yaml")).gather

    def run(cfg_, script, marker, what):  # type: ignore[no-untyped-def]
        return run_checked(cfg_, limits, logging.getLogger("t"), script, marker, what)

    c = shlex.quote(str(clone))
    _as_user(f"printf 'sbatch q8b\\n' > {c}/launch_q8b.sh && printf '#!/bin/bash\\nsleep 300\\n' > {c}/job.bak")
    got = validate_cluster(cfg, ["launch_q8b.sh"], run, dry_run=False)
    assert got["commit"] and not got["commit"].startswith("commit failed"), got
    assert subprocess.run(["git", "-C", str(local), "show", "HEAD:scripts/launch_q8b.sh"], capture_output=True,
                          text=True).stdout == "sbatch q8b\n"  # fmt: skip
    assert _as_user(f"git -C {c} log --format=%s") == "v1\n"  # nothing committed on the cluster
    assert got["offer"] is False and "launch_q8b.sh (reusable)" in got["why"]

    _as_user(f"rm {c}/launch_q8b.sh")
    job = _as_user(f"sbatch --parsable -J hyg_{tag} -o {shlex.quote(str(LOGS))}/%x-%j.out {c}/job.bak").strip()
    local_cluster.wait_running(job.split(";")[0])
    got = validate_cluster(cfg, [], run, dry_run=False)
    assert got["offer"] is False and "launched from uncommitted job.bak" in got["why"], got
    local_cluster.cancel_all()
    local_cluster.wait_finished(job.split(";")[0], "CANCELLED")

    got = validate_cluster(cfg, [], run, dry_run=False)
    assert got["offer"] is True, got
    done = pull(cfg, run, dry_run=False)
    assert done["outcome"] == "pulled", done
    assert _as_user(f"cat {c}/README") == "v2\n"
