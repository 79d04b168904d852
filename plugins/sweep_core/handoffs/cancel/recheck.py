"""The values recheck.sh reads in the session that acts: per job, the log it was judged on and that
log's mtime and size then, so the act script refuses a job whose log moved since (a wedge that
came back to life is not cancelled)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def guard_values(jobs: list[tuple[str, Mapping[str, Any]]], tail_bytes: int) -> dict[str, Any]:
    """The header of recheck.sh ``unmoved``: per job (its log path, the mtime and size it was judged
    on); a job with no readable log judged ('' path) is not checked."""
    logs, mtimes, sizes = [], [], []
    for _, ev in jobs:
        ok = ev.get("log_path") and ev.get("last_output") is not None and ev.get("size") is not None
        logs.append(str(ev["log_path"]) if ok else "")
        mtimes.append(str(ev["last_output"]) if ok else "")
        sizes.append(str(ev["size"]) if ok else "")
    return {"LOGS": logs, "MTIMES": mtimes, "SIZES": sizes, "TAIL_BYTES": int(tail_bytes)}
