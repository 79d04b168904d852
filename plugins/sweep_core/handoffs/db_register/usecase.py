"""sweep_cleanup's DB registration step as a use-case: for every planned job of a flavor with a
``db_register`` argv whose hub check says the hub holds it, judge HF-only (listed in sweep.yaml,
else the launch YAML the job names: ONE read session per cluster, chain.remote), claim the
attempt in the ledger (``db_register#<n>``, whatever runs overlap), then run every claimed command
of a cluster in ONE act session (each bounded by ``register_timeout_s``, every value shlex-quoted,
the job name checked plain). Outcomes: exit 0 ``done``; non-zero ``failed`` (retried at most
``register_retries`` times); no answer, or a timeout, ``UNKNOWN`` (never run again blind); a
script no login node took frees its claim. Nothing runs on a dry run. Its I/O comes in as arguments.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from sweep_core.config.handoffs_schema import ChainSeriesSpec
from sweep_core.handoffs.batch_job import usecase as batch
from sweep_core.handoffs.batch_job.remote import log_path
from sweep_core.handoffs.chain.hf_only import HfOnly, judge
from sweep_core.handoffs.chain.remote import build_launch_script, read_launch
from sweep_core.handoffs.cleanup.plan import CleanupConfig, CleanupDecision
from sweep_core.handoffs.db_register.plan import (
    REGISTER,
    UNKNOWN,
    RegMove,
    listed_hf_only,
    needs_verdict,
    next_register,
    register_argv,
    story_of,
)
from sweep_core.handoffs.db_register.remote import build_register_script, read_register, register_line
from sweep_core.handoffs.kernel.act import Act, ActKind
from sweep_core.handoffs.kernel.attempt import Attempt, Record, to_row
from sweep_core.handoffs.ports import LoadCluster, RunScript, Say, active_slurm
from sweep_core.handoffs.upload.usecase import JobsReport, hub_status, job_values
from sweep_core.ledger.acts import acts_of
from sweep_core.ledger.store import read_jobs
from sweep_core.safe.names import plain_name
from sweep_core.slurm.gather import new_marker


@dataclass(frozen=True)
class RegisterSettings:
    """sweep.yaml's keys: each flavor's ``db_register`` argv, its retries and time bound; the series."""

    flavors: dict[str, tuple[str, ...]]
    retries: int
    timeout_s: int
    series: tuple[ChainSeriesSpec, ...] = ()


def register_settings(config: Any) -> RegisterSettings:
    """From a loaded SweepConfig (``cleanup`` and ``hf_chain``)."""
    flavors = {n: tuple(f.db_register) for n, f in config.cleanup.flavors.items() if f.db_register}
    return RegisterSettings(
        flavors, config.cleanup.register_retries, config.cleanup.register_timeout_s, config.hf_chain.series
    )


@dataclass
class _Job:
    d: CleanupDecision
    story: Record
    hub: str
    hf_only: HfOnly | None = None
    move: RegMove = RegMove("none", "")
    argv: tuple[str, ...] = ()
    outcome: str = ""

    @property
    def key(self) -> dict[str, str]:
        return self.d.target.entry


@dataclass
class RegisterReport(JobsReport):
    """A row per job of a registering flavor, and the acts this run recorded."""

    COLUMNS: ClassVar[tuple[str, ...]] = ("Cluster", "Job", "Name", "Hub", "Outcome")
    WIDTHS: ClassVar[tuple[int | None, ...]] = (None, None, 40, None, 100)


def _judge_hf_only(jobs: list[_Job], cfg: Any, rs: RegisterSettings, run_script: RunScript) -> None:
    """Each job's HF-only verdict: listed in sweep.yaml, else its launch YAML (ONE read session)."""
    unread = []
    for j in jobs:
        t = j.d.target
        listed = listed_hf_only(rs.series, t.cluster, t.name)
        if listed:
            j.hf_only = judge(listed, "", None, "")
        else:
            unread.append(j)
    if not unread:
        return
    pairs = [
        (j.d.target.job_id, log_path(cfg.log_pattern, j.d.target.job_id, j.d.target.name, cfg.user)) for j in unread
    ]
    marker = new_marker()
    out, problem = run_script(cfg, build_launch_script(pairs, marker), marker, "db register: launch YAML")
    verdicts = read_launch(out, pairs, problem, {})
    for j in unread:
        j.hf_only = verdicts[j.d.target.job_id]


