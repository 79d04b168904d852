"""Two workers claiming at once on PostgreSQL (a throwaway PostgreSQL 15 on 127.0.0.1, started and
removed here: tests/throwaway_pg.py), the ledger holding 1,000 and 10,000 jobs, on the document
store (2127ded's ledger/store.py, read from git) and on the rows, a claim being a hand-off given
once (``update_jobs``: give_once's, the batch jobs' ``kind#attempt``) or, on the rows, a claim act
(batch_job.usecase.claim_act: consolidate's reservation of a submission, an act row):

- different jobs: worker A's claim of job 1 holds its transaction open HOLD_S seconds (a slow worker);
  worker B claims job 2 meanwhile: how long B waited;
- the same act: A and B claim job 3's cleanup at one moment (a barrier), each transaction open
  HOLD_S: how many won (exactly one must), and how long the loser waited.

Each worker is its own interpreter (spawn), as two Airflow workers are.
Usage: source scripts/env.sh && python benchmarks/state_claims_pg.py
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

SIZES, HOLD_S = (1_000, 10_000), 2.0


def _store(which: str) -> Any:
    if which in ("rows", "act"):
        from sweep_core.ledger import store

        return store
    from ledger_rows import document_store  # benchmarks/ledger_rows.py

    return document_store()


def _claim(which: str, run_log_dir: str, job: str, run: str, hold: float, inside: Any = None) -> str:
    """Claim job ``job`` for ``run`` unless another run has it: '' = won, else who has it."""
    from sweep_core.ledger.acts import acts_of
    from sweep_core.ledger.given import given_by, mark_given

    store, item = _store(which), {"cluster": "leo", "job_id": job}

    def wait() -> None:
        if inside is not None:
            inside.set()
        time.sleep(hold)  # the transaction stays open: a slow worker

    if which == "act":
        from sweep_core.handoffs.batch_job import usecase as batch

        def allowed(ledger: Any) -> int:
            wait()
            return 0 if acts_of(ledger, "leo", job, "submitted") else 1

        got = batch.claim_act(run_log_dir, {**item, "name": f"sft__{job}"}, allowed, {"kind": "submitted", "run": run})
        if got:
            return ""
        return next(a["run"] for a in acts_of(store.load_ledger(run_log_dir), "leo", job, "submitted"))

    def change(ledger: Any) -> tuple[Any, str]:
        wait()
        by = given_by(ledger, "cleanup", item)
        if by and by != run:
            return ledger, by
        mark_given(ledger, "cleanup", [item], run)
        return ledger, ""

    if which == "rows":
        return store.update_jobs(run_log_dir, {f"leo|{job}"}, change)
    return store.update_ledger(run_log_dir, change)


def _worker(
    which: str, url: str, run_log_dir: str, who: str, plan: list[tuple[str, float]], sync: Any, out: Any
) -> None:
    os.environ["SWEEP_STATE_URL"] = url
    inside, start = sync
    _store(which).load_ledger(run_log_dir)  # engine made before the start
    from sweep_core.handoffs.batch_job import usecase  # noqa: F401  imported before the start too

    for job, hold in plan:
        if who == "B" and job == "2":
            assert inside.wait(30)  # A holds job 1 now
        if job == "3":
            start.wait()
        t0 = time.perf_counter()
        got = _claim(which, run_log_dir, job, who, hold, inside if who == "A" and job == "1" else None)
        out.put((who, job, got, time.perf_counter() - t0))


def measure(which: str, url: str, jobs: int) -> dict[str, Any]:
    from sweep_core.ledger.entries import LedgerEntry

    os.environ["SWEEP_STATE_URL"] = url
    run_log_dir = tempfile.mkdtemp(prefix=f"claims-{which}-")

    def fold(ledger: Any) -> tuple[Any, None]:
        for i in range(jobs):
            ledger.jobs[f"leo|{i}"] = LedgerEntry("leo", str(i), f"sft__{i}", state="COMPLETED")
        return ledger, None

    _store(which).fold_run(run_log_dir, "r1", "2026-12-04T03:00:00+00:00", fold)
    ctx = mp.get_context("spawn")
    sync, out = (ctx.Event(), ctx.Barrier(2)), ctx.Queue()
    plans = {"A": [("1", HOLD_S), ("3", HOLD_S)], "B": [("2", 0.0), ("3", HOLD_S)]}
    procs = [ctx.Process(target=_worker, args=(which, url, run_log_dir, w, p, sync, out)) for w, p in plans.items()]
    for p in procs:
        p.start()
    got = [out.get(timeout=120) for _ in range(4)]
    for p in procs:
        p.join(60)
    res = {(who, job): (by, secs) for who, job, by, secs in got}
    same = [res[("A", "3")], res[("B", "3")]]
    return {
        "b_other_job_s": res[("B", "2")][1],
        "winners": sum(1 for by, _ in same if by == ""),
        "loser_s": max(secs for by, secs in same if by) if any(by for by, _ in same) else float("nan"),
    }


def main() -> None:
    from throwaway_pg import running

    from sweep_core.state import db, migrate

    with running() as url:
        migrate.upgrade(db.new_engine(url))
        print(f"PostgreSQL 15, each claim transaction held {HOLD_S:.1f} s")
        print(
            f"{'jobs':>7} {'store':<19} {'B claims job 2 while A holds job 1':>36} {'same act: winners':>18}"
            f" {'loser waited':>13}"
        )
        for jobs in SIZES:
            for which, kind in (("document (2127ded)", "document"), ("rows", "rows"), ("rows, claim act", "act")):
                r = measure(kind, url, jobs)
                print(
                    f"{jobs:>7,} {which:<19} {r['b_other_job_s']:>34.3f} s {r['winners']:>18} {r['loser_s']:>11.2f} s"
                )


if __name__ == "__main__":
    main()
