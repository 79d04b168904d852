"""SFT completions whose cleanup cannot be decided yet: HF-only (the HF chain's) or DB-registered
(sft-job-cleanup) is told by the launch YAML the job names (``enable_db_registration``), and that
YAML could not be read (gone, unreadable, no key, no log). The completion_cleanup rule holds such a
job back (``Action.CLEANUP_UNDECIDED``); it joins the cleanup backlog with that reason and its age,
marked ``undecided``, and is never planned by sweep_cleanup while so marked. Every sweep reads its
launch YAML again (ONE session per cluster, sweep_core/programs/launch_yaml.sh) and, once it can be
told, the entry either becomes a plain sft-job-cleanup entry (judged further by the backlog's other
guards and handed off once they hold) or, HF-only, leaves the backlog (the HF chain's, never
sft-job-cleanup's)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sweep_core.handoffs.batch_job.remote import log_path
from sweep_core.handoffs.chain.hf_only import HfOnly, from_facts
from sweep_core.handoffs.chain.remote import build_launch_script
from sweep_core.handoffs.cleanup.backlog import UNDECIDED, job_key
from sweep_core.handoffs.ports import LoadCluster, RunScript, active_slurm
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag
from sweep_core.records.vocab import Action, Flavor
from sweep_core.slurm.gather import new_marker
from sweep_core.slurm.launch_facts import launch_facts

LOG = "log"  # the job's StdOut as the gather read it ('' = unknown: ops.md log_pattern then)
CANNOT_TELL = "HF-only or not cannot be told"  # the words of every such reason (alerts.backlog_line)

# (cluster, [(job id, name, its StdOut or '')]) -> job id -> the HF-only verdict read now
ReadLaunch = Callable[[str, Sequence[tuple[str, str, str]]], dict[str, HfOnly]]


def undecided_entries(flags: Iterable[Flag], snaps: Sequence[ClusterSnapshot]) -> list[dict[str, str]]:
    """The backlog entries of this sweep's held-back SFT completions (clusters read OK/PARTIAL only)."""
    trusted = {s.cluster for s in snaps if s.status in (ClusterStatus.OK, ClusterStatus.PARTIAL)}
    logs = {(s.cluster, j.job_id): j.stdout_path for s in snaps for j in s.finished or []}
    out, seen = [], set()
    for f in flags:
        key = (f.cluster, f.job_id)
        if f.action != Action.CLEANUP_UNDECIDED or f.cluster not in trusted or not f.job_id or key in seen:
            continue
        seen.add(key)
        out.append(
            {
                "cluster": f.cluster,
                "job_id": f.job_id,
                "name": f.job_name,
                "flavor": str(Flavor.SFT),
                UNDECIDED: f.message,
                LOG: logs.get(key, ""),
            }
        )
    return out


def keep_undecided(backlog: list[dict[str, str]], entries: list[dict[str, str]], now: str) -> list[dict[str, str]]:
    """The backlog with each held-back completion it does not hold yet: ``since`` = ``judged`` =
    ``now`` and its reason (its age counts from here; it is judged by every later sweep)."""
    known = {job_key(b) for b in backlog}
    added = [{**e, "since": now, "judged": now, "reason": e[UNDECIDED]} for e in entries if job_key(e) not in known]
    return backlog + added


def to_read(backlog: Iterable[Mapping[str, Any]], skip: set[tuple[str, str]]) -> dict[str, list[tuple[str, str, str]]]:
    """cluster -> [(job id, name, StdOut)] of the undecided entries to read again (not those in ``skip``)."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for b in backlog:
        if b.get(UNDECIDED) and job_key(b) not in skip:
            job = (str(b["job_id"]), str(b.get("name") or ""), str(b.get(LOG) or ""))
            out.setdefault(str(b["cluster"]), []).append(job)
    return out


def launch_reader(load_cluster: LoadCluster, run_script: RunScript) -> ReadLaunch:
    """Read the launch YAMLs of one cluster's jobs in ONE read-only session, judged as the gather
    judges them (slurm.launch_facts, chain.hf_only.from_facts); a job without a known StdOut gets
    ops.md ``log_pattern``'s path. A cluster that is not an active SLURM cluster, or did not answer,
    leaves every job unknown with why."""

    def read(cluster: str, jobs: Sequence[tuple[str, str, str]]) -> dict[str, HfOnly]:
        cfg, why = active_slurm(load_cluster, cluster)
        if cfg is None:
            return {jid: HfOnly(None, f"unknown: {why}") for jid, _, _ in jobs}
        pairs = []
        for jid, name, log in jobs:
            path = log if log.startswith("/") and "\n" not in log else log_path(cfg.log_pattern, jid, name, cfg.user)
            pairs.append((jid, path if path.startswith("/") and "\n" not in path and "\0" not in path else ""))
        marker = new_marker()
        out, problem = run_script(cfg, build_launch_script(pairs, marker), marker, "cleanup backlog: launch YAML")
        got = {}
        for k, (jid, log) in enumerate(pairs):
            facts = launch_facts(out.get(f"banner:{k}"), out.get(f"path:{k}"), out.get(f"yaml:{k}")) if out else {}
            verdict = from_facts(facts) if out is not None and not problem else None
            why = problem or (
                f"its log {log} is not a readable file" if log else "no StdOut known, no ops.md log_pattern"
            )
            got[jid] = verdict or HfOnly(None, f"unknown: {why}")
        return got

    return read