def run_registrations(
    decisions: Sequence[CleanupDecision],
    *,
    rs: RegisterSettings,
    ccfg: CleanupConfig,
    ledger_dir: str | Path,
    run_id: str,
    now: str,
    dry_run: bool,
    load_cluster: LoadCluster,
    run_script: RunScript,
    say: Say,
) -> RegisterReport:
    """Judge, claim and run the DB registration of every planned job that needs one (module docstring)."""
    ledger = read_jobs(ledger_dir, {f"{d.target.cluster}|{d.target.job_id}" for d in decisions})  # their rows alone
    report = RegisterReport()
    by_cluster: dict[str, list[_Job]] = defaultdict(list)
    for d in decisions:
        t = d.target
        if t.flavor in rs.flavors:
            story = story_of(acts_of(ledger, t.cluster, t.job_id, REGISTER))
            by_cluster[t.cluster].append(_Job(d, story, hub_status(d)))
    for cluster, jobs in sorted(by_cluster.items()):
        cfg, why = active_slurm(load_cluster, cluster, "no DB registration")
        if cfg is None:
            report.rows += [_row(j, why) for j in jobs]
            continue
        _judge_hf_only([j for j in jobs if needs_verdict(j.story, j.hub)], cfg, rs, run_script)
        todo = []
        for j in jobs:
            j.move = next_register(j.story, j.hub, j.hf_only, rs.retries)
            j.outcome = j.move.why
            if j.move.move != "register":
                continue
            t = j.d.target
            if not plain_name(t.name):
                j.outcome = f"job name {t.name[:80]!r} is not a plain name: refused in any command"
                continue
            j.argv = register_argv(rs.flavors[t.flavor], job_values(t, cfg, ccfg))
            line = register_line(j.argv)
            if dry_run:
                j.outcome = f"{j.move.why} (dry run: would run {line})"
                say(f"DRY RUN: would register on {cluster} for {t.job_id} {t.name}: {line}")
            else:
                todo.append(j)
        if todo:
            report.acts += _run(cfg, todo, rs, ledger_dir, run_id, now, run_script)
        report.rows += [_row(j) for j in jobs]
    return report


def _run(
    cfg: Any,
    todo: list[_Job],
    rs: RegisterSettings,
    ledger_dir: str | Path,
    run_id: str,
    now: str,
    run_script: RunScript,
) -> list[tuple[str, str, str, dict[str, str]]]:
    """Claim each attempt with its in-flight act (an UNKNOWN outcome in the same transaction: a task
    that dies mid-act leaves it, and its retry under the same run id waits on it instead of running
    the command again), run the claimed ones in ONE act session, record what became of each."""
    flight = [_in_flight(j, run_id, now) for j in todo]
    claims = batch.claim(ledger_dir, REGISTER, [(j.key, j.move.attempt) for j in todo], run_id, flight)
    mine = []
    for j, act, by in zip(todo, flight, claims, strict=True):
        if by:
            j.outcome = f"attempt {j.move.attempt} already made by {by}"
        else:
            mine.append((j, act))
    if not mine:
        return []
    acts, unsent = _send(cfg, [j for j, _ in mine], rs, run_id, now, run_script)
    release = [(j.key, j.move.attempt) for j in unsent]
    batch.settle(ledger_dir, [(j.key, act) for j, act in mine], acts, REGISTER, release)
    return acts


def _in_flight(j: _Job, run_id: str, now: str) -> dict[str, str]:
    """The act a claimed registration holds until its answer is recorded."""
    why = f"claimed by {run_id}, its answer never recorded (the task ended mid-act: its worker lost?)"
    return _act(j, UNKNOWN, why, run_id, now)


def _act(j: _Job, outcome: str, why: str, run_id: str, now: str) -> dict[str, str]:
    """The ledger act of one registration attempt with its outcome (its stored form: kernel to_row)."""
    command = register_line(j.argv)
    return to_row(
        Attempt(
            REGISTER,
            j.move.attempt,
            run_id,
            now,
            why=why[:300],
            said=outcome,
            extra={"command": command},
            act=Act(ActKind.COMMAND, j.d.target.cluster, j.d.target.job_id),
        )
    )


def _send(
    cfg: Any, mine: list[_Job], rs: RegisterSettings, run_id: str, now: str, run_script: RunScript
) -> tuple[list[tuple[str, str, str, dict[str, str]]], list[_Job]]:
    """ONE act session runs every claimed command: the act each answer makes, the jobs not sent."""
    marker = new_marker()
    script = build_register_script([j.argv for j in mine], rs.timeout_s, marker)
    out, problem = run_script(cfg, script, marker, "db register")
    acts, unsent = [], []
    for j, (outcome, why) in zip(mine, read_register(out, len(mine), problem, rs.timeout_s), strict=True):
        t = j.d.target
        j.outcome = f"{j.move.why}: {outcome}" + (f" ({why})" if why else "")
        if outcome == "not sent":
            unsent.append(j)
            continue
        acts.append((t.cluster, t.job_id, t.name, _act(j, outcome, why, run_id, now)))
    return acts, unsent


def _row(j: _Job, why: str = "") -> list[str]:
    t = j.d.target
    return [t.cluster, t.job_id, t.name, j.hub, why or j.outcome]
