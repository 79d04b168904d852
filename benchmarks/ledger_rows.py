"""The ledger as rows against the document store it replaced (2127ded's ledger/store.py, read from
git), with 1,000 and 10,000 jobs, on the default SQLite file: a sweep's fold (fold + save in one
transaction, the previous sweep already folded), one claim (give_once of ONE job's cleanup: what a
hand-off's claim of one act costs), a claim of every completed job at once, and the bytes each
writes (the text of every row or document written), and a sweep's fold when a tenth of the ledger's
jobs are live (the rest ended and out of the window: a ledger keeps ended jobs 30 days). Snapshots are those of benchmarks/fan_in.py
(3 clusters, every bucket, a quarter of the jobs ended). Then what a hand-off does to one job: an act
recorded (ledger.acts.record_acts, as cancel and cleanup store their acts) and an act claimed
(batch_job.usecase.claim_act, as consolidate reserves a submission), on the document (update_ledger
of the whole document) and on the rows (the job's own rows: its job, act and claim rows). On the
default SQLite file, and with ``--pg`` on a throwaway PostgreSQL 15 too (tests/throwaway_pg.py).
Then, on the rows, what a hand-off reads: the whole ledger (as main did before the keyed reads)
against its own rows (the hold: the ledger row; the cleanup view: the jobs with an upload act; an
upload run: its 20 jobs; the metrics scrape: the act rows). Best of 3.
Usage: source scripts/env.sh && python benchmarks/ledger_rows.py [--pg]
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fan_in import snapshots  # noqa: E402

from sweep_core.handoffs.batch_job import usecase as batch  # noqa: E402
from sweep_core.ledger import acts as ledger_acts  # noqa: E402
from sweep_core.ledger import store as rows_store  # noqa: E402
from sweep_core.ledger.fold import fold_sweep  # noqa: E402
from sweep_core.ledger.runs import give_once  # noqa: E402
from sweep_core.ledger.since_report import carry  # noqa: E402
from sweep_core.state.db import engine_for, state_url  # noqa: E402

SIZES = (1_000, 10_000)
END = dt.datetime(2026, 12, 3, 3, 0, tzinfo=dt.UTC)
DOCUMENT_STORE = "2127ded"  # the last commit whose ledger was one document per run-log directory


def document_store() -> types.ModuleType:
    """2127ded's sweep_core/ledger/store.py, as that commit has it (it runs on the documents table)."""
    root = Path(__file__).resolve().parents[1]
    src = subprocess.run(
        ["git", "-C", str(root), "show", f"{DOCUMENT_STORE}:plugins/sweep_core/ledger/store.py"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    src = src.replace("from sweep_core.cadence import", "from sweep_core.timing.cadence import")  # moved since
    mod = types.ModuleType("document_store_2127ded")
    exec(compile(src, f"{DOCUMENT_STORE}:plugins/sweep_core/ledger/store.py", "exec"), mod.__dict__)
    return mod


class Written:
    """Bytes of text sent in INSERT/UPDATE statements to the state database, and rows written."""

    def __init__(self, run_log_dir: str) -> None:
        self.bytes = self.rows = 0
        sa.event.listen(engine_for(state_url(run_log_dir)), "before_cursor_execute", self._count)

    def _count(self, _conn: Any, _cur: Any, statement: str, params: Any, _ctx: Any, many: bool) -> None:
        if not statement.lstrip().upper().startswith(("INSERT", "UPDATE")):
            return
        for p in params if many else [params]:
            values = p.values() if isinstance(p, dict) else p
            self.bytes += sum(len(v) for v in values if isinstance(v, str))
            self.rows += 1

    def take(self) -> tuple[int, int]:
        got = self.bytes, self.rows
        self.bytes = self.rows = 0
        return got


def _fold(snaps: list[Any], run_id: str, end: dt.datetime) -> Callable[[Any], Any]:
    iso = end.isoformat()

    def fold(ledger: Any) -> Any:  # what ledger.runs.fold_sweep_run folds
        new, changes = fold_sweep(ledger, snaps, run_id=run_id, window_end=end)
        return new, carry(ledger, new, changes, run_id=run_id, window_end=iso)

    return fold


def measure(n: int, store: types.ModuleType) -> dict[str, float]:
    snaps = snapshots(n)
    for s in snaps:
        for j in s.all_jobs():
            j.log_tail = ""  # the bucket task drops the tails before the render task
    done = [
        {"cluster": j.cluster, "job_id": j.job_id, "name": j.name}
        for s in snaps
        for j in s.finished or []
        if j.state == "COMPLETED"
    ]
    second = END + dt.timedelta(hours=3)
    with tempfile.TemporaryDirectory() as d:
        store.fold_run(d, "scheduled__1", END.isoformat(), _fold(snaps, "scheduled__1", END))  # the previous sweep
        w = Written(d)
        t0 = time.perf_counter()
        store.fold_run(d, "scheduled__2", second.isoformat(), _fold(snaps, "scheduled__2", second))
        out: dict[str, float] = {"fold_s": time.perf_counter() - t0}
        out["fold_bytes"], out["fold_rows"] = w.take()
        mod = sys.modules["sweep_core.ledger.runs"]
        saved = mod.update_jobs
        if store is not rows_store:  # today's give_once is update_ledger over the one document
            mod.update_jobs = lambda run_log_dir, _keys, change: store.update_ledger(run_log_dir, change)
        try:
            one = [done[0]]
            t0 = time.perf_counter()
            give_once(d, {"cleanup": {"jobs": one, "reclaim_clusters": []}}, run_id="scheduled__2", dry_run=False)
            out["claim_s"] = time.perf_counter() - t0
            out["claim_bytes"], out["claim_rows"] = w.take()
            t0 = time.perf_counter()
            give_once(d, {"cleanup": {"jobs": done[1:], "reclaim_clusters": []}}, run_id="scheduled__2", dry_run=False)
            out["claims_s"] = time.perf_counter() - t0
            out["claims_bytes"], _ = w.take()
            out["claimed"] = len(done)
        finally:
            mod.update_jobs = saved
        out.update(_one_job(d, store, done[0]))
        if store is rows_store:
            whole = _one_job(d, store, done[1], whole=True)
            out.update({f"whole_{k}": v for k, v in whole.items()})
        # steady state: a tenth of the ledger's jobs live, the rest ended and out of the window (kept 30 days)
        live = [_live(s, n // 10) for s in snaps]
        for k, run in enumerate(("scheduled__3", "scheduled__4")):
            end = second + dt.timedelta(hours=3 * (k + 1))
            w.take()
            t0 = time.perf_counter()
            store.fold_run(d, run, end.isoformat(), _fold(live, run, end))
        out["steady_s"] = time.perf_counter() - t0
        out["steady_bytes"], out["steady_rows"] = w.take()
        if store is rows_store:
            out.update(_reads(d, done))  # after the folds: its upload acts change no figure above
        return out


def _one_job(d: str, store: types.ModuleType, job: dict[str, str], whole: bool = False) -> dict[str, float]:
    """An act recorded on one job and an act claimed on it (seconds, bytes written); ``whole``: on the
    rows through update_ledger, as 0cc8c1b's record_acts and claim_act did (every row read)."""
    act = {"kind": "cancel", "at": END.isoformat(), "run": "manual__1", "result": "scancel sent"}
    patched = [(ledger_acts, "update_jobs"), (batch, "update_jobs")]
    saved = [getattr(m, n, None) for m, n in patched]
    if store is not rows_store or whole:  # every change is update_ledger of the whole ledger
        for m, n in patched:
            setattr(m, n, lambda run_log_dir, _keys, change, **_: store.update_ledger(run_log_dir, change))
    w, out = Written(d), {}
    try:
        t0 = time.perf_counter()
        ledger_acts.record_acts(d, [(job["cluster"], job["job_id"], job["name"], act)])
        out["act_s"] = time.perf_counter() - t0
        out["act_bytes"], _ = w.take()
        t0 = time.perf_counter()
        got = batch.claim_act(d, job, lambda _: 1, {"kind": "submitted", "run": "scheduled__2"})
        out["claim_act_s"] = time.perf_counter() - t0
        out["claim_act_bytes"], _ = w.take()
        assert got == 1
    finally:
        for (m, n), f in zip(patched, saved, strict=True):
            setattr(m, n, f)
    return out


def _best(f: Callable[[], Any]) -> float:
    """Seconds of the fastest of 3 calls."""
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def _same(a: Any, b: Any) -> bool:
    """Two cleanup views hold the same (the whole read lists jobs in the database's order)."""
    key = lambda v: (sorted(map(str, v.open)), v.salvaged, dict(v.own), sorted(map(str, v.consolidating)))  # noqa: E731
    return key(a) == key(b)


def _reads(d: str, done: list[dict[str, str]]) -> dict[str, float]:
    """What a hand-off reads of the ledger, whole (load_ledger, as main's code did) against keyed
    (its jobs' rows, the ledger row alone, the act rows): the hold, the cleanup view (20 jobs with an
    upload act), an upload run's 20 decisions, the metrics scrape's act counts."""
    from sweep_core.handoffs.views import cleanup_view, read_cleanup_view
    from sweep_core.history.openmetrics import acts_by_cluster
    from sweep_core.ledger.hold import held

    some = done[2:22]
    upload = {"kind": "upload", "upload_job": "901", "attempt": "1", "log": "/l/901", "flavor": "sft-job-cleanup"}
    ledger_acts.record_acts(d, [(j["cluster"], j["job_id"], j["name"], upload) for j in some])
    keys = {f"{j['cluster']}|{j['job_id']}" for j in some}
    assert _same(read_cleanup_view(d), cleanup_view(rows_store.load_ledger(d)))
    return {
        "hold_whole": _best(lambda: rows_store.load_ledger(d).hold),
        "hold_keyed": _best(lambda: held(d)),
        "view_whole": _best(lambda: cleanup_view(rows_store.load_ledger(d))),
        "view_keyed": _best(lambda: read_cleanup_view(d)),
        "jobs_whole": _best(lambda: rows_store.load_ledger(d)),
        "jobs_keyed": _best(lambda: rows_store.read_jobs(d, keys)),
        "metrics_whole": _best(lambda: acts_by_cluster({k: e.acts for k, e in rows_store.load_ledger(d).jobs.items()})),
        "metrics_keyed": _best(lambda: acts_by_cluster(rows_store.acts_by_job(d))),
    }


def _live(s: Any, m: int) -> Any:
    """The snapshot with only its running jobs among the first ``m`` (nothing ended in the window)."""
    import dataclasses

    keep = [j for j in s.running if int(j.job_id) - 100000 < m]
    return dataclasses.replace(s, running=keep, finished=[], pending=[])


def table(where: str) -> None:
    stores = {"document (2127ded)": document_store(), "rows": rows_store}
    print(f"-- {where}")
    print(
        f"{'jobs':>7} {'store':<19} {'fold+save':>10} {'written':>10} {'claim 1':>9} {'written':>9}"
        f" {'claim all done':>15} {'written':>9} {'fold, 10% live':>15} {'written':>9}"
        f" {'act 1':>9} {'written':>9} {'claim act':>9} {'written':>9}"
    )
    reads: list[tuple[int, dict[str, float]]] = []
    for n in SIZES:
        for name, store in stores.items():
            best = min((measure(n, store) for _ in range(3)), key=lambda r: r["fold_s"] + r["claim_s"])
            print(
                f"{n:>7,} {name:<19} {best['fold_s']:>9.3f}s {best['fold_bytes'] / 1024:>6.0f} KiB"
                f" {best['claim_s'] * 1000:>7.1f}ms {best['claim_bytes'] / 1024:>5.1f} KiB"
                f" {best['claims_s']:>14.3f}s {best['claims_bytes'] / 1024:>5.0f} KiB"
                f" {best['steady_s']:>14.3f}s {best['steady_bytes'] / 1024:>5.0f} KiB"
                f" {best['act_s'] * 1000:>7.1f}ms {best['act_bytes'] / 1024:>5.1f} KiB"
                f" {best['claim_act_s'] * 1000:>7.1f}ms {best['claim_act_bytes'] / 1024:>5.1f} KiB"
                f"   (rows written: fold {best['fold_rows']:.0f}, 10% live {best['steady_rows']:.0f};"
                f" {best['claimed']:.0f} completed jobs claimed)"
            )
            if "hold_keyed" in best:
                reads.append((n, best))
            if "whole_act_s" in best:
                print(
                    f"{'':>7} {'  act/claim act through update_ledger (0cc8c1b)':<131}"
                    f" {best['whole_act_s'] * 1000:>7.1f}ms {best['whole_act_bytes'] / 1024:>5.1f} KiB"
                    f" {best['whole_claim_act_s'] * 1000:>7.1f}ms {best['whole_claim_act_bytes'] / 1024:>5.1f} KiB"
                )
    _print_reads(reads)


def _print_reads(reads: list[tuple[int, dict[str, float]]]) -> None:
    print(
        f"{'jobs':>7} {'rows: whole read vs keyed (ms)':<32} {'hold':>15} {'cleanup view':>15} {'20 jobs':>15} {'act counts':>15}"
    )
    for n, r in reads:
        cells = [
            f"{r[f'{k}_whole'] * 1000:.0f} / {r[f'{k}_keyed'] * 1000:.1f}" for k in ("hold", "view", "jobs", "metrics")
        ]
        print(f"{n:>7,} {'':<32} " + " ".join(f"{c:>15}" for c in cells))


def main() -> None:
    import os

    os.environ.pop("SWEEP_STATE_URL", None)
    table("SQLite (the default file under each run-log directory)")
    if "--pg" in sys.argv[1:]:
        from throwaway_pg import running

        from sweep_core.state import db, migrate

        with running() as url:
            migrate.upgrade(db.new_engine(url))
            os.environ["SWEEP_STATE_URL"] = url
            table("PostgreSQL 15 (a throwaway server on 127.0.0.1)")


if __name__ == "__main__":
    main()
