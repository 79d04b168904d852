"""RUNNING logs read whole and incrementally from the ledger's cursor: the real gather.sh and
either reader (read_logs.py, or without python3 the shell path: gather_shell.sh + read_on.awk) run
by bash against real files in a tmp dir (squeue/sacct: the stand-ins of
tests/fixtures/slurm_stub), the snapshot folded into a real ledger, the next gather reading on
from the cursor the fold stored."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from stub_gather import run_stubbed

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.cursor import before_digest, carry, cursors_for, prefilter
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.fanin.render import _job_note
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.fold import fold_sweep
from sweep_core.pipeline.steps import digest_step
from sweep_core.programs import DIR as PROGRAMS
from sweep_core.records.models import ClusterSnapshot
from sweep_core.slurm.gather import GatherRequest
from sweep_core.slurm.snapshot import snapshot_from_output

ROOT = Path(__file__).resolve().parents[2]
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")
LITERALS, _ = prefilter(metrics_config(CONFIG.metrics))
NOISE = b"engine: rollout worker 3 heartbeat, queue depth 17, nothing to see here\n"


@pytest.fixture(params=["python3", ""], ids=["python", "shell"])
def reader(request: pytest.FixtureRequest) -> str:
    """ops.md login_python: the login node's python3 (read_logs.py), or none (the shell path)."""
    return str(request.param)


def _dict_line(step: int, reward: float) -> bytes:
    d = {"trainer/global_step": step, "trainer/max_steps": 100, "reward/mean": reward, "actor/grad_norm": 1.3}
    return b"WANDB_MIRROR " + json.dumps(d).encode() + b"\n"


def _gather(tmp: Path, logs: dict[str, Path], ledger: Ledger, run: int, budget: int = 0,
            ended: dict[str, str] | None = None, python: str = "python3") -> ClusterSnapshot:  # fmt: skip
    """One stubbed gather: ``logs`` RUNNING (job id -> its log); ``ended``: job id -> state of jobs
    that ended in the window (their log at ``<tmp>/<id>.out``, ops.md log_pattern ``%j.out``)."""
    rows = [
        {"i": j, "A": j, "T": "RUNNING", "M": "5:00", "l": "UNLIMITED", "D": "1", "P": "debug", "R": "n1",
         "j": f"rl__cursor{j}", "o": str(p)}
        for j, p in logs.items()
    ]  # fmt: skip
    now = int(time.time())
    req = GatherRequest(
        user="sweep",
        window_start=now - 3600,
        window_end=now - 60,
        settle_s=0,
        incremental=True,
        cursors=cursors_for(ledger, "c"),
        literals=LITERALS,
        log_budget=budget,
        log_pattern=str(tmp / "%j.out"),
        python=python,
    )
    finished = [{"JobID": j, "JobIDRaw": j, "State": st, "ExitCode": "1:0", "JobName": f"rl__cursor{j}"}
                for j, st in (ended or {}).items()]  # fmt: skip
    output = run_stubbed(tmp, req, running=rows, finished=finished)
    assert output.get("reader:python" if python else "reader:shell") is not None
    snap = snapshot_from_output("c", output, "login01", "s", f"2026-01-01T00:0{run}:00+00:00")
    before_digest(snap, ledger)
    digest_step([snap], CONFIG)
    carry(snap, ledger)
    return snap


def _fold(ledger: Ledger, snap: ClusterSnapshot, run: int) -> Ledger:
    end = dt.datetime(2026, 1, 1, 0, run, tzinfo=dt.UTC)
    new, _ = fold_sweep(ledger, [snap], run_id=f"r{run}", window_end=end)
    return new


def _jobs(snap: ClusterSnapshot) -> dict[str, object]:
    return {j.job_id: j for j in snap.running or []}


