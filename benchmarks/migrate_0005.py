"""What the state migration 0005 (every stored attempt says its act, every old cancel its did, every
old cancel hand-off record its severity; plugins/sweep_core/state/migrations/v0005_acts_said.py)
costs once at start: a store at schema 0004 with N jobs, each job row holding an old cancel
hand-off record and ``ACTS`` acts in the formats before 0005 (upload, consolidate, db_register, a
cancel without ``did``, marks), in the ``now`` and ``before`` generations, upgraded by
``migrate.upgrade``. On the default SQLite file, and with ``--pg`` on a throwaway PostgreSQL 15
(tests/throwaway_pg.py). Prints rows, seconds and the upgrading process's peak RSS.
Usage: source scripts/env.sh && python benchmarks/migrate_0005.py [--pg] [--jobs N] [--acts A]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from sweep_core.state import db, migrate  # noqa: E402

LINE = "[liveness_stale] CRITICAL leo RL {j} rl__{j}: no output for 185 min → kill-approval"
OLD = [  # acts as versions before 0005 stored them (tests/fixtures/state_v0004/make_store.py)
    {"kind": "upload", "attempt": "1", "run": "r", "at": "t", "upload_job": "5001", "flavor": "sft"},
    {"kind": "upload_state", "upload_job": "5001", "state": "RUNNING", "at": "t"},
    {"kind": "consolidate", "attempt": "1", "run": "r", "at": "t", "job": "6001", "flavor": "datagen"},
    {"kind": "db_register", "attempt": "1", "run": "r", "at": "t", "outcome": "ok"},
    {"kind": "cancel", "run": "r", "at": "t", "by": "ana", "result": "UNKNOWN: outcome UNKNOWN: sent, then dropped"},
    {"kind": "evidence", "at": "t", "tail": "hung at step 903"},
]


def _store(url: str, jobs: int, acts: int) -> int:
    engine = db.new_engine(url)
    migrate.upgrade(engine, to="0004")
    now = dt.datetime.now(dt.UTC)
    job_rows, act_rows = [], []
    for gen in ("now", "before"):
        for j in range(jobs):
            key = f"leo|{j}"
            handoff = {"run": "r", "rule": "liveness_stale", "action": "kill-approval", "evidence": LINE.format(j=j)}
            body = {
                "cluster": "leo",
                "job_id": str(j),
                "name": f"rl__{j}",
                "state": "RUNNING",
                "cancel_handoff": handoff,
            }
            job_rows.append(
                {"space": "s", "gen": gen, "job_key": key, "body": json.dumps(body, sort_keys=True), "updated_at": now}
            )
            act_rows += [
                {"space": "s", "gen": gen, "job_key": key, "seq": n, "body": json.dumps(OLD[n % len(OLD)]), "updated_at": now}
                for n in range(acts)
            ]  # fmt: skip
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO sweep_state_jobs (space, gen, job_key, body, updated_at) VALUES (:space, :gen, :job_key, :body, :updated_at)"), job_rows)  # fmt: skip
        conn.execute(sa.text("INSERT INTO sweep_state_acts (space, gen, job_key, seq, body, updated_at) VALUES (:space, :gen, :job_key, :seq, :body, :updated_at)"), act_rows)  # fmt: skip
    return len(act_rows)


_CHILD = """
import re, sys, time
from pathlib import Path
from sweep_core.state import db, migrate
hwm = lambda: int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024
engine = db.new_engine(sys.argv[1])
migrate.current(engine)
rss0 = hwm()
t0 = time.perf_counter()
done = migrate.upgrade(engine)
print(time.perf_counter() - t0, rss0, hwm(), ",".join(done))
"""


def _measure(url: str, jobs: int, acts: int, where: str) -> None:
    """The upgrade in a process of its own (its time and peak RSS growth are the migration's)."""
    rows = _store(url, jobs, acts)
    out = subprocess.run([sys.executable, "-c", _CHILD, url], capture_output=True, text=True, check=True).stdout
    took, rss0, rss1, done = out.split()[-4:]
    assert done == "0005", out
    with db.new_engine(url).connect() as conn:
        said = conn.execute(sa.text("SELECT count(*) FROM sweep_state_acts WHERE body LIKE '%\"act\":%'")).scalar()
    print(f"{where}: {jobs:,} jobs x 2 generations, {rows:,} act rows ({said:,} now say their act): "
          f"0004 -> 0005 in {float(took):.1f} s, peak RSS {float(rss1):.0f} MiB (before it {float(rss0):.0f} MiB)")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pg", action="store_true")
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--acts", type=int, default=12)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        _measure(f"sqlite:///{tmp}/state.db", args.jobs, args.acts, "SQLite")
    if args.pg:
        import throwaway_pg

        with throwaway_pg.running() as url:
            _measure(url, args.jobs, args.acts, "PostgreSQL")


if __name__ == "__main__":
    main()
