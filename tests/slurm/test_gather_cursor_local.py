"""The shell path (a login node without python3, ops.md login_python: '') reads logs on from the
ledger's cursor on the real cluster over real SSH: a RUNNING job whose metrics sit far before a
stretch of other output longer than the bounded tail still shows them, the next sweep reads only
the bytes written since, a truncated or replaced log restarts the cursor and says so, and the
login node's python3 reader gives the same records for the same logs."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest
from gather_reference import run_on_login01
from lab import LOGS, USER, lab_user
from test_gather_cursor import CONFIG, LITERALS, NOISE, _dict_line, _fold

from sweep_core.fanin.cursor import before_digest, carry, cursors_for
from sweep_core.fanin.render import _job_note
from sweep_core.ledger.entries import Ledger
from sweep_core.pipeline.steps import digest_step
from sweep_core.records.models import ClusterSnapshot, Job
from sweep_core.slurm.gather import GatherOutput, GatherRequest, build_gather_script, parse_gather_output
from sweep_core.slurm.snapshot import snapshot_from_output

pytestmark = pytest.mark.cluster
N_NOISE = 3_000  # ~220 KB of other output after the metric line: far more than the 16 KiB tail


def _gather(
    req: GatherRequest, ledger: Ledger, run: int, strace: bool = False
) -> tuple[GatherOutput, ClusterSnapshot, int | None]:
    """One gather over SSH on login01, its snapshot digested against the ledger (as the DAG does)."""
    script, marker = build_gather_script(dataclasses.replace(req, cursors=cursors_for(ledger, "local")))
    remote = run_on_login01(script, strace=strace)
    out = parse_gather_output(remote.stdout, marker)
    assert out.complete
    snap = snapshot_from_output("local", out, "login01", "s", f"2026-01-01T00:0{run}:00+00:00")
    before_digest(snap, ledger)
    digest_step([snap], CONFIG)
    carry(snap, ledger)
    return out, snap, remote.processes


def _job(snap: ClusterSnapshot, job_id: str) -> Job:
    return next(j for j in snap.running or [] if j.job_id == job_id)


def _mine(out: GatherOutput, job_id: str) -> dict[str, object]:
    return {k: v for k, v in out.records.items() if k.endswith(f":{job_id}") and not k.startswith("reader")}


def _wait_size(path: Path, size: int, timeout: float = 60) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if path.exists() and path.stat().st_size >= size:
            return
        time.sleep(0.3)
    raise AssertionError(f"{path}: not {size} bytes after {timeout}s")


def test_shell_path_reads_on_from_the_cursor_on_the_real_cluster(local_cluster, tag) -> None:
    head = _dict_line(7, 0.61)
    cmd = f"echo '{head.decode().strip()}'; yes '{NOISE.decode().strip()}' | head -n {N_NOISE}; exec sleep 600"
    start = int(time.time())  # the window: no job an earlier test ended is read (the process counts compare)
    job = local_cluster.submit(f"rl__{tag}_cur", cmd)
    local_cluster.wait_running(job)
    log = LOGS / f"rl__{tag}_cur-{job}.out"
    size = len(head) + N_NOISE * len(NOISE)
    _wait_size(log, size)
    now = int(time.time())
    req = GatherRequest(user=USER, window_start=start, window_end=now - 1, settle_s=0, python="",
                        incremental=True, literals=LITERALS, log_pattern=str(LOGS / "%x-%j.out"))  # fmt: skip

    # the bounded tail (the shell path before): the metric line is out of its reach
    _, old, tails_procs = _gather(dataclasses.replace(req, incremental=False), Ledger(), 1, strace=True)
    assert _job(old, job).metrics.get("reward") is None and _job(old, job).metrics.get("step") is None

    out, snap, cursor_procs = _gather(req, Ledger(), 1, strace=True)
    assert out.get("reader:shell") is not None
    first = _job(snap, job)
    assert (first.log_cursor["why"], first.log_cursor["start"], first.log_cursor["read"]) == ("first", 0, size)
    assert first.metrics["step"] == 7 and first.metrics["reward"] == 0.61  # 220 KB before the log's end
    # the cursor reads cost the sweep two processes more (one awk, its pipeline), not one per log
    assert tails_procs is not None and cursor_procs is not None and cursor_procs <= tails_procs + 2
    py_out, _, _ = _gather(dataclasses.replace(req, python="python3"), Ledger(), 1)
    assert py_out.get("reader:python") is not None
    assert _mine(py_out, job) == _mine(out, job) and f"cursor:{job}" in _mine(out, job)  # byte for byte
    ledger = _fold(Ledger(), snap, 1)
    assert ledger.jobs[f"local|{job}"].cursor["offset"] == size

    more = NOISE * 40 + b"Training Step Progress: 9/100\n"
    with open(log, "ab") as f:
        f.write(more)
    snap2 = _gather(req, ledger, 2)[1]
    second = _job(snap2, job)
    assert (second.log_cursor["why"], second.log_cursor["start"]) == ("cont", size)
    assert second.log_cursor["read"] == len(more)  # only the bytes written since
    assert second.metrics["step"] == 9 and second.metrics["reward"] == 0.61  # reward carried from the ledger
    ledger = _fold(ledger, snap2, 2)

    with open(log, "wb") as f:  # requeued without append: the same file, shorter than the cursor
        f.write(_dict_line(1, 0.2))
    snap3 = _gather(req, ledger, 3)[1]
    third = _job(snap3, job)
    assert (third.log_cursor["why"], third.log_cursor["start"]) == ("truncated", 0)
    assert third.metrics["reward"] == 0.2 and "log restarted: truncated" in _job_note(third)
    assert any(f"{job} truncated" in n for n in snap3.notes)
    ledger = _fold(ledger, snap3, 3)

    os.rename(log, log.with_suffix(".old"))  # the old inode stays in use: the new file gets another
    log.write_bytes(_dict_line(2, 0.3) + NOISE * 500)
    os.chown(log, lab_user().pw_uid, lab_user().pw_gid)
    snap4 = _gather(req, ledger, 4)[1]
    fourth = _job(snap4, job)
    assert (fourth.log_cursor["why"], fourth.log_cursor["read"]) == ("replaced", log.stat().st_size)
    assert fourth.metrics["reward"] == 0.3 and "log restarted: replaced" in _job_note(fourth)
    assert _fold(ledger, snap4, 4).jobs[f"local|{job}"].cursor["ino"] == log.stat().st_ino
