"""What a first sight of a TensorBoard event file costs the login node's reader (programs/streams.py)
at 1,000 RUNNING jobs, in its one process: bytes read, seconds, bytes sent back; then the next sweep
(every cursor caught up) and a sweep where each file grew by 10 steps.

Each job's dir holds a real event file written by tensorboardX's SummaryWriter as verl's TensorBoard
adapter writes (one add_scalar per key per step): STEPS steps of TAGS keys (verl's actor/critic/
timing/perf names, a quarter of them the vocabulary's: reward, entropy, grad_norm, loss, lr). The
1,000 dirs hold hard links of one file (page cache warm: this measures the decode, not the disk).
The sweep's limits are sweep.yaml's defaults (gather.stream_file_bytes, stream_budget_bytes,
stream_points). Usage: source scripts/env.sh && python benchmarks/streams.py [--jobs N] [--steps S]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))

from tensorboardX import SummaryWriter  # noqa: E402

from sweep_core.config.sweep import load_sweep_config  # noqa: E402
from sweep_core.fanin.streams import STREAM_WORDS as WORDS  # noqa: E402
from sweep_core.fanin.streams import bound_points  # noqa: E402
from sweep_core.records.models import Job, json_safe  # noqa: E402
from sweep_core.records.vocab import Bucket  # noqa: E402
from sweep_core.slurm.streams import parse_stream  # noqa: E402

_spec = importlib.util.spec_from_file_location("streams", ROOT / "plugins/sweep_core/programs/streams.py")
assert _spec and _spec.loader
st = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(st)

KEYS = [f"actor/{k}" for k in ("entropy", "grad_norm", "pg_loss", "pg_clipfrac", "ppo_kl", "lr")]
KEYS += [f"critic/{k}/{s}" for k in ("score", "rewards", "advantages", "returns") for s in ("mean", "max", "min")]
KEYS += [f"response_length/{s}" for s in ("mean", "max", "min", "clip_ratio")]
KEYS += [f"timing_s/{k}" for k in ("gen", "ref", "old_log_prob", "adv", "update_actor", "step", "testing")]
KEYS += [f"perf/{k}" for k in ("throughput", "time_per_step", "total_num_tokens", "max_memory_allocated_gb")]


class Out:
    """read_logs.py's record sink, counting bytes instead of printing."""

    def __init__(self) -> None:
        self.bytes = 0
        self.records: dict[bytes, bytes] = {}

    def rec(self, name: bytes, rc: int, out: bytes = b"", err: bytes = b"") -> None:
        self.bytes += len(name) + len(out) + len(err) + 8
        self.records[name] = out


def event_file(d: Path, steps: int, start: int = 0) -> None:
    w = SummaryWriter(str(d))
    for s in range(start, start + steps):
        for i, k in enumerate(KEYS):
            w.add_scalar(k, 0.001 * s + i, s)
    w.close()


CPU: list[float] = []  # each sweep's CPU seconds (user + sys of this process)


def sweep(reader: st.StreamReader, jobs: list[tuple[bytes, Path]], out: Out) -> float:
    """Wall seconds of one sweep's stream reads (its CPU seconds appended to CPU)."""
    t0, c0 = time.perf_counter(), time.process_time()
    for job_id, d in jobs:
        reader.job(out, job_id, b"rl__bench_" + job_id, os.fsencode(d.parent), lambda p, d=d: os.fsencode(d))
    CPU.append(time.process_time() - c0)
    return time.perf_counter() - t0


def cursors_of(out: Out) -> dict[bytes, dict[bytes, tuple[int, ...]]]:
    cur: dict[bytes, dict[bytes, tuple[int, ...]]] = {}
    for name, text in out.records.items():
        if name.startswith(b"stream:") and text:
            head = text.split(b"\n", 1)[0].split(b"\t")
            c = [int(x) for x in head[2].split()[:6]]
            cur.setdefault(name.split(b":")[1], {})[head[1]] = tuple(c)
    return cur


