"""What the ledger keeps of a job's log read: the numeric metric values (finite), by column name, and
the read cursor."""

from __future__ import annotations

import math
from typing import Any


def is_value(v: Any) -> bool:
    """A finite int or float (not a bool): a value the ledger keeps."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def latest_values(metrics: dict[str, Any]) -> dict[str, int | float]:
    """The numeric metric values of ``metrics`` (a job's latest value of each)."""
    return {k: v for k, v in metrics.items() if is_value(v)}


# The cursor keys the ledger keeps: a SLURM StdOut (byte offset, inode, device), an iris log (the
# newest entry time and the controller's entry id read up to, the submission time, the attempts
# as "task:attempt,…", the bytes read since the start; read by the iris CLI: the attempt "cli" and
# ``at``, the entries of the cursor's second read, sweep_core.iris.cli_logs)
SLURM_CURSOR = ("offset", "ino", "dev")
IRIS_CURSOR = ("ms", "seq", "sub", "attempt", "bytes", "at")
# a metric stream file's cursor (programs/streams.py): byte offset, inode, device, mtime, the CSV
# header's CRC-32, the last step read (trainer_state.json: read whole, entries past it)
STREAM_CURSOR = ("offset", "ino", "dev", "mtime", "head", "step")


def stored_cursor(c: dict[str, Any]) -> dict[str, Any] | None:
    """The part of a read's cursor the ledger keeps; None when it is neither kind."""
    if c and all(isinstance(c.get(k), int) for k in SLURM_CURSOR):
        return {k: c[k] for k in SLURM_CURSOR}
    if c and all(isinstance(c.get(k), int) for k in ("ms", "seq", "sub")):
        return {k: c[k] for k in IRIS_CURSOR if k in c}
    return None
