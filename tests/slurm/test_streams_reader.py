"""The login node's metric-stream reader (sweep_core/programs/streams.py) on files the real writers
wrote: TensorBoard event files by tensorboardX 2.6.5's SummaryWriter (requirements-test.txt; the
same TFRecord + Event/Summary protos torch.utils.tensorboard writes), read by the hand-written
wire-format reader; Lightning's metrics.csv and HF's trainer_state.json as their printing code
writes them (tests/fixtures/streams/README.md cites the lines)."""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import os
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from tensorboardX import SummaryWriter
from tensorboardX.proto.summary_pb2 import Summary
from tensorboardX.proto.tensor_pb2 import TensorProto

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("streams", ROOT / "plugins" / "sweep_core" / "programs" / "streams.py")
assert _spec and _spec.loader
st = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(st)
WANT = st.wanted(("step", "reward", "score", "grad", "entropy", "loss", "lr", "learning_rate"))
BIG = 1 << 30


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _event_file(d: Path) -> Path:
    (f,) = [p for p in d.iterdir() if p.name.startswith("events.out.tfevents.")]
    return f


def _read(path: Path, kind: str, cur: tuple[int, ...] | None = None, per_file: int = BIG, keep: int = 1000):
    rc, text, err, n = st.read_stream(os.fsencode(path), kind, cur, per_file, per_file, keep, WANT)
    assert rc == 0, err
    head, _, body = text.decode().partition("\n")
    kind_, path_, cursor = head.split("\t")
    c = cursor.split()
    points: dict[str, list[tuple[int, float]]] = {}
    problems = []
    for line in body.splitlines():
        f = line.split("\t")
        if f[0] == "!":
            problems.append(f[1])
        else:
            points.setdefault(f[0], []).append((int(f[1]), float(f[2])))
    return points, tuple(int(x) for x in c[:6]), c[9], problems, n


def _records(path: Path) -> int:
    """TFRecords in the file (the framing only: u64 length, u32 CRC, data, u32 CRC)."""
    data, i, n = path.read_bytes(), 0, 0
    while i + 12 <= len(data):
        i += 12 + struct.unpack("<Q", data[i : i + 8])[0] + 4
        n += 1 if i <= len(data) else 0
    return n


def _settle(w: SummaryWriter, steps: int) -> None:
    """Wait until the writer's thread has written every queued event (flush() does not drain its
    queue): the file_version record and 5 events a step, ``steps`` steps in all."""
    path = Path(w.file_writer.event_writer._ev_writer._file_name)  # this writer's own file
    want, deadline = 1 + 5 * steps, time.monotonic() + 20
    while _records(path) < want and time.monotonic() < deadline:
        w.flush()
        time.sleep(0.02)
    assert _records(path) == want


def _write(w: SummaryWriter, steps: range) -> dict[str, list[tuple[int, float]]]:
    """verl's TensorBoard adapter's calls (add_scalar per key per step), three kinds of scalar."""
    want: dict[str, list[tuple[int, float]]] = {}
    for s in steps:
        vals = {"critic/rewards/mean": 0.1 * s, "actor/entropy": 1.0 / (s + 1), "perf/throughput": 1000.0 + s}
        for k, v in vals.items():
            w.add_scalar(k, v, s)
        # torch.utils.tensorboard's add_scalar(new_style=True): a TensorProto's float_val
        g = TensorProto(dtype=1, float_val=[2.0 + s])
        w.file_writer.add_summary(Summary(value=[Summary.Value(tag="actor/grad_norm", tensor=g)]), s)
        # a tensor_content scalar (DT_DOUBLE), as TF2's summary ops write them
        t = TensorProto(dtype=2, tensor_content=struct.pack("<d", 0.5 - 0.01 * s))
        w.file_writer.add_summary(Summary(value=[Summary.Value(tag="actor/pg_loss", tensor=t)]), s)
        want.setdefault("critic/rewards/mean", []).append((s, f32(vals["critic/rewards/mean"])))
        want.setdefault("actor/entropy", []).append((s, f32(vals["actor/entropy"])))
        want.setdefault("actor/grad_norm", []).append((s, f32(2.0 + s)))
        want.setdefault("actor/pg_loss", []).append((s, 0.5 - 0.01 * s))
    w.steps_written = getattr(w, "steps_written", 0) + len(steps)  # type: ignore[attr-defined]
    _settle(w, w.steps_written)  # type: ignore[attr-defined]
    return want