def test_first_sight_reads_whole_log_then_only_appended_bytes_and_carries_metrics(tmp_path, reader: str) -> None:
    log = tmp_path / "rl.out"
    head = _dict_line(7, 0.61) + NOISE * 40_000  # ~2.9 MB: the metric line far outside any bounded tail
    log.write_bytes(head)
    snap = _gather(tmp_path, {"101": log}, Ledger(), 1, python=reader)
    job = _jobs(snap)["101"]
    assert job.log_cursor["why"] == "first" and job.log_cursor["start"] == 0
    assert job.log_cursor["read"] == len(head) and job.log_cursor["offset"] == len(head)
    assert job.metrics["reward"] == 0.61 and job.metrics["step"] == 7  # read from the log's first line
    ledger = _fold(Ledger(), snap, 1)
    entry = ledger.jobs["c|101"]
    assert entry.cursor["offset"] == len(head) and entry.cursor["ino"] == os.stat(log).st_ino
    assert entry.metrics["reward"] == 0.61 and "heartbeat" in entry.log_lines

    more = NOISE * 30 + b"Training Step Progress: 9/100\n"
    with open(log, "ab") as f:
        f.write(more)
    snap2 = _gather(tmp_path, {"101": log}, ledger, 2, python=reader)
    job2 = _jobs(snap2)["101"]
    assert job2.log_cursor["why"] == "cont" and job2.log_cursor["start"] == len(head)
    assert job2.log_cursor["read"] == len(more)  # only the appended bytes were read
    assert job2.metrics["step"] == 9  # the new bytes' step
    assert job2.metrics["reward"] == 0.61  # seen only in the first read: kept from the ledger
    assert "reward" in job2.metrics["carried"] and "step" not in job2.metrics["carried"].split(" from")[0]
    assert "carried: " in _job_note(job2)
    assert not any("reward" in p for p in job2.metric_problems)
    ledger2 = _fold(ledger, snap2, 2)
    assert ledger2.jobs["c|101"].cursor["offset"] == len(head) + len(more)

    snap3 = _gather(tmp_path, {"101": log}, ledger2, 3, python=reader)  # nothing written since: nothing read
    job3 = _jobs(snap3)["101"]
    assert job3.log_cursor["read"] == 0 and job3.metrics["reward"] == 0.61
    assert "Training Step Progress: 9/100" in job3.evidence["last_lines"]  # the ledger's last lines


def test_an_ended_jobs_final_read_goes_on_from_its_running_cursor_and_one_never_seen_from_0_under_the_budget(
    tmp_path, reader: str
) -> None:
    """A job seen RUNNING, then FAILED: its final read is only the bytes after its cursor, its row
    keeps the reward of its first read and shows its last step and traceback. A job never seen
    running is read from 0 under the byte budget; its note says the budget cut its final read."""
    log = tmp_path / "301.out"
    head = _dict_line(7, 0.61) + NOISE * 40_000  # ~2.9 MB: the metric line far outside any bounded tail
    log.write_bytes(head)
    ledger = _fold(Ledger(), _gather(tmp_path, {"301": log}, Ledger(), 1, python=reader), 1)
    end = NOISE * 30 + b"Training Step Progress: 9/100\nTraceback (most recent call last):\nRuntimeError: boom\n"
    with open(log, "ab") as f:
        f.write(end)
    (tmp_path / "302.out").write_bytes(head + end)
    snap = _gather(tmp_path, {}, ledger, 2, budget=100_000, ended={"301": "FAILED", "302": "FAILED"}, python=reader)
    done = {j.job_id: j for j in snap.finished or []}
    gone, never = done["301"], done["302"]
    assert gone.log_cursor["why"] == "cont" and gone.log_cursor["read"] == len(end)  # only the bytes after it
    assert gone.metrics["step"] == 9 and gone.metrics["reward"] == 0.61 and "reward" in gone.metrics["carried"]
    assert "RuntimeError: boom" in gone.evidence["traceback"]
    assert never.log_cursor["why"] == "first" and never.log_cursor["read"] <= 100_000 - len(end)
    assert never.metrics["reward"] == 0.61 and "RuntimeError: boom" in never.evidence["traceback"]
    assert "ended: its final read cut there" in _job_note(never) and "carried" not in never.metrics
    assert _fold(ledger, snap, 2).jobs["c|301"].cursor["offset"] == len(head) + len(end)


