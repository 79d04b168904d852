"""Login-node failover for one SLURM script: try each login node in ops.md order.

A read-only script (a gather, a probe) on a node that refuses the connection, times out, or cannot
fork (login01 fork saturation: the script dies before its end record) is retried on the next one;
so is one that ran to its end but lost a read to the fork saturation inside it (squeue, sacct or
scontrol exited with a fork failure, or the shell could not start one: sweep_core.slurm.gather.
fork_lost_reads). When every node lost reads that way, the run with the fewest lost is kept: its
errored commands read UNKNOWN as any errored command does, never as no jobs.
A script that ACTS (remote_scripts.is_act) moves on only when nothing of it was sent (connect or
login failed): once sent, a dropped session, a reader timeout or a script cut short leaves its
outcome UNKNOWN (``FailoverResult.unknown``) and it is never sent again, here or elsewhere: the
use-case records UNKNOWN and reconciles from sacct/squeue next sweep. The transport is a callable
so this policy stays free of SSH and Airflow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sweep_core.config.ops import LoginNode
from sweep_core.slurm.gather import GatherOutput, fork_lost_reads, looks_like_fork_failure, parse_gather_output


class NodeUnreachable(Exception):
    """The transport could not reach or log in to a login node: nothing of the script was sent."""


class SessionLost(NodeUnreachable):
    """The session broke (or the reader timed out) after the script was sent: some of it may have
    run. ``stdout`` holds what was read before."""

    def __init__(self, message: str, stdout: str = "") -> None:
        super().__init__(message)
        self.stdout = stdout


OUTCOME_UNKNOWN = "outcome UNKNOWN"  # how a RunScript problem starts when an act's outcome is unknown


def outcome_unknown(problem: str) -> bool:
    """Whether a RunScript ``problem`` says the act was sent and its outcome is unknown."""
    return problem.startswith(OUTCOME_UNKNOWN)


def not_done(problem: str) -> str:
    """What an act with no record of its own came to: ``UNKNOWN: <why>`` when the script was sent
    (never sent again: the next sweep reads what became of it), else ``not run: <why>``."""
    if outcome_unknown(problem):
        return f"UNKNOWN: {problem}: not sent again; the next sweep's squeue/sacct reconciles it"
    return f"not run: {problem or 'script cut short'}"


# (node) -> (exit code, stdout, stderr) of the gather script; raises NodeUnreachable.
RunOnNode = Callable[[LoginNode], tuple[int, str, str]]


@dataclass
class FailoverResult:
    output: GatherOutput | None
    node: LoginNode | None
    attempts: list[str] = field(default_factory=list)
    unknown: str = ""  # an act sent whose outcome is unknown: why (then never sent again)

    @property
    def reached(self) -> bool:
        return self.output is not None


def gather_with_failover(nodes: Sequence[LoginNode], run: RunOnNode, marker: str, act: bool = False) -> FailoverResult:
    """The first complete run that lost no read to a fork failure; else the complete one that lost
    the fewest; else the last partial one; else nothing, with every attempt noted. ``act``: the next
    node is tried only when nothing was sent to this one (module docstring)."""
    partial: tuple[GatherOutput, LoginNode] | None = None
    forked: tuple[GatherOutput, LoginNode, int] | None = None
    attempts: list[str] = []
    for node in nodes:
        where = f"{node.name} ({node.host}:{node.port})"
        try:
            rc, stdout, stderr = run(node)
        except SessionLost as exc:
            attempts.append(f"{where}: {exc}")
            out = parse_gather_output(exc.stdout, marker)
            if act:
                return FailoverResult(out, node, attempts, unknown=f"sent to {where}, then {exc}")
            if out.records:
                partial = (out, node)
            continue
        except NodeUnreachable as exc:
            attempts.append(f"{where}: {exc}")
            continue
        output = parse_gather_output(stdout, marker)
        if output.complete:
            lost = [] if act else fork_lost_reads(output, stderr)
            if not lost:
                return FailoverResult(output, node, attempts)
            attempts.append(f"{where}: {lost_reads_text(lost)}")
            if forked is None or len(lost) < forked[2]:
                forked = (output, node, len(lost))
            continue
        if act and not _prelude_failed(output, stderr):
            tail = (stderr.strip().splitlines()[-1:] or [""])[0][:200]
            why = f"sent to {where}, then it stopped before its end record (exit {rc}{': ' + tail if tail else ''})"
            attempts.append(f"{where}: {why}")
            return FailoverResult(output, node, attempts, unknown=why)
        if looks_like_fork_failure(stderr):
            why = "cannot fork (fork saturation)"
        else:
            why = f"script stopped early (exit {rc})"
        tail = stderr.strip().splitlines()[-1:] or [""]
        attempts.append(f"{where}: {why}{': ' + tail[0][:200] if tail[0] else ''}")
        if output.records:
            partial = (output, node)
    if forked is not None:
        return FailoverResult(forked[0], forked[1], attempts)
    if partial is not None:
        return FailoverResult(partial[0], partial[1], attempts)
    return FailoverResult(None, None, attempts)


def lost_reads_text(lost: Sequence[tuple[str, str]]) -> str:
    """``squeue, paths could not fork (fork saturation inside the script): <the failure's line>``."""
    names = list(dict.fromkeys(name for name, _ in lost))
    shown = ", ".join(names[:4]) + (f" (+{len(names) - 4} more)" if len(names) > 4 else "")
    return f"{shown} could not fork (fork saturation inside the script): {lost[0][1]}"


def _prelude_failed(output: GatherOutput, stderr: str) -> bool:
    """The script could not fork before its first act: no record but the prelude's ``mktemp``
    failure (or none at all) and a fork failure on stderr. Nothing of an act ran: fail over."""
    return not (set(output.records) - {"mktemp"}) and (looks_like_fork_failure(stderr) or "mktemp" in output.records)
