"""The DB registration's cluster side: ONE act script per cluster, one
``run reg:<k> timeout -k 5 <timeout_s> <argv…>`` per claimed command (every element shell-quoted,
no shell parses the argv), and its reader: each command's typed outcome. Reading a launch YAML for
the HF-only verdict is the chain's (chain.remote)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from sweep_core.handoffs.db_register.plan import DONE, FAILED, UNKNOWN
from sweep_core.slurm.failover import not_done, outcome_unknown
from sweep_core.slurm.gather import GatherOutput
from sweep_core.slurm.remote_scripts import compose

TIMED_OUT = (124, 137)  # timeout(1): the command was stopped mid-way, its effect unknown


def register_line(argv: Sequence[str]) -> str:
    """One registration command as the login node's shell reads it: every element shell-quoted."""
    return " ".join(shlex.quote(a) for a in argv)


def build_register_script(argvs: Sequence[Sequence[str]], timeout_s: int, marker: str) -> str:
    """ONE act script: ``run reg:<k> timeout -k 5 <timeout_s> <argv…>`` per command, every element
    shell-quoted (no shell parses the argv)."""
    lines = "".join(
        f"run reg:{k} timeout -k 5 {int(timeout_s)} " + register_line(argv) + "\n" for k, argv in enumerate(argvs)
    )
    return compose(marker, {}, (), trailer=lines, act=True)


def read_register(out: GatherOutput | None, n: int, problem: str, timeout_s: int) -> list[tuple[str, str]]:
    """(outcome, why) per command: ``done``, ``failed`` with its words, ``UNKNOWN`` (sent, answer
    lost or stopped by the timeout), or ``not sent`` (no login node took the script)."""
    got = []
    for k in range(n):
        rec = out.get(f"reg:{k}") if out else None
        if rec is not None and rec.rc == 0:
            got.append((DONE, rec.stdout.strip()[-200:]))
        elif rec is not None and rec.rc in TIMED_OUT:
            got.append((UNKNOWN, f"stopped after {timeout_s} s (timeout): its effect on the DB is unknown"))
        elif rec is not None:
            said = (rec.stderr.strip() or rec.stdout.strip() or "no output")[-300:]
            got.append((FAILED, f"exit {rec.rc}: {said}"))
        elif out is None and not outcome_unknown(problem):
            got.append(("not sent", not_done(problem)))
        else:
            got.append((UNKNOWN, not_done(problem or "no record")))
    return got
