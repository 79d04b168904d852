"""Two processes claiming the same hand-offs and folding runs at the same moment on one state
database (tests/state/test_concurrent_claims.py runs it on SQLite and on a throwaway PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import multiprocessing as mp
import os
import random
from typing import Any

JOBS = 40
T0 = dt.datetime(2026, 12, 4, tzinfo=dt.UTC)


def _job(k: int) -> dict[str, str]:
    return {"cluster": "leo", "job_id": str(k), "name": f"sft__{k}"}


def _worker(run_log_dir: str, url: str, who: int, start: Any, out: Any) -> None:
    """Claim every job's cleanup, one transaction each, and fold a run of this process every fifth."""
    if url:
        os.environ["SWEEP_STATE_URL"] = url
    from sweep_core.ledger.entries import LedgerEntry
    from sweep_core.ledger.runs import give_once
    from sweep_core.ledger.store import fold_run, load_ledger

    load_ledger(run_log_dir)  # engine made and schema checked before the start: both start claiming at once
    got: list[str] = []
    order = list(range(JOBS))
    random.Random(who).shuffle(order)  # each its own order: the two meet on jobs all along
    start.wait()
    for k in order:
        confs, _ = give_once(
            run_log_dir, {"cleanup": {"jobs": [_job(k)], "reclaim_clusters": []}}, run_id=f"p{who}", dry_run=False
        )
        got += [j["job_id"] for j in (confs["cleanup"] or {}).get("jobs", [])]
        if k % 5 == 0:
            key = f"leo|f{who}-{k}"

            def fold(ledger: Any, key: str = key) -> tuple[Any, None]:
                ledger.jobs[key] = LedgerEntry("leo", key.split("|")[1], "rl__fold", state="RUNNING")
                return ledger, None

            end = T0 + dt.timedelta(minutes=1000 * who + k)  # every window distinct: no re-run
            fold_run(run_log_dir, f"fold-p{who}-{k}", end.isoformat(), fold)
    out.put((who, got))


def race(run_log_dir: str, url: str = "") -> dict[int, list[str]]:
    """What each of two processes was given, both let go at one moment."""
    ctx = mp.get_context("spawn")  # fresh interpreters, as two workers are
    start, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(run_log_dir, url, who, start, out)) for who in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:  # (what each puts is small: it never blocks its exit)
        p.join(timeout=300)
        assert p.exitcode == 0, f"a worker failed (exit {p.exitcode}): see its traceback above"
    return dict(out.get(timeout=10) for _ in procs)


def check(run_log_dir: str, got: dict[int, list[str]]) -> None:
    """Every job given exactly once, the ledger naming the process that got it, every fold kept."""
    from sweep_core.ledger.store import load_ledger

    mine = {who: set(ids) for who, ids in got.items()}
    assert mine[0] & mine[1] == set(), f"given twice: {sorted(mine[0] & mine[1])}"
    assert mine[0] | mine[1] == {str(k) for k in range(JOBS)}
    ledger = load_ledger(run_log_dir)
    for who, ids in mine.items():
        assert all(ledger.jobs[f"leo|{i}"].handoffs == {"cleanup": f"p{who}"} for i in ids)
    folded = {k for k in ledger.jobs if "|f" in k}
    assert folded == {f"leo|f{who}-{k}" for who in (0, 1) for k in range(0, JOBS, 5)}
