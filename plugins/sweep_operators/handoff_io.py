"""The I/O the hand-off use-cases (sweep_core.handoffs.*) are given, wired from Airflow: ops.md read
at run time, one batched script over the ssh provider's SSHHook with login-node failover
(cluster_ssh), and the hub client from the ``hf_hub`` Connection, built on first use.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sweep_core.config.ops import ClusterConfig, load_cluster
from sweep_core.handoffs.cancel.iris import IrisList, IrisStop
from sweep_core.handoffs.hub_evidence import HubEvidence
from sweep_core.handoffs.ports import HubCheck, LoadCluster, RunScript
from sweep_core.handoffs.relaunch.iris import RunLocal
from sweep_core.ledger.hold import held_problem
from sweep_core.slurm.gather import GatherOutput
from sweep_core.slurm.remote_scripts import is_act
from sweep_operators.cluster_ssh import read_checked, run_checked


def ops_loader(ops_dir: str) -> LoadCluster:
    """Read ``<ops_dir>/<cluster>/ops.md`` when asked (STEP 0 at run time)."""

    def load(cluster: str) -> ClusterConfig:
        return load_cluster(ops_dir, cluster)

    return load


def _hold() -> str:
    """Why acts are held now ('' = not held): the ledger of the run-log dir of the sweep.yaml the
    DAGs were parsed with (SWEEP_CONFIG) was recovered with loss (sweep_core.ledger.hold)."""
    from sweep_core.config.sweep import load_sweep_config
    from sweep_core.ledger.hold import held
    from sweep_operators.dag_common import config_paths
    from sweep_operators.handoff_record import run_log_dir

    return held(run_log_dir(load_sweep_config(config_paths()[1])))


def ssh_runner(limits: Any, log: logging.Logger) -> RunScript:
    """Run one script per call over SSH within sweep.yaml's gather ``limits`` (cluster_ssh.run_checked);
    a script that acts is refused, not sent, while the ledger holds acts."""

    def run(cfg: ClusterConfig, script: str, marker: str, what: str) -> tuple[GatherOutput | None, str]:
        if is_act(script) and (hold := _hold()):
            log.error("%s %s not sent: %s", what, cfg.name, held_problem(hold))
            return None, held_problem(hold)
        return run_checked(cfg, limits, log, script, marker, what)

    return run


def ssh_reader(limits: Any, log: logging.Logger) -> RunScript:
    """A read-only ``ssh_runner``: a script that acts is refused, never sent (cluster_ssh.read_checked);
    what a plan that only probes is given."""

    def run(cfg: ClusterConfig, script: str, marker: str, what: str) -> tuple[GatherOutput | None, str]:
        return read_checked(cfg, limits, log, script, marker, what)

    return run


def hub_check() -> HubCheck:
    """Check hub repos with the ``hf_hub`` Connection's client, made on the first check (a plan
    that needs no hub evidence never builds it; huggingface_hub loads at run time only)."""
    checker: Any = None

    def check(repo_id: str, repo_type: str, expected: Sequence[str], revision: str = "main") -> HubEvidence:
        nonlocal checker
        if checker is None:
            from sweep_operators.hf_hub import HubChecker

            checker = HubChecker.from_connection()
        return checker.check(repo_id, repo_type=repo_type, expected=list(expected), revision=revision)

    return check


def iris_lister() -> IrisList:
    """List an iris cluster's jobs through its client (IrisHook); None and why when it did not answer."""
    from sweep_operators.iris_hook import IrisHook, IrisUnavailable

    def listed(cfg: ClusterConfig) -> Any:
        try:
            return IrisHook.for_cluster(cfg).poll()[0], ""
        except IrisUnavailable as exc:
            return None, str(exc)

    return listed


def iris_stopper() -> IrisStop:
    """Stop approved iris jobs through the client (IrisHook.stop: re-check, terminate, wait for KILLED)."""
    from sweep_operators.iris_hook import IrisHook, IrisUnavailable

    def stop(cfg: ClusterConfig, jobs: list[dict[str, str]], confirm_timeout_s: int) -> Any:
        if hold := _hold():
            return None, held_problem(hold)
        try:
            return IrisHook.for_cluster(cfg).stop(jobs, confirm_timeout_s), ""
        except IrisUnavailable as exc:
            return None, str(exc)

    return stop


def local_runner(log: logging.Logger) -> RunLocal:
    """Run an iris cluster's ops.md relaunch argv here (no shell), bounded; HOME = its ``iris_home``
    and its ``iris_python``'s folder first on PATH (the iris CLI beside the client)."""
    import os
    import subprocess

    def run(cfg: ClusterConfig, argv: Sequence[str], timeout_s: int) -> tuple[int, str]:
        if hold := _hold():
            return 125, held_problem(hold)
        env = dict(os.environ)
        if cfg.iris_home:
            env["HOME"] = cfg.iris_home
        if cfg.iris_python:
            env["PATH"] = f"{os.path.dirname(cfg.iris_python)}{os.pathsep}{env.get('PATH', '')}"
        try:
            res = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, env=env, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.error("relaunch command %s failed: %s", argv[:1], exc)
            return 127, str(exc)[:500]
        return res.returncode, (res.stdout + res.stderr)[-4000:]

    return run
