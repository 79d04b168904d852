"""What one command run on a remote host gave back (exit code and both streams), the shape every
reader of a remote script's records takes: the Slurm parsers, the GPU probe, the accounting."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommandResult:
    """One remote command: its exit code and both streams, decoded."""

    rc: int
    stdout: str
    stderr: str