def test_tfevents_whole_then_incremental(tmp_path: Path) -> None:
    """First sight reads every scalar from 0 (simple_value, float_val, tensor_content); a tag the
    vocabulary's words do not hold (perf/throughput) does not come back; the next read from the
    cursor brings only the new steps."""
    w = SummaryWriter(str(tmp_path))
    want = _write(w, range(0, 30))
    path = _event_file(tmp_path)
    points, cur, why, problems, n = _read(path, "tfevents")
    assert why == "first" and not problems and n == path.stat().st_size
    assert points == want
    assert cur[0] == path.stat().st_size
    more = _write(w, range(30, 40))
    w.close()
    points2, cur2, why2, _, n2 = _read(path, "tfevents", cur)
    assert why2 == "cont" and n2 == path.stat().st_size - cur[0]
    assert points2 == more  # only the new steps


def test_tfevents_partial_and_corrupt_records(tmp_path: Path) -> None:
    """A record cut by a write in progress is left for the next read (the cursor stops before it);
    a length whose CRC does not match stops the read there, said, never a wrong number."""
    w = SummaryWriter(str(tmp_path))
    _write(w, range(0, 5))
    w.close()
    data = _event_file(tmp_path).read_bytes()
    cut = tmp_path / "cut" / "events.out.tfevents.1.x"
    cut.parent.mkdir()
    cut.write_bytes(data[:-7])
    points, cur, _, problems, _ = _read(cut, "tfevents")
    assert not problems and cur[0] < len(data) - 7
    assert max(s for s, _ in points["critic/rewards/mean"]) == 4 or max(s for s, _ in points["actor/entropy"]) == 4
    bad = bytearray(data)
    bad[cur[0] + 5] ^= 0x40  # a misframed length (huge) of the last whole record's successor
    cut.write_bytes(bytes(bad))
    _, cur2, _, problems2, _ = _read(cut, "tfevents")
    assert cur2[0] == cur[0] and problems2 and "length CRC mismatch" in problems2[0]
    bad[cur[0] + 5] ^= 0x40
    bad[cur[0] + 8] ^= 0xFF  # its length's CRC: checked on the first record a read from the cursor meets
    cut.write_bytes(bytes(bad))
    points3, cur3, why3, problems3, _ = _read(cut, "tfevents", cur)
    assert why3 == "cont" and cur3[0] == cur[0] and not points3 and "length CRC mismatch" in problems3[0]


def test_tfevents_read_over_sweeps_when_over_the_per_file_bytes(tmp_path: Path) -> None:
    """A long history past ``per_file`` bytes is read over several sweeps, none lost, none twice."""
    w = SummaryWriter(str(tmp_path))
    want = _write(w, range(0, 200))
    w.close()
    path = _event_file(tmp_path)
    got: dict[str, list[tuple[int, float]]] = {}
    cur = None
    sweeps = 0
    while cur is None or cur[0] < path.stat().st_size:
        points, cur, _, _, n = _read(path, "tfevents", cur, per_file=20000)
        assert n <= 20000
        for k, v in points.items():
            got.setdefault(k, []).extend(v)
        sweeps += 1
        assert sweeps < 100
    assert sweeps > 2 and got == want


def test_thinning_keeps_the_newest_and_bounds_points(tmp_path: Path) -> None:
    w = SummaryWriter(str(tmp_path))
    _write(w, range(0, 300))
    w.close()
    points, *_ = _read(_event_file(tmp_path), "tfevents", keep=50)
    ent = points["actor/entropy"]
    assert len(ent) <= 50 and ent[-1][0] == 299  # the newest always
    steps = [s for s, _ in ent[:-1]]
    assert steps[0] == 0 and len({b - a for a, b in zip(steps, steps[1:], strict=False)}) == 1  # evenly spaced


