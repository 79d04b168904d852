"""The batch-job machine's use-case: exactly once. A submission is claimed in the ledger (under the
lock of its job's rows alone: a claim of another job never waits on it) BEFORE sbatch runs; ONE
session submits a cluster's claimed jobs; each claim is then filled with its Slurm id, released when nothing of it ran (REFUSED / NOT_SENT), or kept when its outcome
is UNKNOWN (found next run by its job name: batch_job.plan.reconcile, never re-sent blind).

Two claim records, one rule: a ``kind#attempt`` hand-off mark on the job's ledger entry
(``claim`` / ``release``), or a claim act with an empty id on the entry (``claim_act`` /
``fill_act`` / ``drop_act``) for a hand-off whose whole story is its acts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sweep_core.handoffs.batch_job.plan import Submission
from sweep_core.handoffs.batch_job.remote import build_submit_script, read_submit
from sweep_core.handoffs.ports import RunScript
from sweep_core.ledger.acts import act_rows, add_act
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.given import given_by, mark_given, release_given
from sweep_core.ledger.store import update_jobs
from sweep_core.slurm.gather import new_marker

Key = Mapping[str, str]  # {"cluster", "job_id", "name"}: the ledger entry a claim is on


def claim(
    ledger_dir: str | Path,
    kind: str,
    items: Sequence[tuple[Key, int]],
    run_id: str,
    in_flight: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """Claim each (entry, attempt) as ``kind#attempt`` under the ledger lock. Per item: '' when
    this run holds the claim now, else the run that made that attempt already. ``in_flight`` (one
    per item): the act recorded with a claim taken, in the same transaction (an UNKNOWN outcome
    until ``settle`` replaces it: a task that dies mid-act, its worker lost, leaves it; the retry
    reads it and looks the act up instead of sending it again)."""

    def change(ledger: Ledger) -> tuple[Ledger, list[str]]:
        got = []
        for k, (key, attempt) in enumerate(items):
            by = given_by(ledger, f"{kind}#{attempt}", key)
            if by and by != run_id:
                got.append(by)
                continue
            mark_given(ledger, f"{kind}#{attempt}", [key], run_id)
            if in_flight:
                add_act(ledger, key["cluster"], key["job_id"], str(key.get("name", "")), in_flight[k])
            got.append("")
        return ledger, got

    keys = {f"{key['cluster']}|{key['job_id']}" for key, _ in items}
    return update_jobs(ledger_dir, keys, change) if items else []  # a claim: these entries' rows alone


def settle(
    ledger_dir: str | Path,
    in_flight: Sequence[tuple[Key, Mapping[str, Any]]],
    acts: Sequence[tuple[str, str, str, Mapping[str, Any]]],
    kind: str = "",
    release: Sequence[tuple[Key, int | str]] = (),
) -> None:
    """In one transaction: each claim's in-flight act (``claim``) dropped, the acts its answer made
    recorded, and the ``kind#attempt`` claims of ``release`` freed (nothing of them ran)."""

    def change(ledger: Ledger) -> tuple[Ledger, None]:
        for key, act in in_flight:
            e = ledger.jobs.get(f"{key['cluster']}|{key['job_id']}")
            rec = {k: str(v) for k, v in act.items() if v is not None}
            if e is not None:
                e.acts = [a for a in e.acts if a != rec]
        for cluster, job_id, name, act in acts:
            add_act(ledger, cluster, job_id, name, act)
        for key, attempt in release:
            release_given(ledger, f"{kind}#{attempt}", [key])
        return ledger, None

    if in_flight or acts or release:
        keys, top = act_rows(acts, [key for key, _ in [*in_flight, *release]])
        update_jobs(ledger_dir, keys, change, top=top)  # these jobs' rows (and the ledger row for a relaunch)


def release(ledger_dir: str | Path, kind: str, items: Sequence[tuple[Key, int | str]]) -> None:
    """Free each (entry, attempt) claim: nothing of that attempt ran, the next run may make it."""

    def change(ledger: Ledger) -> tuple[Ledger, None]:
        for key, attempt in items:
            release_given(ledger, f"{kind}#{attempt}", [key])
        return ledger, None

    if items:
        update_jobs(ledger_dir, {f"{key['cluster']}|{key['job_id']}" for key, _ in items}, change)


def claim_act(
    ledger_dir: str | Path,
    entry: Key,
    allowed: Callable[[Ledger], int],
    act: Mapping[str, Any],
    touch: Callable[[Ledger], None] = lambda _: None,
) -> int:
    """Under the lock of the entry's row alone: ``allowed(ledger)`` says the attempt this run may
    claim (0 = none); a claim act (``act`` with ``job`` '' and that ``attempt``) is added to the
    entry. ``allowed`` and ``touch`` see (and ``touch`` may change) that entry only."""

    def change(ledger: Ledger) -> tuple[Ledger, int]:
        attempt = allowed(ledger)
        if attempt:
            add_act(ledger, entry["cluster"], entry["job_id"], entry["name"], {**act, "job": "", "attempt": attempt})
            touch(ledger)
        return ledger, attempt

    return update_jobs(ledger_dir, {f"{entry['cluster']}|{entry['job_id']}"}, change)


def _claimed(ledger: Ledger, cluster: str, entry_id: str, kind: str, attempt: int) -> list[dict[str, str]]:
    e = ledger.jobs.get(f"{cluster}|{entry_id}")
    return [
        a
        for a in (e.acts if e else [])
        if a.get("kind") == kind and a.get("attempt") == str(attempt) and not a.get("job")
    ]


def fill_act(ledger_dir: str | Path, cluster: str, entry_id: str, kind: str, attempt: int, job: str, why: str) -> None:
    """The claim act ``attempt`` gets its Slurm id, or (``job`` '') the reason none came back: the
    claim stays, reported every run, never re-sent by itself."""

    def change(ledger: Ledger) -> tuple[Ledger, None]:
        for a in _claimed(ledger, cluster, entry_id, kind, attempt):
            a["job"] = job
            if why:
                a["problem"] = why[:300]
        return ledger, None

    update_jobs(ledger_dir, {f"{cluster}|{entry_id}"}, change)


def drop_act(ledger_dir: str | Path, cluster: str, entry_id: str, kind: str, attempt: int) -> None:
    """Free the claim act ``attempt``: nothing of it was sent, the next run may claim it again."""

    def change(ledger: Ledger) -> tuple[Ledger, None]:
        e = ledger.jobs.get(f"{cluster}|{entry_id}")
        if e is not None:
            mine = _claimed(ledger, cluster, entry_id, kind, attempt)
            e.acts = [a for a in e.acts if all(a is not m for m in mine)]
        return ledger, None

    update_jobs(ledger_dir, {f"{cluster}|{entry_id}"}, change)


def submit(
    cfg: Any, argvs: Sequence[Sequence[str]], run_script: RunScript, what: str
) -> tuple[list[Submission], float]:
    """ONE session submits every (already claimed) argv of a cluster: the typed outcome of each,
    and when the session started (epoch: an UNKNOWN one is looked for among jobs submitted since)."""
    marker = new_marker()
    started = time.time()
    out, problem = run_script(cfg, build_submit_script(argvs, marker), marker, what)
    return read_submit(out, len(argvs), problem), started