def xcom_points(out: Out, bound: int) -> int:
    """Bytes of the points the digest keeps of these records (Job.points as XCom's JSON)."""
    total = 0
    for name, text in out.records.items():
        if name.startswith(b"stream:") and text:
            job = Job("c", name.split(b":")[1].decode(), "rl__bench", "RUNNING", "squeue", bucket=Bucket.RL)
            job.streams = [parse_stream(text.decode())]
            total += len(json.dumps(json_safe(bound_points(job, None, "rl", bound))))
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    g = load_sweep_config(ROOT / "include" / "sweep.yaml").gather
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        event_file(src, args.steps)
        (f,) = src.iterdir()
        size = f.stat().st_size
        jobs = []
        for n in range(args.jobs):
            d = Path(tmp) / "tb" / f"j{n}"
            d.mkdir(parents=True)
            os.link(f, d / f.name)
            jobs.append((str(1000 + n).encode(), d))

        def reader(cur: dict[bytes, dict[bytes, tuple[int, ...]]]) -> st.StreamReader:
            return st.StreamReader([b"x"], ["^rl__"], list(WORDS), cur, g.stream_file_bytes,
                                   g.stream_budget_bytes, g.stream_points)  # fmt: skip

        print(f"event file: {args.steps} steps x {len(KEYS)} tags = {args.steps * len(KEYS)} events, {size:,} bytes")
        print(f"limits: stream_file_bytes {g.stream_file_bytes:,}, stream_budget_bytes {g.stream_budget_bytes:,},"
              f" stream_points {g.stream_points}")  # fmt: skip
        out = Out()
        r = reader({})
        secs = sweep(r, jobs, out)
        read = args.jobs * size if r.left is None else g.stream_budget_bytes - r.left
        whole = sum(1 for c in cursors_of(out).values() for x in c.values() if x[0] == size)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"first sight, {args.jobs} jobs: {secs:.2f} s wall, {CPU[-1]:.2f} s CPU, {read:,} bytes read"
              f" ({read / CPU[-1] / 2**20:.1f} MiB per CPU s), {whole} files read whole within the budget,"
              f" {out.bytes:,} bytes of records back, peak RSS {rss:.0f} MiB")  # fmt: skip
        print(f"  what the gather's XCom carries of it: {xcom_points(out, g.stream_points):,} bytes of points"
              f" (Job.points JSON, {g.stream_points} a metric a job at most)")  # fmt: skip
        cur = cursors_of(out)
        n = 2
        while any(x[0] < size for c in cur.values() for x in c.values()):  # the histories the budget left
            out2 = Out()
            secs2 = sweep(reader(cur), jobs, out2)
            cur = cursors_of(out2)
            whole = sum(1 for c in cur.values() for x in c.values() if x[0] == size)
            print(
                f"sweep {n}, the rest of the histories: {secs2:.2f} s wall, {CPU[-1]:.2f} s CPU, {out2.bytes:,} bytes back,"
                f" {whole} files read whole"
            )
            n += 1
        out3 = Out()
        secs3 = sweep(reader(cur), jobs, out3)
        print(f"sweep {n}, nothing new: {secs3:.2f} s wall, {CPU[-1]:.2f} s CPU, {out3.bytes:,} bytes back")
        more = Path(tmp) / "more"
        event_file(more, args.steps + 10)  # the same writer's file 10 steps on: appended bytes only
        (g2,) = more.iterdir()
        grown = g2.stat().st_size - size
        with open(f, "ab") as fh:  # every hard link grows by the bytes of 10 more steps
            fh.write(g2.read_bytes()[size:])
        out4 = Out()
        secs4 = sweep(reader(cur), jobs, out4)
        print(f"sweep {n + 1}, 10 new steps ({grown:,} bytes) a file: {secs4:.2f} s wall, {CPU[-1]:.2f} s CPU,"
              f" {out4.bytes:,} bytes back")  # fmt: skip


if __name__ == "__main__":
    main()