def _lightning_csv(path: Path, metrics: list[dict[str, Any]]) -> None:
    """Lightning's _ExperimentWriter.save (fabric/loggers/csv_logs.py; README cites it): the keys of
    all logged dicts merged in order, `step` appended to each, DictWriter with a header."""
    last: dict[str, Any] = {}
    for m in metrics:
        last.update(m)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(last))
        writer.writeheader()
        writer.writerows(metrics)


def test_lightning_csv_incremental_and_rewritten_header(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    rows: list[dict[str, Any]] = [{"train_loss": 2.0 - 0.1 * s, "lr-AdamW": 1e-4, "step": s} for s in range(5)]
    _lightning_csv(path, rows)
    points, cur, why, _, _ = _read(path, "csv")
    assert why == "first" and points["train_loss"] == [(s, 2.0 - 0.1 * s) for s in range(5)]
    assert points["lr-AdamW"][-1] == (4, 1e-4)
    rows += [{"train_loss": 1.4, "lr-AdamW": 1e-4, "step": 5}]
    _lightning_csv(path, rows)  # the whole file again, same header: read on from the cursor
    points, cur, why, _, _ = _read(path, "csv", cur)
    assert why == "cont" and points["train_loss"] == [(5, 1.4)]
    rows += [{"val_loss": 1.9, "step": 5}, {"train_loss": 1.3, "step": 6}]  # a new key: a new header
    _lightning_csv(path, rows)
    points, cur, why, _, _ = _read(path, "csv", cur)
    assert why == "rewritten" and points["train_loss"][-1] == (6, 1.3) and "val_loss" in points


@dataclasses.dataclass
class _State:
    """The fields of transformers' TrainerState that trainer_state.json holds (README cites them)."""

    epoch: float | None = None
    global_step: int = 0
    max_steps: int = 0
    logging_steps: int = 500
    log_history: list[dict[str, float]] = dataclasses.field(default_factory=list)


def _save_state(path: Path, state: _State) -> None:
    # TrainerState.save_to_json: json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"
    path.write_text(json.dumps(dataclasses.asdict(state), indent=2, sort_keys=True) + "\n")


def test_hf_trainer_state_only_new_entries(tmp_path: Path) -> None:
    path = tmp_path / "trainer_state.json"
    state = _State(max_steps=100, logging_steps=10)
    for s in (10, 20):
        state.log_history.append(
            {"epoch": s / 100, "grad_norm": 1.0, "learning_rate": 1e-5, "loss": 2.0 / s, "step": s}
        )
        state.global_step = s
    state.log_history.append({"epoch": 0.2, "eval_loss": 0.9, "step": 20})  # an eval entry: no training column
    _save_state(path, state)
    points, cur, why, _, _ = _read(path, "hf")
    assert why == "first" and points["loss"] == [(10, 0.2), (20, 0.1)] and points["max_steps"] == [(20, 100.0)]
    assert cur[5] == 20
    same, cur_same, why_same, _, n = _read(path, "hf", cur)  # unchanged: nothing read
    assert why_same == "cont" and not same and n == 0
    state.log_history.append({"epoch": 0.3, "grad_norm": 0.8, "learning_rate": 1e-5, "loss": 0.05, "step": 30})
    state.global_step = 30
    _save_state(path, state)
    os.utime(path, (path.stat().st_atime, path.stat().st_mtime + 2))
    points, cur, why, _, _ = _read(path, "hf", cur)
    assert points["loss"] == [(30, 0.05)] and cur[5] == 30


def test_jsonl_lines_and_a_broken_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    lines = [json.dumps({"step": s, "data": {"actor/entropy": 0.5, "critic/score/mean": 0.1 * s}}) for s in (1, 2)]
    path.write_text("\n".join(lines) + "\nnot json\n" + json.dumps({"step": 3, "train/loss": 0.7}) + '\n{"step": 4')
    points, cur, _, problems, _ = _read(path, "jsonl")
    assert points["critic/score/mean"] == [(1, 0.1), (2, 0.2)] and points["train/loss"] == [(3, 0.7)]
    assert problems == ["1 line(s) are no JSON object: skipped"]
    assert cur[0] == path.read_bytes().rfind(b"\n") + 1  # the unterminated last line: read next time


@pytest.mark.parametrize("kind", ["tfevents", "csv", "jsonl", "hf"])
def test_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    rc, _, err, n = st.read_stream(os.fsencode(fifo), kind, None, BIG, BIG, 10, WANT)
    assert rc == 1 and b"not a regular file" in err and n == 0


def test_stream_files_of_a_listing_and_the_runbooks_exclusion() -> None:
    """Depth-1 names only: event files oldest first (a restart's newer file wins a step logged twice), metrics.csv, *.jsonl but never LLaMA-Factory's
    trainer_log.jsonl (runbook §3: SFT numbers "from the .out (NOT trainer_log.jsonl)"), and the newest
    checkpoint-N/'s trainer_state.json opened by name when the dir has none of its own."""
    names = [b"events.out.tfevents.100.h", b"events.out.tfevents.200.h", b"metrics.csv", b"trainer_log.jsonl",
             b"log.jsonl", b"checkpoint-500", b"checkpoint-1000", b"checkpoint-x"]  # fmt: skip
    got = st.stream_files(b"/d", names)
    assert got == [
        ("tfevents", b"/d/events.out.tfevents.100.h"),
        ("tfevents", b"/d/events.out.tfevents.200.h"),
        ("csv", b"/d/metrics.csv"),
        ("jsonl", b"/d/log.jsonl"),
        ("hf", b"/d/checkpoint-1000/trainer_state.json"),
    ]


class _Out:
    def __init__(self) -> None:
        self.records: dict[bytes, tuple[int, bytes, bytes]] = {}

    def rec(self, name: bytes, rc: int, out: bytes = b"", err: bytes = b"") -> None:
        self.records[name] = (rc, out, err)


def test_hostile_streams_cost_only_their_own_record(tmp_path: Path) -> None:
    """Garbage where an event file should be, a CSV with a NUL byte, JSON nested past the parser's
    depth, a trainer_state.json that is a list, a tag holding control characters: each is its own
    record's problem or error; the good file beside them is read."""
    d = tmp_path / "tb"
    d.mkdir()
    (d / "events.out.tfevents.1.garbage").write_bytes(os.urandom(4096))
    (d / "metrics.csv").write_bytes(b"step,train_loss\n1,0.5\n2,\x000.4\n")
    (d / "deep.jsonl").write_text("[" * 100000 + "\n" + json.dumps({"step": 3, "loss": 0.25}) + "\n")
    (d / "trainer_state.json").write_text("[1, 2]")
    w = SummaryWriter(str(d), filename_suffix=".good")
    # a tag with control characters, past add_scalar's own tag clean-up (another writer may not clean)
    w.file_writer.add_summary(Summary(value=[Summary.Value(tag="actor/entropy\n\tevil", simple_value=0.5)]), 7)
    w.close()
    r = st.StreamReader([os.fsencode(d)], ["^rl__"], ["entropy", "loss"], {}, BIG, BIG, 10)
    out = _Out()
    r.job(out, b"9", b"rl__x", b"/", lambda p: p)
    recs = {k: v for k, v in out.records.items() if k.startswith(b"stream:")}
    assert len(recs) == 4  # MAX_FILES: 2 event files, the csv, the jsonl (the state file is past the cap)
    texts = b"\n".join(v[1] + v[2] for v in recs.values()).decode()
    assert "actor/entropy  evil\t7\t0.5" in texts  # control characters made spaces: one line, one point
    assert "corrupt record at byte 0 (length CRC mismatch)" in texts  # the garbage file: said
    assert "train_loss\t1\t0.5" in texts and "train_loss\t2\t0.4" in texts  # the NUL byte dropped
    assert "loss\t3\t0.25" in texts and "1 line(s) are no JSON object" in texts  # the deep line skipped
    assert "reader error" not in texts
    state = st.read_stream(os.fsencode(d / "trainer_state.json"), "hf", None, BIG, BIG, 10, WANT)
    assert state[0] == 0 and b"no log_history list" in state[1]
