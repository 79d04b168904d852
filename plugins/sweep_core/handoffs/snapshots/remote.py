"""The Daytona snapshot cleanup's cluster side: the list command (read-only, ONE session, the
sweep's own ``health.snapshot_cap.list_line``), the delete script (ONE act session, one
``run del:<k> <argv…>`` per approved snapshot, every element shell-quoted) and its reader.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from sweep_core.config.steps_schema import DaytonaSection
from sweep_core.handoffs.snapshots.plan import DELETED, FAILED, NOT_SENT, UNKNOWN
from sweep_core.health.snapshot_cap import list_line
from sweep_core.slurm.failover import not_done, outcome_unknown
from sweep_core.slurm.gather import GatherOutput
from sweep_core.slurm.remote_scripts import compose


def build_list_script(daytona: DaytonaSection, cluster: str, marker: str) -> str:
    """ONE read session: the snapshot list command as the sweep's gather runs it."""
    return compose(marker, {}, (), trailer=list_line(daytona, cluster))


def build_delete_script(argvs: Sequence[Sequence[str]], marker: str) -> str:
    """ONE act script: ``run del:<k> <argv…>`` per approved snapshot, every element shell-quoted."""
    lines = "".join(f"run del:{k} " + " ".join(shlex.quote(a) for a in argv) + "\n" for k, argv in enumerate(argvs))
    return compose(marker, {}, (), trailer=lines, act=True)


def read_delete(out: GatherOutput | None, names: Sequence[str], problem: str) -> dict[str, tuple[str, str]]:
    """name -> (deleted | failed | UNKNOWN | not sent, why): an UNKNOWN one is never sent again
    blind (the next sweep's list says whether it is gone)."""
    got = {}
    for k, name in enumerate(names):
        rec = out.get(f"del:{k}") if out else None
        if rec is not None and rec.rc == 0:
            got[name] = (DELETED, "")
        elif rec is not None:
            got[name] = (FAILED, f"exit {rec.rc}: {(rec.stderr.strip() or rec.stdout.strip() or 'no output')[-200:]}")
        elif out is None and not outcome_unknown(problem):
            got[name] = (NOT_SENT, not_done(problem))
        else:
            got[name] = (UNKNOWN, not_done(problem or "no record"))
    return got
