"""CoreWeave (iris) relaunch, the pure part: iris has no requeue, so a RUNNING iris job is relaunched
only through an ops.md ``relaunch_commands`` entry matching its name, after ``iris job stop``
(the stop step re-checks it right before and waits for KILLED). The command is an argv run with no
shell where the iris client is (templates {job_id} {name} {controller}); its output's last iris
job id (``/user/name``) is the new id the ledger links to the old one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from sweep_core.config.ops import ClusterConfig
from sweep_core.handoffs.cancel.iris import IrisStop, approved_stops, stop_line, stop_outcome
from sweep_core.handoffs.cancel.outcome import Act, ActOutcome, Did
from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.handoffs.ports import Say
from sweep_core.handoffs.relaunch.plan import NO_COMMAND
from sweep_core.handoffs.relaunch.remote import command_argv

IRIS_ID_RE = re.compile(r"^(/[\w.-]+(?:/[\w.-]+)+)\s*$", re.M)
# (ops.md, argv, timeout s) -> (exit code, output): the ops.md command run with no shell where the
# iris client is (its HOME and python beside it)
RunLocal = Callable[[ClusterConfig, Sequence[str], int], tuple[int, str]]


def iris_command(cfg: ClusterConfig, job_id: str, name: str, overrides: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The ops.md relaunch argv for this iris job, templates filled (() = none matches); ValueError
    for a job name or an override that is not plain (relaunch.remote.command_argv)."""
    cmd = next((c for c in cfg.relaunch_commands if c.match.search(name)), None)
    if cmd is None:
        return ()
    fill = {"job_id": job_id, "name": name, "controller": cfg.controller_url, "exclude": ""}
    return command_argv(cmd.argv, fill, overrides)


def relaunch_iris(
    cfg: ClusterConfig,
    decisions: list[CancelDecision],
    *,
    confirm_timeout_s: int,
    command_timeout_s: int,
    dry_run: bool,
    stop_iris: IrisStop | None,
    run_local: RunLocal | None,
    say: Say,
) -> dict[str, ActOutcome]:
    """Job id -> outcome: ONE stop call for all (re-check, terminate, wait for KILLED), then per job
    that is KILLED its ops.md command; a job not stopped is never relaunched."""
    cmds: dict[str, tuple[str, ...]] = {}
    out: dict[str, ActOutcome] = {}
    todo = []
    for d in decisions:
        try:
            given = tuple(d.offer.get("with") or ())
            cmds[d.request.job_id] = iris_command(cfg, d.request.job_id, d.request.name, given)
        except ValueError as exc:
            out[d.request.job_id] = _not_relaunched(str(exc))
            continue
        if not cmds[d.request.job_id]:
            out[d.request.job_id] = _not_relaunched(NO_COMMAND)
        else:
            todo.append(d)
    if dry_run:
        for d in todo:
            line = " ".join(cmds[d.request.job_id])
            say(f"DRY RUN: would run for {cfg.name}: {stop_line(d.request.job_id, d.state)}; then {line}")
        dry = ActOutcome(Did.DRY_RUN, "would stop and relaunch (dry run)", Act.RELAUNCH)
        return {**out, **{d.request.job_id: dry for d in todo}}
    if not todo:
        return out
    if stop_iris is None or run_local is None:
        return {
            **out,
            **{
                d.request.job_id: ActOutcome(Did.NOT_RUN, "not run: no iris client wired in", Act.RELAUNCH)
                for d in todo
            },
        }
    recs, problem = stop_iris(cfg, approved_stops(todo), confirm_timeout_s)
    for d in todo:
        jid = d.request.job_id
        stopped = stop_outcome((recs or {}).get(jid), problem)
        if stopped.did == Did.LEFT_ALONE:  # it moved since it was judged: neither stopped nor relaunched
            out[jid] = ActOutcome(Did.LEFT_ALONE, stopped.text, Act.RELAUNCH)
            continue
        if stopped.did != Did.STOPPED:
            out[jid] = _not_relaunched(stopped.text)
            continue
        rc, text = run_local(cfg, cmds[jid], command_timeout_s)
        out[jid] = relaunch_outcome(jid, rc, text)
    return out


def _not_relaunched(why: str) -> ActOutcome:
    return ActOutcome(Did.NOT_RELAUNCHED, f"not relaunched: {why}", Act.RELAUNCH)


def relaunch_outcome(job_id: str, rc: int, text: str) -> ActOutcome:
    """What the ops.md command did after the stop (``new_job_id``: the ledger links it). A command
    that failed after the stop is recorded as the stop (a cancel), not as a relaunch attempt."""
    if rc != 0:
        said = f"stopped (iris KILLED); relaunch command FAILED (exit {rc}): {text.strip()[-200:]}"
        return ActOutcome(Did.STOPPED, said, Act.RELAUNCH)
    ids = IRIS_ID_RE.findall(text)
    if not ids:
        said = "cancelled and relaunched by the ops.md command (no new job id in its output) after iris job stop"
        return ActOutcome(Did.RELAUNCHED, f"{said}: {text.strip()[-120:]}", Act.RELAUNCH)
    same = " (the same id)" if ids[-1] == job_id else ""
    said = f"cancelled and relaunched by the ops.md command as job {ids[-1]}{same} after iris job stop (KILLED)"
    return ActOutcome(Did.RELAUNCHED, said, Act.RELAUNCH, ids[-1])
