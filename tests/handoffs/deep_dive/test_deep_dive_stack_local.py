"""The deep-dive's Python stack dump on the bundled Slurm cluster (ptrace blocked -> faulthandler): a
real sbatch python job registers faulthandler on SIGUSR1 (ops.md faulthandler_signal: USR1 says its
launcher does), then hangs silently in named functions, its stderr in its own file; once its log has
stopped advancing (its mtime set back), sweep_rl_deep_dive's session sends the signal through
`srun --jobid --overlap` and the verdict quotes each thread's top frames. The job is still RUNNING
after it (the registered signal never kills); with the key unset no signal is sent and that is said."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from lab import LAB_OPS, LOGS
from sweep_runner import run_dag

pytestmark = pytest.mark.cluster

HUNG = """import faulthandler, signal, threading, time
faulthandler.register(signal.SIGUSR1, all_threads=True)
def allreduce_wait(ev):
    ev.wait()
def nccl_watchdog():
    allreduce_wait(threading.Event())
def generate_rollouts():
    print("step 1 done", flush=True)
    while True:
        time.sleep(1)
threading.Thread(target=nccl_watchdog, daemon=True).start()
generate_rollouts()
"""


def _ops(tmp_path, extra: str):
    ops = tmp_path / "ops"
    shutil.copytree(LAB_OPS / "local", ops / "local")
    md = ops / "local" / "ops.md"
    md.write_text(md.read_text().replace("gpu_mem_ceiling: 0.9\n", f"gpu_mem_ceiling: 0.9\n{extra}"))
    return ops


def test_a_hung_python_job_has_its_thread_stacks_in_the_verdict_and_keeps_running(local_cluster, tag, tmp_path) -> None:
    c = local_cluster
    name = f"rl__{tag}_hung"
    script = LOGS / f"{name}.py"
    script.write_text(HUNG)
    os.chmod(script, 0o644)
    jid = c.submit(name, f"exec python3 {script}", "-e", str(LOGS / "%x-%j.err"))
    c.wait_running(jid)
    log = c.wait_log(jid)
    err = LOGS / f"{name}-{jid}.err"
    old = time.time() - 3 * 3600  # silent for 3 h: past deep_dive.advancing_minutes
    os.utime(log, (old, old))
    job = [{"cluster": "local", "job_id": jid, "name": name}]

    (tmp_path / "off").mkdir()
    off = run_dag("sweep_rl_deep_dive", {"jobs": job}, tmp_path / "off")
    (v,) = off.values["probe"]["verdicts"]
    off_line = "Python stacks (faulthandler): off: ops.md faulthandler_signal is unset"
    assert any(u.startswith(off_line) for u in v["unknown"]), v
    assert "Thread 0x" not in err.read_text()  # nothing was sent

    run = run_dag("sweep_rl_deep_dive", {"jobs": job}, tmp_path, ops_dir=_ops(tmp_path, "faulthandler_signal: USR1\n"))
    assert run.state == "success", run.task_states
    (v,) = run.values["probe"]["verdicts"]
    head = next((e for e in v["evidence"] if e.startswith("Python stacks by faulthandler")), None)
    assert head is not None and "1 python process(es): python3" in head, v
    threads = [e for e in v["evidence"] if e.strip().startswith("thread 0x")]
    assert any("(current): generate_rollouts (" in t for t in threads), threads
    assert any("wait (" in t and "allreduce_wait (" in t for t in threads), threads  # top frames, newest first
    assert c.squeue_state(jid) == "RUNNING"  # the registered signal did not end it
    assert "(most recent call first)" in err.read_text() and "Thread 0x" not in log.read_text()
    assert "generate_rollouts (" in Path(run.values["record"]).read_text()  # the run log says it too
