"""Per-job isolation for the fan-in steps: one job whose data breaks a step costs only that job.

An exception while one job is processed becomes a note on that job (shown in its Note column,
its cells ``?``); every other job goes on. A rule that fails on the sweep as a whole is re-run
without the jobs that make it fail on their own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TypeVar

from sweep_core.records.models import ClusterSnapshot, Flag, Job
from sweep_core.records.vocab import Severity

T = TypeVar("T")


def error_note(step: str, exc: BaseException) -> str:
    """``metrics failed on this job: ValueError: …`` (bounded: a note, not a dump)."""
    text = str(exc).replace("\n", " ")
    return f"{step} failed on this job: {type(exc).__name__}: {text[:160]}{'…' if len(text) > 160 else ''}"


def guarded(job: Job, step: str, fn: Callable[[], T]) -> T | None:
    """``fn()``; on an exception, a note on ``job`` naming the step and the error, and None."""
    try:
        return fn()
    except (Exception, RecursionError) as exc:  # noqa: BLE001 - any error of one job stays that job's
        note = error_note(step, exc)
        if note not in job.errors:
            job.errors.append(note)
        return None


def _without(snaps: Sequence[ClusterSnapshot], drop: set[int]) -> list[ClusterSnapshot]:
    """Shallow copies of ``snaps`` whose job lists leave out the jobs with an id() in ``drop``."""

    def keep(jobs: list[Job] | None) -> list[Job] | None:
        return None if jobs is None else [j for j in jobs if id(j) not in drop]

    return [
        dataclasses.replace(s, running=keep(s.running), finished=keep(s.finished), pending=keep(s.pending))
        for s in snaps
    ]


def _only(snap: ClusterSnapshot, job: Job) -> ClusterSnapshot:
    def keep(jobs: list[Job] | None) -> list[Job] | None:
        return None if jobs is None else [j for j in jobs if j is job]

    return dataclasses.replace(
        snap, running=keep(snap.running), finished=keep(snap.finished), pending=keep(snap.pending)
    )


def run_isolated(name: str, rule: Callable[[T], list[Flag]], ctx: T) -> list[Flag]:
    """``rule(ctx)``; when it raises, the jobs it raises on alone get a note and the rule runs without them.

    ``ctx`` is a dataclass with a ``snaps`` field (sweep_core.rules.context.RuleContext). A failure no single
    job explains is one warning flag naming the rule and the error (the sweep goes on).
    """
    try:
        return rule(ctx)
    except (Exception, RecursionError) as first:  # noqa: BLE001
        snaps: list[ClusterSnapshot] = ctx.snaps  # type: ignore[attr-defined]
        bad: set[int] = set()
        for s in snaps:
            for job in [*(s.running or []), *(s.finished or []), *(s.pending or [])]:
                one = dataclasses.replace(ctx, snaps=[_only(s, job)])  # type: ignore[type-var]
                if guarded(job, f"rule {name}", lambda one=one: rule(one)) is None:
                    bad.add(id(job))
        try:
            return rule(dataclasses.replace(ctx, snaps=_without(snaps, bad)))  # type: ignore[type-var]
        except (Exception, RecursionError) as exc:  # noqa: BLE001
            msg = f"rule failed on this sweep: {error_note(name, exc or first)}"
            return [Flag(rule=name, severity=Severity.WARN, cluster="", message=msg)]