def test_truncated_and_replaced_logs_restart_from_zero_and_say_so(tmp_path, reader: str) -> None:
    trunc, repl = tmp_path / "t.out", tmp_path / "r.out"
    for p in (trunc, repl):
        p.write_bytes(_dict_line(5, 0.5) + NOISE * 100)
    ledger = _fold(Ledger(), _gather(tmp_path, {"201": trunc, "202": repl}, Ledger(), 1, python=reader), 1)
    old_ino = os.stat(repl).st_ino
    with open(trunc, "wb") as f:  # requeued without append: same file, shorter
        f.write(_dict_line(1, 0.2))
    keep = tmp_path / "keep.out"  # keeps the old inode in use, so the new file gets another one
    os.rename(repl, keep)
    repl.write_bytes(_dict_line(2, 0.3) + NOISE * 300)  # a new file at the path, longer than the cursor
    assert os.stat(repl).st_ino != old_ino
    snap = _gather(tmp_path, {"201": trunc, "202": repl}, ledger, 2, python=reader)
    t, r = _jobs(snap)["201"], _jobs(snap)["202"]
    assert (t.log_cursor["why"], t.log_cursor["start"], t.log_cursor["read"]) == ("truncated", 0, trunc.stat().st_size)
    assert (r.log_cursor["why"], r.log_cursor["start"], r.log_cursor["read"]) == ("replaced", 0, repl.stat().st_size)
    assert t.metrics["reward"] == 0.2 and r.metrics["reward"] == 0.3  # the new file's, not carried
    assert "carried" not in t.metrics and "carried" not in r.metrics
    assert "log restarted: truncated" in _job_note(t) and "log restarted: replaced" in _job_note(r)
    assert any("201 truncated" in n and "202 replaced" in n for n in snap.notes)
    ledger2 = _fold(ledger, snap, 2)
    assert ledger2.jobs["c|202"].cursor["ino"] == repl.stat().st_ino


def test_a_first_sight_over_the_byte_budget_reads_its_history_over_sweeps_and_its_newest_tail_each(
    tmp_path, reader: str
) -> None:
    budget = 1 << 20
    caught_up, big = tmp_path / "a.out", tmp_path / "b.out"
    caught_up.write_bytes(_dict_line(3, 0.3) + NOISE * 10)
    ledger = _fold(Ledger(), _gather(tmp_path, {"102": caught_up}, Ledger(), 1, python=reader), 1)
    big.write_bytes(
        _dict_line(7, 0.61) + NOISE * 20_000 + _dict_line(20, 0.7) + NOISE * 20_000
        + _dict_line(40, 0.9) + b"Training Step Progress: 40/100\n"
    )  # fmt: skip
    appended = NOISE * 40
    with open(caught_up, "ab") as f:
        f.write(appended)
    # squeue lists the first sight first: the job already read up to its cursor still gets its bytes
    snap = _gather(tmp_path, {"101": big, "102": caught_up}, ledger, 2, budget, python=reader)
    b, a = _jobs(snap)["101"], _jobs(snap)["102"]
    assert a.log_cursor["read"] == len(appended) and "tail" not in a.log_cursor
    assert b.log_cursor["why"] == "first" and b.log_cursor["read"] == budget - len(appended)
    assert 0 < b.log_cursor["offset"] <= budget and b.log_cursor["tail"] == 16384
    assert b.metrics["step"] == 40 and b.metrics["reward"] == 0.9  # the newest tail, read this sweep
    size = big.stat().st_size
    note = _job_note(b)
    assert f"reading history: {b.log_cursor['offset'] / 2**20:.1f} of {size / 2**20:.1f} MiB" in note
    ledger = _fold(ledger, snap, 2)
    assert ledger.jobs["c|101"].cursor["offset"] == b.log_cursor["offset"]

    with open(big, "ab") as f:  # the dict line leaves the newest 16 KiB
        f.write(NOISE * 300)
    snap = _gather(tmp_path, {"101": big, "102": caught_up}, ledger, 3, budget, python=reader)
    b = _jobs(snap)["101"]
    assert b.log_cursor["why"] == "cont" and b.log_cursor["start"] == ledger.jobs["c|101"].cursor["offset"]
    assert b.log_cursor["read"] == budget and "tail" in b.log_cursor
    # the history read this sweep holds step 20 / reward 0.7: older than what the last tail showed
    assert b.metrics["step"] == 40 and b.metrics["reward"] == 0.9
    ledger = _fold(ledger, snap, 3)

    snap = _gather(tmp_path, {"101": big, "102": caught_up}, ledger, 4, budget, python=reader)
    b = _jobs(snap)["101"]
    assert b.log_cursor["offset"] == big.stat().st_size and "tail" not in b.log_cursor  # caught up
    assert "reading history" not in _job_note(b) and b.metrics["step"] == 40 and b.metrics["reward"] == 0.9


