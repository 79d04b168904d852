"""Which hand-offs the config turns on for one cluster, and why (``check-config`` prints them).

The same gates the hand-offs apply (``handoffs.ports.active_slurm``, the sweep.yaml sections, the ops.md
keys); what a sweep then finds (flags, a trusted snapshot) decides whether one gets work.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sweep_core.config.ops import ClusterConfig
from sweep_core.config.sweep_schema import SweepConfig
from sweep_core.handoffs.harvest.plan import TrackerSettings

HANDOFFS = (
    "cleanup",
    "upload",
    "consolidate",
    "hf_chain",
    "harvest",
    "cancel",
    "relaunch",
    "deep_dive",
    # the runbook's configurable command steps (config/steps_schema.py, cleanup.flavors.*.db_register)
    "canary",
    "snapshots",
    "db_register",
    "hygiene",
    # the runbook's own docs and trackers the sweep reads or advances (sweep.yaml campaigns, consolidate.tracker)
    "campaigns",
    "datagen_tracker",
)


@dataclass(frozen=True)
class Switch:
    """One hand-off for one cluster: on or off, and why."""

    handoff: str
    on: bool
    why: str  # ON: what it acts on; OFF: "<handoff> needs <field> in <file>" or why it never runs there

    def line(self) -> str:
        """``ON   <why>`` / ``OFF: <why>`` (check-config's column after the hand-off's name)."""
        return f"{'ON  ' if self.on else 'OFF:'} {self.why}"

    @property
    def needs_config(self) -> bool:
        """OFF until a config value is set (``<handoff> needs <field> in <file>``), not off by nature
        (an iris cluster has no tree to reap) or by status (skipped, dropped)."""
        return not self.on and self.why.startswith(f"{self.handoff} needs ")


def off_lines(
    ops: Mapping[str, ClusterConfig | None],
    config: SweepConfig,
    trackers: TrackerSettings | None,
    ops_dir: str | Path,
    sweep_file: str,
) -> dict[str, list[str]]:
    """cluster -> its ``OFF: <handoff> needs <field> in <file>`` lines (the sweep shows them in the
    Clusters table, the run log's head and the first digest): every swept cluster (status active in
    its ops.md), the same switches check-config prints; a cluster whose ops.md did not load is left out."""
    out: dict[str, list[str]] = {}
    for name, cfg in ops.items():
        if cfg is None or cfg.status != "active":
            continue
        got = cluster_switches(cfg, config, trackers, str(Path(ops_dir) / name / "ops.md"), sweep_file)
        if lines := [s.line() for s in got if s.needs_config]:
            out[name] = lines
    return out


def cluster_switches(
    cfg: ClusterConfig,
    config: SweepConfig,
    trackers: TrackerSettings | None,
    ops_file: str = "ops.md",
    sweep_file: str = "sweep.yaml",
) -> list[Switch]:
    """A switch per hand-off (``HANDOFFS`` order) for the cluster ``cfg`` under ``config``; an OFF
    that a config value would turn on says ``<handoff> needs <field> in <file>`` (the files as named)."""
    chain = _chain(cfg, config, sweep_file)
    if cfg.status != "active":
        why = f"status {cfg.status} in ops.md: hand-offs act on active clusters only"
        return [chain if h == "hf_chain" else Switch(h, False, why) for h in HANDOFFS]
    docs = _campaigns(config, trackers, sweep_file)
    if cfg.scheduler == "iris":
        return [*_iris(cfg, chain, ops_file), docs, Switch("datagen_tracker", False, "iris: no datagen arrays here")]
    got = _slurm(cfg, config, trackers, chain, ops_file, sweep_file)
    consolidate = next(s for s in got if s.handoff == "consolidate")
    return [*got, docs, _datagen_tracker(config, trackers, consolidate, sweep_file)]


def _campaigns(config: SweepConfig, trackers: TrackerSettings | None, sweep_file: str) -> Switch:
    """The named campaigns' POLICY.md/STATE.md, read each sweep (campaigns/docs.py) for every cluster's jobs."""
    if not config.campaigns:
        return Switch(
            "campaigns", False, f"campaigns needs campaigns in {sweep_file} (e.g. flawed_summ's POLICY/STATE)"
        )
    names = ", ".join(c.name for c in config.campaigns)
    relative = [
        c.name for c in config.campaigns if not all(Path(p).expanduser().is_absolute() for p in (c.policy, c.state))
    ]
    if relative and trackers is None:
        why = f"campaigns needs trackers.repo in {sweep_file} (or SWEEP_TRACKER_REPO): {', '.join(relative)} name relative docs"
        return Switch("campaigns", False, why)
    return Switch("campaigns", True, f"{names}: POLICY.md/STATE.md read each sweep, drift flagged, never edited")


def _datagen_tracker(
    config: SweepConfig, trackers: TrackerSettings | None, consolidate: Switch, sweep_file: str
) -> Switch:
    """The datagen tracker row a finished consolidate advances (runbook §6: the relevant tracker)."""
    if not config.consolidate.tracker:
        return Switch("datagen_tracker", False, f"datagen_tracker needs consolidate.tracker in {sweep_file}")
    if trackers is None:
        why = (
            f"datagen_tracker needs trackers.repo in {sweep_file} (or SWEEP_TRACKER_REPO): consolidate.tracker is in it"
        )
        return Switch("datagen_tracker", False, why)
    if not consolidate.on:
        return Switch("datagen_tracker", False, consolidate.why)
    return Switch(
        "datagen_tracker", True, f"{config.consolidate.tracker} rows go ✅ once a consolidated dataset is on the hub"
    )


def _chain(cfg: ClusterConfig, config: SweepConfig, sweep_file: str) -> Switch:
    """hf_chain advances a series only on an active SLURM cluster (advance_chain contacts no other)."""
    named = [(i, s) for i, s in enumerate(config.hf_chain.series) if s.cluster == cfg.name and not s.db_registration]
    series = [s.name for _, s in named if not s.unset()]
    if not named and cfg.scheduler != "slurm":
        return Switch("hf_chain", False, f"{cfg.scheduler}: the chain's legs are sbatch jobs (a SLURM cluster's)")
    if (cfg.scheduler, cfg.status) == ("slurm", "active") and config.hf_chain.found.upload:
        found = "any enable_db_registration: false completion no series names: uploaded (hf_chain.found)"
        return Switch("hf_chain", True, f"series {', '.join(series)}; {found}" if series else found)
    found_needs = "hf_chain.found.upload (any enable_db_registration: false series)"
    if not named:
        why = f"hf_chain needs hf_chain.series (cluster: {cfg.name}) or {found_needs} in {sweep_file}"
        return Switch("hf_chain", False, why)
    if not series:  # every series of the cluster left incomplete on purpose
        needs = "; ".join(f"hf_chain.series[{i}].{'/'.join(s.unset())} ({s.name})" for i, s in named)
        return Switch("hf_chain", False, f"hf_chain needs {needs}; {found_needs} in {sweep_file}")
    if (cfg.scheduler, cfg.status) != ("slurm", "active"):
        return Switch("hf_chain", False, f"series {', '.join(series)} name it, but it is {_kind(cfg)}")
    return Switch("hf_chain", True, f"series {', '.join(series)}")


def _iris_deep_dive(cfg: ClusterConfig, ops_file: str) -> Switch:
    """The iris probe reads the job's whole log since submission through the client; pods' GPUs
    through an exec when ops.md allows one (else "unknown", said)."""
    unset = " and ".join(k for k in ("controller_url", "iris_python") if not getattr(cfg, k))
    if unset:
        return Switch("deep_dive", False, f"deep_dive needs {unset} in {ops_file} (the iris client reads the log)")
    gpus = (
        "GPUs by nvidia-smi exec'd in the pods"
        if cfg.gpu_exec and cfg.kubeconfig
        else f"GPU utilisation unknown (needs gpu_exec and kubeconfig in {ops_file})"
    )
    why = f"flagged RL jobs probed through the iris client (whole log since submission; {gpus})"
    return Switch("deep_dive", True, why)


def _kind(cfg: ClusterConfig) -> str:
    return f"{cfg.scheduler}/{cfg.status}"


def _iris(cfg: ClusterConfig, chain: Switch, ops_file: str) -> list[Switch]:
    client = cfg.iris_python and cfg.controller_url
    unset = " and ".join(k for k in ("controller_url", "iris_python") if not getattr(cfg, k))
    cancel = (
        Switch("cancel", True, "iris job stop through the client, after a human's approval")
        if client
        else Switch("cancel", False, f"cancel needs {unset} in {ops_file} (the iris client stops jobs)")
    )
    if not cfg.relaunch_commands:
        relaunch = Switch("relaunch", False, f"relaunch needs relaunch_commands in {ops_file} (iris has no requeue)")
    elif not cancel.on:
        relaunch = Switch("relaunch", False, f"relaunch_commands given, but {cancel.why}")
    else:
        relaunch = Switch("relaunch", True, f"{len(cfg.relaunch_commands)} relaunch_commands, run after the stop")
    return [
        Switch("cleanup", False, "iris: no POSIX tree to reap (artifacts go to the hub)"),
        Switch("upload", False, "iris: no sbatch upload job"),
        Switch("consolidate", False, "iris: no chunk trees to consolidate"),
        chain,
        Switch("harvest", False, "iris: its tracker rows stay unknown (results are read over SSH)"),
        cancel,
        relaunch,
        _iris_deep_dive(cfg, ops_file),
        Switch("canary", False, "iris: the canary check runs in a Slurm cluster's gather"),
        Switch("snapshots", False, "iris: the snapshot list runs in a Slurm cluster's gather"),
        Switch("db_register", False, "iris: no upload job here to register after"),
        Switch("hygiene", False, "iris: no cluster clone read (git status runs in a Slurm gather)"),
    ]


def _slurm(
    cfg: ClusterConfig,
    config: SweepConfig,
    trackers: TrackerSettings | None,
    chain: Switch,
    ops_file: str,
    sweep_file: str,
) -> list[Switch]:
    roots = ", ".join(cfg.artifact_roots)
    org_named = any("{org}" in h.repo for f in config.cleanup.flavors.values() for h in f.hub)
    if not roots:
        cleanup = Switch("cleanup", False, f"cleanup needs artifact_roots in {ops_file}")
    elif org_named and not config.cleanup.hub_org:
        cleanup = Switch("cleanup", False, f"cleanup needs cleanup.hub_org in {sweep_file}")
    else:
        cleanup = Switch("cleanup", True, f"completed jobs' subtrees under {roots}, once the hub holds them")
    uploads = sorted(
        {name for name, f in config.cleanup.flavors.items() if f.upload} | {c.flavor for c in cfg.upload_commands}
    )
    if not uploads:
        upload = Switch(
            "upload",
            False,
            f"upload needs cleanup.flavors.<flavor>.upload in {sweep_file} or upload_commands in {ops_file}",
        )
    else:
        upload = Switch("upload", cleanup.on, f"flavors {', '.join(uploads)}" if cleanup.on else cleanup.why)
    flavors = sorted(config.consolidate.flavors)
    if not flavors:
        consolidate = Switch("consolidate", False, f"consolidate needs consolidate.flavors in {sweep_file}")
    else:
        consolidate = Switch("consolidate", cleanup.on, f"flavors {', '.join(flavors)}" if cleanup.on else cleanup.why)
    if trackers is None or not cfg.eval_results_dir:
        # without a results dir a COMPLETED eval's row stays ⏳ (flagged, the field named), a failed one still ❌
        needs = [f"trackers.repo in {sweep_file} (or SWEEP_TRACKER_REPO)"] if trackers is None else []
        needs += [] if cfg.eval_results_dir else [f"eval_results_dir in {ops_file}"]
        harvest = Switch("harvest", False, f"harvest needs {' and '.join(needs)}")
    else:
        harvest = Switch("harvest", True, f"tracker rows under {trackers.repo}; results from {cfg.eval_results_dir}")
    return [
        cleanup,
        upload,
        consolidate,
        chain,
        harvest,
        Switch("cancel", True, "scancel after a human's approval" + _standing(config, cfg.name, "cancel")),
        Switch("relaunch", True, _requeue(cfg) + _standing(config, cfg.name, "relaunch")),
        Switch(
            "deep_dive",
            True,
            f"flagged RL jobs probed over SSH (gpu_probe: {cfg.gpu_probe}; {_ray(cfg, ops_file)}; "
            f"{_stacks(cfg, ops_file)})",
        ),
        _canary(cfg, ops_file),
        _snapshots(cfg, config, sweep_file),
        _register(config, cleanup, sweep_file),
        _hygiene(cfg, ops_file),
    ]


def _canary(cfg: ClusterConfig, ops_file: str) -> Switch:
    c = cfg.eval_canary
    if c is None:
        return Switch(
            "canary", False, f"{cfg.scheduler}: no eval listener canaried here (no eval_canary in {ops_file})"
        )
    if c.unset():
        return Switch("canary", False, f"canary needs eval_canary.{'/'.join(c.unset())} in {ops_file}")
    return Switch("canary", True, f"run {c.run}: traces on the hub + registered, checked every sweep ({c.argv[0]})")


def _snapshots(cfg: ClusterConfig, config: SweepConfig, sweep_file: str) -> Switch:
    d = config.daytona
    if d is None:
        why = f"{cfg.scheduler}: the snapshot cap is not watched (no daytona section in {sweep_file})"
        return Switch("snapshots", False, why)
    if d.cluster and d.cluster != cfg.name:
        return Switch("snapshots", False, f"{cfg.scheduler}: read on {d.cluster} (daytona.cluster in {sweep_file})")
    if d.unset():
        return Switch("snapshots", False, f"snapshots needs daytona.{'/'.join(d.unset())} in {sweep_file}")
    clean = (
        "STALE ones deleted after a human's approval"
        if d.delete_command
        else f"STALE ones listed only (no daytona.delete_command in {sweep_file})"
    )
    return Switch("snapshots", True, f"count vs the HARD cap {d.cap} (never raised); at the cap {clean}")


def _register(config: SweepConfig, cleanup: Switch, sweep_file: str) -> Switch:
    flavors = sorted(name for name, f in config.cleanup.flavors.items() if f.db_register)
    if not flavors:
        needs = f"db_register needs cleanup.flavors.sft-job-cleanup.db_register in {sweep_file}"
        return Switch("db_register", False, needs)
    if not cleanup.on:
        return Switch("db_register", False, cleanup.why)
    hf_only = sorted(s.name for s in config.hf_chain.series if not s.db_registration)
    never = f"; never for the HF-only series {', '.join(hf_only)}" if hf_only else "; never for an HF-only series"
    return Switch("db_register", True, f"flavors {', '.join(flavors)}, once per upload the hub holds{never}")


def _hygiene(cfg: ClusterConfig, ops_file: str) -> Switch:
    unset = " and ".join(k for k in ("repo_path", "local_clone") if not getattr(cfg, k))
    if unset:
        return Switch("hygiene", False, f"hygiene needs {unset} in {ops_file} (the tree is reported only)")
    return Switch(
        "hygiene", True, f"{cfg.repo_path} triaged into {cfg.local_clone} (local commit; ff pull after approval)"
    )


def _ray(cfg: ClusterConfig, ops_file: str) -> str:
    if cfg.ray_log_dir:
        return f"Ray worker logs: {cfg.ray_log_dir}"
    return (
        f"Ray worker logs OFF: needs ray_log_dir in {ops_file} (Ray's default /tmp/ray is on each node, "
        "unreadable from the login node)"
    )


def _stacks(cfg: ClusterConfig, ops_file: str) -> str:
    if cfg.faulthandler_signal:
        return f"Python stacks of a silent job: SIG{cfg.faulthandler_signal} to its python processes that catch it"
    return (
        f"Python stacks OFF: needs faulthandler_signal in {ops_file}, set only when the launcher registers "
        "faulthandler on it (unregistered, SIGUSR1 terminates the process)"
    )


def _requeue(cfg: ClusterConfig) -> str:
    if cfg.relaunch_commands:
        return f"scancel + {len(cfg.relaunch_commands)} relaunch_commands, else scontrol requeue, after approval"
    return "scontrol requeue after a human's approval"


def _standing(config: SweepConfig, cluster: str, action: str) -> str:
    rules = [p.rule for p in config.cancel.standing if p.action == action and cluster in p.clusters]
    return f"; standing permission without a human: {', '.join(rules)}" if rules else ""
