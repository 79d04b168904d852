"""The ledger's last step as a check on this sweep's (issue 40: never a wrong number). What the
ledger keeps of a job (``LedgerEntry.step``, ``max_steps``: sweep_core.ledger.fold) against what
this sweep's read gives, for the same job id:

- a step below the ledger's, with no restart in the log (a resume/checkpoint-load line in the
  tail read, ``restart_evidence``, or a read that restarted: truncated, replaced, new attempt), is
  ``?`` saying so: a counter that goes back without a restart is not the training step;
- a step above the ledger's total, when this read has no total of its own, is ``?`` too (RL: kept
  as ``past_max_steps``, what the overshoot rule reads).

Run after ``cursor.carry`` (a step it carried is the ledger's own) in the gather's digest.
"""

from __future__ import annotations

import re

from sweep_core.fanin.cursor import RESTARTED
from sweep_core.ledger.entries import Ledger
from sweep_core.records.models import ClusterSnapshot, Job

RESTART_KEY = "restart"  # evidence key: the tail's last restart line
_RESTART = re.compile(
    r"[Rr]esum(?:e|ed|ing)[ _](?:from|training|checkpoint)|[Ll]oad(?:ing|ed) (?:the )?checkpoint|"
    r"[Rr]estor(?:e|ed|ing) (?:from|checkpoint|the checkpoint)|resume_from_checkpoint|\*\*\*\*\* Running training \*\*\*\*\*|"
    r"Training starts at step|[Rr]equeue"
)


def restart_evidence(tail: str) -> str:
    """The last line of the tail that says the run (re)started or resumed ("" when none)."""
    last = None
    for m in _RESTART.finditer(tail):
        last = m
    if last is None:
        return ""
    start = max(tail.rfind("\n", 0, last.start()), tail.rfind("\r", 0, last.start())) + 1
    end = tail.find("\n", last.end())
    return tail[start : end if end >= 0 else len(tail)].strip()[:200]


def _restarted(job: Job) -> bool:
    return bool(job.evidence.get(RESTART_KEY)) or job.log_cursor.get("why") in RESTARTED


def check_steps(snap: ClusterSnapshot, ledger: Ledger) -> None:
    """This sweep's step of each job against the ledger's last step and total (in place)."""
    for job in [*(snap.running or []), *(snap.finished or [])]:
        e = ledger.jobs.get(f"{job.cluster}|{job.job_id}")
        step = job.metrics.get("step")
        if e is None or type(step) is not int or "step" in str(job.metrics.get("carried", "")):
            continue
        total_key = "max_steps" if "max_steps" in job.metrics else "total"
        why = ""
        if e.step is not None and step < e.step and not _restarted(job):
            why = f"step unknown: {step} is below the {e.step} an earlier sweep read, and the log shows no restart"
        elif e.max_steps is not None and job.metrics.get(total_key) is None and step > e.max_steps:
            why = f"step unknown: {step} is above the total {e.max_steps} an earlier sweep read"
            if total_key == "max_steps":
                job.metrics["past_max_steps"] = step
        if why:
            job.metrics["step"] = None
            job.metric_problems = [*job.metric_problems, why]
