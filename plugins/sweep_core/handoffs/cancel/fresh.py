"""Fresh judgement right before an act (pure): the evidence a job was judged on (``Evidence``: its
state, nodes, log mtime/size, step and tail as read in one session) against the evidence read at
that moment. A job that moved (its state or node list changed; and where its flag was its silence,
``SILENCE_RULES``, its log written since or its step advanced) is left alone, and the outcome says
how it moved (the relaunch judges its offer and standing permission again on the new evidence:
handoffs.relaunch.plan.rejudge). (A collapsed or deep-dive-KILL job keeps logging: its log moving is
no reason to spare it.)

The act scripts repeat the log check in the session that acts (sweep_core/programs/recheck.sh
``unmoved``: the log's mtime and size as judged, else record ``moved:<k>`` and ``fresh:<k>``), so
nothing can move between this check and the act; ``moved_in_script`` reads those records.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from sweep_core.handoffs.cancel.plan import CancelDecision
from sweep_core.slurm.gather import GatherOutput

MOVED = "moved since the flag"
SILENCE_RULES = ("liveness_stale", "wedged")  # flags that are the log's silence: a write answers them
LEFT_ALONE = "left alone"


@dataclass(frozen=True)
class Evidence:
    """A wedged job as read right before it is relaunched (the requeue truncates its log)."""

    job_id: str
    name: str
    remote_now: int | None = None
    state: str = ""
    requeue: str = ""  # scontrol Requeue: "1" may be requeued, "0" not
    restarts: str = ""
    nodelist: str = ""
    last_output: int | None = None  # log mtime, remote epoch seconds
    step: int | None = None
    tail: str = ""
    problem: str = ""  # what could not be read
    exc_nodes: str = ""  # scontrol ExcNodeList ("(null)" = none)
    size: int | None = None  # log size in bytes (with last_output: the act script checks the log did not move)
    log_path: str = ""  # the log read (the act script stats it again right before acting)

    @property
    def silent_s(self) -> int | None:
        if self.remote_now is None or self.last_output is None:
            return None
        return max(0, self.remote_now - self.last_output)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        return cls(**data)


def last_step(tail: str, patterns: Any) -> int | None:
    """The last step any of ``patterns`` (regexes, text or compiled; group 1) reads in ``tail``."""
    best: tuple[int, int] | None = None
    for p in patterns:
        for m in (re.compile(p) if isinstance(p, str) else p).finditer(tail):
            try:
                value = int(m.group(1).replace(",", ""))
            except (IndexError, ValueError):
                continue
            if best is None or m.end() >= best[0]:
                best = (m.end(), value)
    return best[1] if best else None


def stat_pair(text: str) -> tuple[int | None, int | None]:
    """(mtime, size) of ``stat -c '%Y %s'`` output (None, None when it is not two numbers)."""
    parts = text.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None, None


def _secs(v: int | None) -> str:
    return "?" if v is None else f"{v:,} s"


def _silent(ev: Mapping[str, Any]) -> int | None:
    now, last = ev.get("remote_now"), ev.get("last_output")
    return None if now is None or last is None else max(0, int(now) - int(last))


def on_silence(d: CancelDecision) -> bool:
    """Whether the job was flagged for its log's silence (then a log write or a step means it moved)."""
    return d.request.rule in SILENCE_RULES


def moved(before: Mapping[str, Any], now: Evidence, silence: bool = True) -> str:
    """What changed ("" = nothing) from ``before`` (an Evidence as a dict: what the job was judged on)
    to ``now``: "moved since the flag: silent 5 s now (was 7,800 s), step 520 (was 500)";
    ``silence`` False: only its state and node list count."""
    if not before:
        return ""
    changes = []
    b_last, b_size, b_step = before.get("last_output"), before.get("size"), before.get("step")
    wrote = (
        silence
        and b_last is not None
        and (
            now.last_output is None
            or now.last_output > int(b_last)
            or (b_size is not None and now.size is not None and now.size != int(b_size))
        )
    )
    if wrote:
        silent = "log not readable now" if now.last_output is None else f"silent {_secs(now.silent_s)} now"
        changes.append(f"{silent} (was {_secs(_silent(before))})")
    if silence and b_step is not None and now.step is not None and now.step != int(b_step):
        changes.append(f"step {now.step} (was {b_step})")
    for field, label in (("state", "state"), ("nodelist", "nodes")):
        was, is_ = str(before.get(field) or ""), str(getattr(now, field) or "")
        if was and is_ and was != is_:
            changes.append(f"{label} {is_} (was {was})")
    return f"{MOVED}: {', '.join(changes)}" if changes else ""


def moved_in_script(
    out: GatherOutput | None, k: int, job_id: str, name: str, before: Mapping[str, Any], step_patterns: Any
) -> str:
    """How job ``k`` moved, from the act script's ``moved:<k>`` / ``fresh:<k>`` records ("" = it did not)."""
    rec = out.get(f"moved:{k}") if out else None
    if rec is None:
        return ""
    parts = rec.stdout.split()
    mtime, size = stat_pair(" ".join(parts[:2]))
    remote_now = int(parts[-1]) if parts and parts[-1].isdigit() else None
    tail = out.get(f"fresh:{k}") if out else None
    step = last_step(tail.stdout, step_patterns) if tail is not None and tail.rc == 0 else None
    now = Evidence(job_id, name, remote_now=remote_now, last_output=mtime, size=size, step=step)
    return moved(before, now) or f"{MOVED}: the log's mtime/size changed ({rec.stdout.strip()[:80]})"
