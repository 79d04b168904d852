"""Login-node failover for one SLURM gather: try each login node in ops.md order.

A node that refuses the connection, times out, or cannot fork (login01 fork saturation: the
script dies before its end record) is retried on the next one. The transport is a callable so
this policy stays free of SSH and Airflow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sweep_core.config.ops import LoginNode
from sweep_core.slurm.gather import GatherOutput, looks_like_fork_failure, parse_gather_output


class NodeUnreachable(Exception):
    """The transport could not reach or log in to a login node."""


# (node) -> (exit code, stdout, stderr) of the gather script; raises NodeUnreachable.
RunOnNode = Callable[[LoginNode], tuple[int, str, str]]


@dataclass
class FailoverResult:
    output: GatherOutput | None
    node: LoginNode | None
    attempts: list[str] = field(default_factory=list)

    @property
    def reached(self) -> bool:
        return self.output is not None


def gather_with_failover(nodes: Sequence[LoginNode], run: RunOnNode, marker: str) -> FailoverResult:
    """The first complete gather; else the last partial one; else nothing, with every attempt noted."""
    partial: tuple[GatherOutput, LoginNode] | None = None
    attempts: list[str] = []
    for node in nodes:
        where = f"{node.name} ({node.host}:{node.port})"
        try:
            rc, stdout, stderr = run(node)
        except NodeUnreachable as exc:
            attempts.append(f"{where}: {exc}")
            continue
        output = parse_gather_output(stdout, marker)
        if output.complete:
            return FailoverResult(output, node, attempts)
        if looks_like_fork_failure(stderr):
            why = "cannot fork (fork saturation)"
        else:
            why = f"script stopped early (exit {rc})"
        tail = stderr.strip().splitlines()[-1:] or [""]
        attempts.append(f"{where}: {why}{': ' + tail[0][:200] if tail[0] else ''}")
        if output.records:
            partial = (output, node)
    if partial is not None:
        return FailoverResult(partial[0], partial[1], attempts)
    return FailoverResult(None, None, attempts)
