"""A RUNNING job's TensorBoard event file read by the sweep on the real cluster over real SSH: a Slurm
job prints its console log while a real event file (tensorboardX's SummaryWriter, the test's
process) grows in the dir ops.md ``metric_streams`` names; the first sweep reads the stream whole
and takes the row's numbers from it (the Note names the file), the next sweep reads only the bytes
written since (the ledger's stream cursor), and the history holds the series of both sweeps."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import pwd
import time
from pathlib import Path

import pytest
from gather_reference import run_on_login01
from lab import LOGS, USER
from tensorboardX import SummaryWriter
from test_gather_cursor import CONFIG, LITERALS
from test_streams_reader import _write

from sweep_core.fanin.cursor import before_digest, carry, cursors_for, stream_cursors_for
from sweep_core.fanin.render import _job_note
from sweep_core.fanin.streams import STREAM_WORDS as WORDS
from sweep_core.history.rows import sweep_frame
from sweep_core.history.series import job_series
from sweep_core.history.store import HistoryStore
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.fold import fold_sweep
from sweep_core.pipeline.steps import digest_step
from sweep_core.records.models import ClusterSnapshot, Job
from sweep_core.slurm.gather import GatherRequest, build_gather_script, parse_gather_output
from sweep_core.slurm.snapshot import snapshot_from_output

pytestmark = pytest.mark.cluster
SWEEP = pwd.getpwnam(USER)


def _sweep(req: GatherRequest, ledger: Ledger, run: int, history: HistoryStore) -> tuple[ClusterSnapshot, Ledger]:
    """One gather over SSH on login01 (cursors from the ledger), digested, folded, written to the history."""
    req = dataclasses.replace(
        req, cursors=cursors_for(ledger, "local"), stream_cursors=stream_cursors_for(ledger, "local")
    )
    script, marker = build_gather_script(req)
    out = parse_gather_output(run_on_login01(script).stdout, marker)
    assert out.complete and out.get("reader:python") is not None
    snap = snapshot_from_output("local", out, "login01", "s", f"2026-01-01T00:0{run}:00+00:00")
    before_digest(snap, ledger)
    digest_step([snap], CONFIG)
    carry(snap, ledger)
    end = dt.datetime(2026, 1, 1, 0, run, tzinfo=dt.UTC)
    new, _ = fold_sweep(ledger, [snap], run_id=f"r{run}", window_end=end)
    history.append(sweep_frame([snap], [], run_id=f"r{run}", window_start=end - dt.timedelta(minutes=1),
                               window_end=end), run_id=f"r{run}", window_end=end)  # fmt: skip
    return snap, new


def _job(snap: ClusterSnapshot, job_id: str) -> Job:
    return next(j for j in snap.running or [] if j.job_id == job_id)


def test_event_file_read_first_whole_then_from_its_cursor(local_cluster, tag, tmp_path: Path) -> None:
    name = f"rl__{tag}_tb"
    # the console log of a verl-style run: a bar with no step line beside it (the stream has the numbers)
    job = local_cluster.submit(name, "echo 'Training Progress:   0%|          | 0/100'; exec sleep 600")
    local_cluster.wait_running(job)
    tb = LOGS / "tb" / name
    tb.mkdir(parents=True)
    w = SummaryWriter(str(tb))
    _write(w, range(0, 10))
    (event,) = tb.iterdir()
    for p in (tb.parent, tb, event):
        os.chown(p, SWEEP.pw_uid, SWEEP.pw_gid)
    now = int(time.time())
    req = GatherRequest(user=USER, window_start=now - 600, window_end=now - 1, settle_s=0, python="python3",
                        incremental=True, literals=LITERALS, log_pattern=str(LOGS / "%x-%j.out"),
                        stream_dirs=("tb/%x",), stream_names=("^rl__",), stream_words=WORDS)  # fmt: skip
    history = HistoryStore(tmp_path / "history")

    snap, ledger = _sweep(req, Ledger(), 1, history)
    first = _job(snap, job)
    (s1,) = first.streams
    assert (s1["kind"], s1["cursor"]["why"], s1["cursor"]["start"]) == ("tfevents", "first", 0)
    assert s1["cursor"]["read"] == event.stat().st_size
    assert first.metrics["step"] == 9
    assert first.metrics["reward"] == pytest.approx(0.9) and first.metrics["entropy"] == pytest.approx(0.1)
    assert first.metrics["grad_norm"] == 11.0
    note = _job_note(first)
    assert f"metrics from {event.name} (stream: step, reward" in note, note
    assert ledger.jobs[f"local|{job}"].streams[str(event)]["offset"] == event.stat().st_size

    size = event.stat().st_size
    _write(w, range(10, 15))
    w.close()
    snap2, ledger = _sweep(req, ledger, 2, history)
    second = _job(snap2, job)
    (s2,) = second.streams
    assert (s2["cursor"]["why"], s2["cursor"]["start"]) == ("cont", size)
    assert s2["cursor"]["read"] == event.stat().st_size - size  # only the bytes written since
    assert s2["points"] == 4 * 5  # 4 mapped tags x 5 new steps (perf/throughput never left the node)
    assert second.metrics["step"] == 14 and second.metrics["reward"] == pytest.approx(1.4)

    series = job_series(history, "local", job)
    assert [s for s, _ in series["reward"]] == list(range(15))  # both sweeps' points, in step order
    assert series["entropy"][-1] == (14, pytest.approx(1 / 15))

    # it ends: the sweep whose window holds its end gives its streams a final read from the cursor
    w = SummaryWriter(str(tb), filename_suffix=".restart")  # a restart's second event file
    _write(w, range(15, 17))
    w.close()
    os.chown(next(p for p in tb.iterdir() if p.name.endswith(".restart")), SWEEP.pw_uid, SWEEP.pw_gid)
    local_cluster.cancel_all()
    local_cluster.wait_finished(job, "CANCELLED")
    local_cluster.wait_windowed(job)
    snap3, ledger = _sweep(dataclasses.replace(req, window_end=int(time.time())), ledger, 3, history)
    ended = next(j for j in snap3.finished or [] if j.job_id == job)
    whys = sorted(x["cursor"]["why"] for x in ended.streams)
    assert whys == ["cont", "first"]  # the first file on from its cursor (nothing new), the new one whole
    assert ended.metrics["step"] == 16 and ended.metrics["reward"] == pytest.approx(1.6)
    assert len(ledger.jobs[f"local|{job}"].streams) == 2


def test_no_stream_in_the_dir_says_console_and_costs_no_process(local_cluster, tag) -> None:
    name = f"rl__{tag}_nostream"
    job = local_cluster.submit(name, "echo 'Training Step Progress: 3/100'; exec sleep 600")
    local_cluster.wait_running(job)
    now = int(time.time())
    req = GatherRequest(user=USER, window_start=now - 600, window_end=now - 1, settle_s=0, python="python3",
                        incremental=True, literals=LITERALS, stream_dirs=("tb/%x",), stream_names=("^rl__",),
                        stream_words=WORDS)  # fmt: skip
    script, marker = build_gather_script(req)
    remote = run_on_login01(script, strace=True)
    out = parse_gather_output(remote.stdout, marker)
    # the streams cost the login node no process: the same count as a gather without them
    plain = run_on_login01(build_gather_script(dataclasses.replace(req, stream_dirs=()))[0], strace=True)
    assert remote.processes is not None and remote.processes == plain.processes
    snap = snapshot_from_output("local", out, "login01", "s", "2026-01-01T00:01:00+00:00")
    digest_step([snap], CONFIG)
    j = _job(snap, job)
    assert j.metrics["step"] == 3 and not j.streams
    assert f"metrics from console (no metric stream in {LOGS}/tb/{name}: No such file or directory)" in _job_note(j)