def test_unterminated_last_line_is_read_again_when_it_ends(tmp_path, reader: str) -> None:
    log = tmp_path / "u.out"
    log.write_bytes(NOISE + b'WANDB_MIRROR {"trainer/global_step": 3, "reward/me')
    ledger = _fold(Ledger(), _gather(tmp_path, {"301": log}, Ledger(), 1, python=reader), 1)
    assert ledger.jobs["c|301"].cursor["offset"] == len(NOISE)  # stops at the last line end
    with open(log, "ab") as f:
        f.write(b'an": 0.9}\n')
    job = _jobs(_gather(tmp_path, {"301": log}, ledger, 2, python=reader))["301"]
    assert job.metrics["reward"] == 0.9 and job.metrics["step"] == 3


def _big_log(tmp: Path, mib: int) -> Path:
    """A log of ``mib`` MiB of noise between a metric line at its start and one at its end."""
    log = tmp / "big.out"
    block = (NOISE * 15_000)[: 1 << 20]
    with open(log, "wb") as f:
        f.write(_dict_line(1, 0.1))
        for _ in range(mib):
            f.write(block)
        f.write(_dict_line(99, 0.9))
    return log


def test_reading_a_100_mb_log_keeps_memory_bounded(tmp_path) -> None:
    log = _big_log(tmp_path, 100)
    code = (
        "import resource, sys; sys.path.insert(0, sys.argv[1]); import read_logs as r;"
        "rc, text, err, cur = r.stream(sys.argv[2].encode(), None, [l.encode() for l in sys.argv[3:]], 50, 16384);"
        "print(cur.decode().split()[5], len(text), text.count(b'WANDB_MIRROR'),"
        " resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(PROGRAMS), str(log), *LITERALS], capture_output=True, text=True, check=True
    ).stdout.split()
    read, text_len, dict_lines, rss_kb = map(int, out)
    assert read == log.stat().st_size > 100 * (1 << 20)
    assert text_len < 1 << 20  # the metric lines and the last bytes, not the log
    assert dict_lines == 2  # the first line's metric dict and the last's, 100 MB apart
    base = subprocess.run(
        [sys.executable, "-c", "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert rss_kb - int(base) < 16 * 1024, (rss_kb, base)  # a few MiB of buffers, not the 100 MB read


def test_python_and_shell_readers_give_the_same_records_read_on_from_cursors(tmp_path) -> None:
    """The same logs and cursors: read_logs.py and the shell path (no python3 on the login node)
    send the same records byte for byte (the core cannot tell them apart): first sights, a cursor
    carried on, a truncated and a replaced log, a read over the byte budget, ended jobs' final
    reads, \\r-ended progress lines, NUL bytes, a metric line longer than the 16 KiB kept of it."""
    ugly = b"\x00bin\xffary " + b"x" * 20_000 + b" WANDB_MIRROR {}\n" + b"it 1/9\rit 2/9\rStep 3\r" + NOISE
    logs = {
        "401": _dict_line(7, 0.61) + NOISE * 40_000 + ugly + b"Training Step Progress: 8/100\nunterminated Step 9",
        "402": _dict_line(1, 0.1) + NOISE * 50 + _dict_line(2, 0.2) + NOISE * 500,
        "403": _dict_line(3, 0.3) + NOISE * 10,
        "404": _dict_line(4, 0.4) + NOISE * 10,
        "405": (_dict_line(5, 0.5) + NOISE * 2_000) * 30,  # over what the budget leaves
        "406": NOISE * 20 + b"Traceback (most recent call last):\nRuntimeError: boom\n",
        "407": _dict_line(9, 0.9) + NOISE * 3 + b"RuntimeError: never seen running\n",
    }
    for j, data in logs.items():
        (tmp_path / f"{j}.out").write_bytes(data)
    st = {j: os.stat(tmp_path / f"{j}.out") for j in logs}
    cursors = {
        "402": (len(_dict_line(1, 0.1) + NOISE * 50), st["402"].st_ino, st["402"].st_dev),  # carried on
        "403": (10**6, st["403"].st_ino, st["403"].st_dev),  # the file is shorter: truncated
        "404": (5, st["404"].st_ino + 1, st["404"].st_dev),  # another inode: replaced
        "406": (len(NOISE) * 10, st["406"].st_ino, st["406"].st_dev),  # ended: on from its cursor
    }
    rows = [
        {"i": j, "A": j, "T": "RUNNING", "M": "5:00", "l": "UNLIMITED", "D": "1", "P": "debug", "R": "n1",
         "j": f"rl__cursor{j}", "o": str(tmp_path / f"{j}.out")}
        for j in ("401", "402", "403", "404", "405")
    ]  # fmt: skip
    finished = [{"JobID": j, "JobIDRaw": j, "State": "FAILED", "ExitCode": "1:0", "JobName": f"rl__cursor{j}"}
                for j in ("406", "407")]  # fmt: skip
    got = {}
    for python, ignore_sigpipe in (("python3", False), ("", False), ("", True)):
        now = int(time.time())
        req = GatherRequest(user="sweep", window_start=now - 3600, window_end=now - 60, settle_s=0, incremental=True,
                            cursors=cursors, literals=LITERALS, log_budget=3 << 20, log_pattern=str(tmp_path / "%j.out"),
                            python=python)  # fmt: skip
        out = run_stubbed(tmp_path, req, running=rows, finished=finished, ignore_sigpipe=ignore_sigpipe)
        # the job records (path, stat, tail, cursor: "<kind>:<id>"); squeue's and sacct's hold the run's marker
        got[python, ignore_sigpipe] = {k: v for k, v in out.records.items() if ":" in k and not k.startswith("reader:")}
    py = got["python3", False]
    whys = {k: v.stdout.split()[6] for k, v in py.items() if "cursor:" in k}
    assert whys == {"cursor:401": "first", "cursor:402": "cont", "cursor:403": "truncated", "cursor:404": "replaced",
                    "cursor:405": "first", "fcursor:406": "cont", "fcursor:407": "first"}  # fmt: skip
    assert int(py["cursor:405"].stdout.split()[8]) > 0  # the budget cut its read: history + newest bytes
    assert "x" * 16_000 in py["tail:401"].stdout and "unterminated Step 9" in py["tail:401"].stdout
    for sh in (got["", False], got["", True]):  # a read cut by head: tail ends by SIGPIPE, or EPIPE if ignored
        assert sorted(py) == sorted(sh)
        for k in py:
            assert py[k] == sh[k], k


def test_the_shell_path_reads_a_50_mb_log_in_bounded_memory(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without python3 the log streams through tail into awk: awk's peak RSS (GNU time, around
    the real awk) stays a few MiB while it reads the whole 50 MB, and both metric lines come back."""
    log = _big_log(tmp_path, 50)
    shim, rss = tmp_path / "shim", tmp_path / "rss"
    shim.mkdir()
    real = shutil.which("awk")
    assert real is not None
    (shim / "awk").write_text(f'#!/bin/sh\nexec /usr/bin/time -f %M -a -o {rss} {os.path.realpath(real)} "$@"\n')
    (shim / "awk").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    now = int(time.time())
    req = GatherRequest(user="sweep", window_start=now - 3600, window_end=now - 60, settle_s=0, incremental=True,
                        literals=LITERALS, python="")  # fmt: skip
    row = {"i": "501", "A": "501", "T": "RUNNING", "M": "5:00", "l": "UNLIMITED", "D": "1", "P": "debug", "R": "n1",
           "j": "rl__big", "o": str(log)}  # fmt: skip
    out = run_stubbed(tmp_path, req, running=[row])
    assert out.get("cursor:501").stdout.split()[5] == str(log.stat().st_size)  # type: ignore[union-attr]
    text = out.get("tail:501").stdout  # type: ignore[union-attr]
    assert text.count("WANDB_MIRROR") == 2 and len(text) < 1 << 20  # the first line's dict and the last's
    peak_kb = [int(x) for x in rss.read_text().split()]
    assert len(peak_kb) == 1 and peak_kb[0] < 16 * 1024, peak_kb  # ONE awk, MiB of lines, not the 50 MB read
