"""The Ray worker logs of a job read near its last output (deep_dive.sh ``ray_logs``, ops.md
``ray_log_dir``) and their hang lines (pure): a line matching sweep.yaml ``metrics.hang_signals``
(EngineDead, NCCL … timeout, Watchdog, RPC … timeout), never one only ``opCount`` matches (the
runbook's "opCount dead" false positive), quoted with its file and its time: the stamp the line
carries (ISO, vLLM ``MM-DD hh:mm:ss`` or glog ``E1205 hh:mm:ss``, the node's clock) and the file's
last write relative to the job's last output.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.hang import is_hang_signal

_STAMPS = (
    re.compile(r"\b(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)"),
    re.compile(r"\b[EWIF](\d\d)(\d\d) (\d\d:\d\d:\d\d)\b"),  # glog (torch's ProcessGroupNCCL)
    re.compile(r"\b(\d\d-\d\d \d\d:\d\d:\d\d)\b"),  # vLLM
)


@dataclass(frozen=True)
class RayLog:
    """One Ray worker log as the script read it: its name, its mtime (epoch s), its last bytes."""

    name: str
    mtime: int
    text: str
    truncated: bool = False  # the file is longer than what was read: its first line may be partial


@dataclass(frozen=True)
class HangHit:
    """A hang line of a Ray worker log: the file, the stamp on the line ("" = none), when the file
    was last written (epoch s), how many times the line occurs in what was read, the line."""

    file: str
    stamp: str
    mtime: int
    count: int
    line: str

    def evidence(self, last_output: int | None) -> str:
        """``worker-x.err (line stamped …; file last written …Z, 3 min before the last output): …``."""
        written = dt.datetime.fromtimestamp(self.mtime, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        if last_output is not None:
            off = round((self.mtime - last_output) / 60)
            rel = "at" if off == 0 else f"{abs(off)} min {'after' if off > 0 else 'before'}"
            written += f", {rel} the job's last output"
        stamp = f"line stamped {self.stamp}; " if self.stamp else ""
        times = f" ({self.count} times)" if self.count > 1 else ""
        return f"{self.file} ({stamp}file last written {written}){times}: {self.line}"


def _stamp(line: str) -> str:
    for i, pat in enumerate(_STAMPS):
        if m := pat.search(line):
            return f"{m.group(1)}-{m.group(2)} {m.group(3)}" if i == 1 else m.group(1)
    return ""


def hang_hits(logs: Sequence[RayLog], mcfg: MetricsConfig, per_file: int = 3) -> list[HangHit]:
    """The last ``per_file`` distinct hang lines of each log (newest log first), each with its
    count; the first line of a truncated read (maybe begun mid-line) is skipped."""
    out: list[HangHit] = []
    for log in logs:
        lines = log.text.splitlines()[1:] if log.truncated else log.text.splitlines()
        counts: dict[str, int] = {}
        for ln in lines:
            s = ln.strip()
            if s and is_hang_signal(s, mcfg):
                counts[s[:300]] = counts.get(s[:300], 0) + 1
        for s in list(counts)[-per_file:]:
            out.append(HangHit(log.name, _stamp(s), log.mtime, counts[s], s))
    return out
