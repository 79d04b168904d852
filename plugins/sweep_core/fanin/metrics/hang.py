"""The evidence of a suspected silent hang (read by the liveness_stale rule): the last log line and the
lines near the end matching a hang signal (``metrics.hang_signals`` in include/sweep.yaml: EngineDead,
NCCL … Timeout, Watchdog, RPC … Timeout). ``opCount`` alone is no evidence (ops.md: "the opCount dead
false-positive": NCCL prints it on healthy collectives too): a line only it matches is never quoted.
The runbook's two traps are recognised and named (``named_traps``): sig53 (exit 0:53, Slurm could not
open the job's output file) and EDQUOT (Disk quota exceeded): the quota cell and the cleanup backlog,
not a kill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sweep_core.fanin.metrics.config import MetricsConfig
from sweep_core.fanin.metrics.patterns import search

_OPCOUNT = re.compile(r"opCount\s*[\w:=]*")
EDQUOT, SIG53 = "EDQUOT", "sig53"
_TRAPS = (
    (EDQUOT, re.compile(r"\bEDQUOT\b|Disk quota exceeded|\[Errno 122\]|quota exceeded", re.I)),
    (
        SIG53,
        re.compile(r"\bsig(?:nal)?\s*53\b|\bexit(?:ed)?(?: with)?(?: exit)? code:? ?(?:0:)?53\b|ExitCode=0:53\b", re.I),
    ),
)
TRAP_MEANING = {
    EDQUOT: "Disk quota exceeded: see the quota cell and the cleanup backlog (a cancel frees nothing; not a kill)",
    SIG53: "exit 0:53: Slurm could not open the job's output file (output dir unwritable or over quota)",
}


@dataclass(frozen=True)
class Trap:
    """A line of a known trap: its name (EDQUOT, sig53), what it means, the line (200 chars)."""

    name: str
    line: str

    def evidence(self) -> str:
        return f"{self.name} ({TRAP_MEANING[self.name]}): {self.line}"


def named_traps(text: str) -> list[Trap]:
    """The last line of each trap (EDQUOT, sig53) in ``text``, in that order."""
    out = []
    for name, pat in _TRAPS:
        hits = list(pat.finditer(text))
        if hits:
            m = hits[-1]
            start, end = text.rfind("\n", 0, m.start()) + 1, text.find("\n", m.end())
            out.append(Trap(name, text[start : end if end >= 0 else len(text)].strip()[:200]))
    return out


def is_hang_signal(line: str, cfg: MetricsConfig) -> bool:
    """A hang signal other than ``opCount`` on the line."""
    return cfg.hang_any.search(_OPCOUNT.sub(" ", line)) is not None


def hang_evidence(tail: str, cfg: MetricsConfig, lines: int = 40) -> tuple[str, list[str]]:
    """The last non-empty log line and any EngineDead/NCCL/Watchdog/RPC lines near the end."""
    near_end = tail[-8192:].splitlines()[-lines:]
    last = next((s[:200] for ln in reversed(near_end) if (s := ln.strip())), "")
    # The usual case: no signal, told by a str search for the signals' literals (none spans a
    # line, so blank lines kept in this block change nothing), then by one search per signal.
    if cfg.hang_literals:
        whole = "\n".join(near_end)
        if not any(lit in whole for lit in cfg.hang_literals):
            return last, []
    rows = [ln for ln in near_end if ln.strip()]
    block = "\n".join(rows)
    if not any(search(p, block) for p in cfg.hang_each):
        return last, []
    near = [ln.strip()[:200] for ln in rows if is_hang_signal(ln, cfg)]
    return last, near[-3:]
