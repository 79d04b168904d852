"""The faulthandler dump reader on REAL dumps: a python subprocess registers faulthandler on SIGUSR1
(as a launcher does), hangs in named functions on two threads, is sent the signal and keeps running;
the dump it wrote to its stderr is read back as threads with their top frames (most recent first),
then turned into the deep-dive's evidence lines (or said why not: off, no block written)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

from sweep_core.config.deep_dive_schema import DeepDiveSection
from sweep_core.handoffs.deep_dive.inputs import DeepDiveInput
from sweep_core.handoffs.deep_dive.plan import decide
from sweep_core.handoffs.deep_dive.remote import STACK_OFF, Gathered, _read_stack
from sweep_core.handoffs.deep_dive.stacks import parse_dumps
from sweep_core.handoffs.deep_dive.usecase import stack_evidence
from sweep_core.records.remote_result import CommandResult
from sweep_core.slurm.gather import GatherOutput

HUNG = textwrap.dedent(
    """
    import faulthandler, signal, sys, threading, time
    faulthandler.register(signal.SIGUSR1, all_threads={all_threads})
    def collective_wait(ev):
        ev.wait()
    def nccl_worker():
        collective_wait(threading.Event())
    def rollout_loop():
        print("ready", flush=True)
        while True:
            time.sleep(0.05)
    def main():
        threading.Thread(target=nccl_worker, daemon=True).start()
        rollout_loop()
    main()
    """
)


def _dump(tmp_path, all_threads: bool = True) -> str:
    """What a hung python wrote to its stderr after one SIGUSR1 (it is still alive after it)."""
    err = tmp_path / "job.err"
    script = tmp_path / "job.py"
    script.write_text(HUNG.format(all_threads=all_threads))
    with err.open("wb") as fh:
        p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=fh, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        time.sleep(0.2)  # the worker thread reached its wait
        p.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while "rollout_loop" not in err.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert p.poll() is None, "the registered signal must not end the process"
    finally:
        p.kill()
        p.wait()
    return err.read_text()


def test_a_real_all_threads_dump_reads_as_each_threads_frames_most_recent_first(tmp_path) -> None:
    text = "step 41 done\n" + _dump(tmp_path) + "step 42 done\n"
    threads = parse_dumps(text)
    by_func = {t.frames[0].func: t for t in threads}
    assert set(by_func) >= {"wait", "rollout_loop"}, threads  # Event.wait's Condition.wait: "wait"
    worker = next(t for t in threads if any(f.func == "nccl_worker" for f in t.frames))
    funcs = [f.func for f in worker.frames]
    assert funcs.index("collective_wait") < funcs.index("nccl_worker")  # most recent call first
    assert not worker.current and worker.thread.startswith("0x")
    main = next(t for t in threads if t.current)
    assert [f.func for f in main.frames[:3]] == ["rollout_loop", "main", "<module>"]
    assert main.frames[0].file.endswith("job.py") and main.frames[0].line.isdigit()
    assert main.line(2).startswith(f"thread {main.thread} (current): rollout_loop (job.py:")
    assert "<- main (job.py:" in main.line(2) and "(+1 more)" in main.line(2)


def test_a_one_thread_dump_is_a_stack_of_the_current_thread(tmp_path) -> None:
    (t,) = parse_dumps(_dump(tmp_path, all_threads=False))
    assert t.current and t.thread == ""
    assert [f.func for f in t.frames] == ["rollout_loop", "main", "<module>"]


def _gathered(records: dict[str, CommandResult]) -> Gathered:
    g = Gathered()
    _read_stack(GatherOutput(records=records, complete=True, marker="@@M@@"), 0, g, "", True)
    return g


def test_the_dump_becomes_evidence_lines_in_the_verdict_never_a_kill_signal(tmp_path) -> None:
    text = _dump(tmp_path)
    g = _gathered(
        {
            "stacksig:0": CommandResult(0, "0: skipped 900 python3: does not catch SIGUSR1\n0: sent 901 python3\n", ""),
            "stack:0": CommandResult(0, text, "/logs/rl__x-7.out"),
        }
    )
    lines, note = stack_evidence(g, 2)
    assert lines is not None and note == "read from /logs/rl__x-7.out"
    assert lines[0].startswith("Python stacks by faulthandler (1 python process(es): python3 pid 901): ")
    assert any("(current): rollout_loop (job.py:" in line for line in lines)
    inp = DeepDiveInput("c", "7", "rl__x", series=[], stacks=lines, stack_note=note)
    v = decide(inp, DeepDiveSection())
    assert v.verdict == "NO-KILL" and lines[0] in v.evidence  # evidence for a human, not a signal


@pytest.mark.parametrize(
    ("records", "said"),
    [
        ({"nostack:0": CommandResult(0, "", "not asked: the log advances")}, ""),
        (
            {"nostack:0": CommandResult(2, "/x/err", "StdErr outside the ops.md log_roots: no signal sent")},
            "no signal sent: StdErr outside the ops.md log_roots: no signal sent (/x/err)",
        ),
        (
            {"stacksig:0": CommandResult(0, "0: skipped 900 python3: does not catch SIGUSR1\n", "")},
            "no signal sent: 0: skipped 900 python3: does not catch SIGUSR1",
        ),
        ({"stacksig:0": CommandResult(0, "", "")}, "no signal sent: no python process of the job found (rc 0)"),
    ],
)
def test_no_dump_says_why_and_an_advancing_log_says_nothing(records, said) -> None:
    g = _gathered(records)
    assert g.stack_text is None and g.stack_note == said
    v = decide(DeepDiveInput("c", "7", "rl__x", series=[], stack_note=g.stack_note), DeepDiveSection())
    assert any(u.startswith("Python stacks") for u in v.unknown) is bool(said)


def test_a_signal_with_no_block_after_it_is_said_and_off_is_said_with_its_reason() -> None:
    g = _gathered(
        {"stacksig:0": CommandResult(0, "0: sent 901 python3\n", ""), "stack:0": CommandResult(0, "step 9\n", "/l/e")}
    )
    lines, note = stack_evidence(g, 3)
    assert lines is None
    assert note == (
        "signal sent to 1 python process(es): python3 pid 901, "
        "but no faulthandler block in the 7 byte(s) read from /l/e after it"
    )
    off = Gathered()
    assert stack_evidence(off, 3) == (None, STACK_OFF)
    v = decide(DeepDiveInput("c", "7", "rl__x", series=[], stack_note=STACK_OFF), DeepDiveSection())
    assert "Python stacks (faulthandler): " + STACK_OFF in v.unknown
    assert "unregistered, SIGUSR1 terminates the process" in STACK_OFF


def test_check_config_says_whether_a_silent_job_gets_the_faulthandler_signal_and_why_not() -> None:
    from pathlib import Path

    from handoff_fakes import cluster

    from sweep_core.admin.switches import cluster_switches
    from sweep_core.config.sweep import load_sweep_config

    sweep = load_sweep_config(Path(__file__).resolve().parents[3] / "include" / "sweep.yaml")

    def line(**kw: str) -> str:
        cfg = cluster("x", log_roots=("/l",), **kw)
        return next(s for s in cluster_switches(cfg, sweep, None, "ops/x/ops.md") if s.handoff == "deep_dive").why

    off = "Python stacks OFF: needs faulthandler_signal in ops/x/ops.md, set only when the launcher registers"
    assert off in line()
    assert "Python stacks of a silent job: SIGUSR2 to its python processes that catch it" in line(
        faulthandler_signal="USR2"
    )
