"""What reading RUNNING logs whole and incrementally (sweep_core.fanin.cursor) costs the login node
per sweep: the real gather.sh + read_logs.py run by bash on this machine with the Slurm stand-ins
of tests/fixtures/slurm_stub (no cluster, no SSH), against generated logs in a tmp dir.

Three scenes, each printed as bytes read (the cursor records' sum), wall, CPU (user+sys of bash
and every process it started, RUSAGE_CHILDREN) and the script's stdout size (what SSH carries):

- first sight: N_FIRST jobs whose logs (SIZE_MB of real lines each, a metric dict every ~1 MiB)
  are read whole from 0;
- steady: N_STEADY jobs whose logs are SIZE_MB each (a sparse hole, then real lines: the disk
  holds only what was appended) with the ledger's cursor at the old end, APPEND_KB appended
  since: only the appended bytes are read;
- idle: the same, nothing appended (the stand-ins' and the script's own cost: subtract it).

    source scripts/env.sh && python benchmarks/log_cursor.py [N_FIRST SIZE_MB N_STEADY APPEND_KB]
Defaults 20 100 1000 64. Page-cache reads on a local disk: a cluster's shared filesystem is slower.

The byte budget (sweep.yaml ``gather.log_budget_bytes``) on a first sight of N jobs' SIZE_MB logs
(one real file, N hard links: N paths, the page cache holds one), BUDGET_MIB 0 = unbounded:

    python benchmarks/log_cursor.py first-sight N SIZE_MB BUDGET_MIB
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "plugins")]

from sweep_core.config.sweep import load_sweep_config  # noqa: E402
from sweep_core.fanin.cursor import KEEP_LINES, prefilter  # noqa: E402
from sweep_core.fanin.metrics.config import metrics_config  # noqa: E402
from sweep_core.slurm.gather import GatherRequest, build_gather_script, parse_gather_output  # noqa: E402
from sweep_core.slurm.snapshot import parse_cursor  # noqa: E402

STUBS = ROOT / "tests" / "fixtures" / "slurm_stub"
LITERALS, _ = prefilter(metrics_config(load_sweep_config(ROOT / "include" / "sweep.yaml").metrics))
LINES = [
    b"(RolloutWorker pid=4411) INFO 12-03 14:05:11 engine.py:312 Avg prompt throughput: 1803.2 tokens/s, Running: 41 reqs\n",
    b"(TaskRunner pid=88) sampling 256 prompts x 8 rollouts, queue depth 17, kv cache usage 43.1%\n",
    b'[2026-12-03 14:05:12,113][httpx][INFO] - HTTP Request: POST http://10.0.0.7:8000/v1/completions "HTTP/1.1 200 OK"\n',
]


def _block(step: int) -> bytes:
    """~1 MiB of engine output, then one metric dict line and one progress line."""
    body = b"".join(LINES) * ((1 << 20) // sum(map(len, LINES)))
    d = {"trainer/global_step": step, "trainer/max_steps": 10_000, "reward/mean": 0.5, "actor/grad_norm": 1.1}
    return body + b"WANDB_MIRROR " + json.dumps(d).encode() + b"\n" + f"Training Step Progress: {step}/10000\n".encode()


def _run(
    tmp: Path, logs: dict[str, Path], cursors: dict[str, tuple[int, int, int]], budget: int = 0
) -> dict[str, float]:
    stub = tmp / "stub"
    stub.mkdir(exist_ok=True)
    rows = [
        {"i": j, "A": j, "T": "RUNNING", "M": "5:00", "l": "UNLIMITED", "D": "1", "P": "gpu", "R": "n1",
         "j": f"rl__bench{j}", "o": str(p)}
        for j, p in logs.items()
    ]  # fmt: skip
    (stub / "squeue_RUNNING.json").write_text(json.dumps(rows))
    (stub / "sacct.json").write_text("[]")
    now = int(time.time())
    req = GatherRequest(
        user="sweep", window_start=now - 3600, window_end=now - 60, settle_s=0, max_jobs=len(logs) + 1,
        incremental=True, cursors=cursors, literals=LITERALS, keep_lines=KEEP_LINES, log_budget=budget,
    )  # fmt: skip
    script, marker = build_gather_script(req)
    env = {**os.environ, "PATH": f"{STUBS}:{os.environ['PATH']}", "STUB_DIR": str(stub), "TMPDIR": str(tmp)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(["bash", "-s"], input=script.encode(), capture_output=True, env=env, timeout=7200)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = parse_gather_output(proc.stdout.decode("utf-8", "replace"), marker)
    assert out.complete, proc.stderr[-2000:]
    curs = [parse_cursor(r.stdout) for k, r in out.records.items() if k.startswith("cursor:")]
    assert len(curs) == len(logs), f"{len(curs)} cursors for {len(logs)} logs"
    return {
        "read": sum(int(c["read"]) + int(c.get("tail", 0)) for c in curs),  # history + newest tails
        "behind": sum(1 for c in curs if "tail" in c),
        "wall": wall,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "out": len(proc.stdout),
        "cursors": {
            k.split(":", 1)[1]: parse_cursor(r.stdout) for k, r in out.records.items() if k.startswith("cursor:")
        },
    }


def _line(scene: str, n: int, r: dict[str, float]) -> None:
    print(
        f"{scene:<34} jobs {n:>5}  read {r['read'] / 2**20:>9.1f} MiB  wall {r['wall']:>7.2f} s"
        f"  cpu {r['cpu']:>7.2f} s  ssh stdout {r['out'] / 2**20:>6.2f} MiB"
    )


def first_sight(n: int, size_mb: int, budget_mib: int) -> None:
    """N first sights of SIZE_MB logs under a budget (0: unbounded)."""
    with tempfile.TemporaryDirectory(prefix="log-cursor-") as d:
        tmp = Path(d)
        one = tmp / "one.out"
        blocks = [_block(i) for i in range(8)]
        with open(one, "wb") as f:
            for i in range(size_mb):
                f.write(blocks[i % 8])
        logs = {}
        for j in range(n):
            p = logs[str(1000 + j)] = tmp / f"first-{j}.out"
            os.link(one, p)
        r = _run(tmp, logs, {}, budget_mib << 20)
        scene = f"first sight, budget {budget_mib} MiB" if budget_mib else "first sight, no budget"
        _line(scene, n, r)
        print(f"{'':<34} jobs still reading history: {r['behind']}")


def main(argv: list[str]) -> None:
    if argv[:1] == ["first-sight"]:
        first_sight(*(int(a) for a in argv[1:4]))
        return
    n_first, size_mb, n_steady, append_kb = (int(a) for a in (argv + ["20", "100", "1000", "64"][len(argv) :]))
    with tempfile.TemporaryDirectory(prefix="log-cursor-") as d:
        tmp = Path(d)
        blocks = [_block(i) for i in range(8)]
        first = {}
        for j in range(n_first):
            p = first[str(1000 + j)] = tmp / f"first-{j}.out"
            with open(p, "wb") as f:
                for i in range(size_mb):
                    f.write(blocks[i % 8])
        r = _run(tmp, first, {})
        _line(f"first sight ({size_mb} MB logs, from 0)", n_first, r)
        print(
            f"{'':<34} per GiB read: {r['cpu'] / (r['read'] / 2**30):.2f} s CPU, {r['wall'] / (r['read'] / 2**30):.2f} s wall"
        )
        for p in first.values():
            p.unlink()
        steady, cursors = {}, {}
        tail = b"".join(LINES) * (append_kb * 1024 // sum(map(len, LINES))) + blocks[0][-300:]
        for j in range(n_steady):
            p = steady[str(5000 + j)] = tmp / f"steady-{j}.out"
            with open(p, "wb") as f:
                f.truncate(size_mb * 10**6)  # a hole: the old bytes, already read, never read again
            st = p.stat()
            cursors[str(5000 + j)] = (st.st_size, st.st_ino, st.st_dev)
        idle = _run(tmp, steady, cursors)
        for p in steady.values():
            with open(p, "ab") as f:
                f.write(tail)
        r = _run(tmp, steady, cursors)
        _line(f"steady ({size_mb} MB logs, +{append_kb} KiB)", n_steady, r)
        _line("idle (nothing appended)", n_steady, idle)
        print(
            f"{'':<34} reading the appended bytes: {r['cpu'] - idle['cpu']:.2f} s CPU, {r['wall'] - idle['wall']:.2f} s wall"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
