"""iris logs read whole and incrementally from the ledger's cursor (iris_poll.py ``read_on``): the
read logic against a FetchLogs stand-in with the controller's documented semantics (``since_ms``
and the entry-id ``cursor`` both exclusive; checked on a real controller: an entry at the cursor's
own millisecond is dropped by ``since_ms`` alone), the poll's JSON parsed into the snapshot and
folded into a real ledger, and a REAL local controller (marin-iris local backend) swept twice."""

from __future__ import annotations

import datetime as dt
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from iris_local import iris_ops, long_log_command, needs_iris, submit, wait_states

from sweep_core.config.ops import parse_ops_text
from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.cursor import before_digest, carry, iris_cursors_for, prefilter
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.fanin.render import _job_note
from sweep_core.iris.state import IrisStateError, iris_snapshot
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.fold import fold_sweep
from sweep_core.pipeline.steps import digest_step
from sweep_core.programs import DIR as PROGRAMS
from sweep_core.records.models import ClusterSnapshot

sys.path.insert(0, str(PROGRAMS))
import iris_poll  # noqa: E402  (run by the iris venv in production; its read logic is plain Python)

ROOT = Path(__file__).resolve().parents[2]
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")
LITERALS, _ = prefilter(metrics_config(CONFIG.metrics))
SUB = 1_796_000_000_000


def _ts(ms: int) -> SimpleNamespace:
    return SimpleNamespace(epoch_ms=ms)


class Store:
    """FetchLogs of one job's source: entries (id, ms, data, attempt) in id order."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, int, str, int]] = []
        self.next_id = 1
        self.calls: list[dict[str, Any]] = []

    def push(self, ms: int, data: str, attempt: int = 0) -> None:
        self.entries.append((self.next_id, ms, data, attempt))
        self.next_id += 3  # ids are store-wide: other sources take some

    def __call__(self, *, since_ms: int, cursor: int, max_lines: int, tail: bool) -> SimpleNamespace:
        self.calls.append({"since_ms": since_ms, "cursor": cursor, "max_lines": max_lines, "tail": tail})
        hit = [e for e in self.entries if e[1] > since_ms and e[0] > cursor]
        hit = hit[-max_lines:] if tail else hit[:max_lines]
        out = [SimpleNamespace(data=d, timestamp=_ts(ms), attempt_id=a) for _, ms, d, a in hit]
        return SimpleNamespace(entries=out, cursor=max((e[0] for e in hit), default=cursor))


def _job(sub: int = SUB) -> SimpleNamespace:
    return SimpleNamespace(submitted_at=_ts(sub))


def _tasks(attempt: int = 0, started: int = SUB + 1000) -> list[SimpleNamespace]:
    att = [SimpleNamespace(attempt_id=a, started_at=_ts(started if a == attempt else SUB)) for a in range(attempt + 1)]
    return [SimpleNamespace(task_id="/sweep/j/0", current_attempt_id=attempt, attempts=att)]


def _req(**kw: Any) -> dict[str, Any]:
    return {"literals": list(LITERALS), "keep": 50, "tail_bytes": 16384, "page": 100, **kw}


def test_equal_timestamps_at_the_cursor_are_neither_dropped_nor_read_twice() -> None:
    store = Store()
    for i in range(250):  # one burst: every line in the same millisecond
        store.push(SUB + 5000, f"line-{i}")
    first, c1, _ = iris_poll.read_on(store, _job(), _tasks(), None, _req(), 500)  # the budget cuts after a page
    assert c1["why"] == "first" and c1["lines"] == 100 and c1["ms"] == SUB + 5000 and c1["tail"] > 0
    assert store.calls[0]["since_ms"] == SUB - 1  # from the submission (since_ms is exclusive)
    for i in range(250, 260):  # stored after the read, in that same millisecond
        store.push(SUB + 5000, f"line-{i}")
    cur = {k: c1[k] for k in ("ms", "seq", "sub", "attempt", "bytes")}
    lines, c2, _ = iris_poll.read_on(store, _job(), _tasks(), cur, _req(), None)
    assert c2["why"] == "cont" and c2["lines"] == 160
    assert store.calls[-1]["since_ms"] < c1["ms"] and store.calls[-2]["cursor"] == c1["seq"]
    assert lines == [f"line-{i}" for i in range(100, 260)]  # each new line once, in order
    assert c2["bytes"] == c1["bytes"] + sum(len(f"line-{i}") + 1 for i in range(100, 260))
    assert "tail" not in c2  # caught up


def test_a_history_read_keeps_its_metric_lines_then_the_newest_entries() -> None:
    store = Store()
    store.push(SUB + 10, 'WANDB_MIRROR {"trainer/global_step": 1, "reward/mean": 0.1}')
    for i in range(400):
        store.push(SUB + 20 + i, f"engine noise {i}")
    store.push(SUB + 900, "Training Step Progress: 9/50")
    lines, c, last = iris_poll.read_on(store, _job(), _tasks(), None, _req(tail_lines=5), 2000)
    assert c["hist"] == 1 and lines[0].startswith("WANDB_MIRROR")  # the history's metric line first
    assert lines[1:] == [*(f"engine noise {i}" for i in range(396, 400)), "Training Step Progress: 9/50"]
    assert last == c["newest_ms"] == SUB + 900 and c["ms"] < SUB + 900  # liveness from the newest entry
    assert c["read"] < 2000 + 100 * 20  # the budget, checked between pages of 100 entries
    # the poll's own time bound stops the reads the same way (the answer must come back in time)
    lines, c, _ = iris_poll.read_on(store, _job(), _tasks(), None, _req(tail_lines=1, stop_at=0.0), None)
    assert c["read"] == 0 and c["hist"] == 0 and lines == ["Training Step Progress: 9/50"]


def test_a_new_attempt_restarts_from_its_start_and_a_resubmission_from_its_submission() -> None:
    store = Store()
    store.push(SUB + 10, "Training Step Progress: 30/50", attempt=0)
    _, c1, _ = iris_poll.read_on(store, _job(), _tasks(), None, _req(), None)
    store.push(SUB + 20, "attempt 0 dying", attempt=0)
    store.push(SUB + 2000, "Training Step Progress: 2/50", attempt=1)
    cur = {k: c1[k] for k in ("ms", "seq", "sub", "attempt", "bytes")}
    lines, c, _ = iris_poll.read_on(store, _job(), _tasks(1, SUB + 1500), cur, _req(), None)
    assert (c["why"], c["attempt"], c["was"]) == ("attempt", "0:1", "0:0")
    assert lines == ["Training Step Progress: 2/50"] and store.calls[-1]["since_ms"] == SUB + 1499
    lines, c, _ = iris_poll.read_on(store, _job(SUB + 100), _tasks(), cur, _req(), None)
    assert c["why"] == "resubmitted" and store.calls[-1]["since_ms"] == SUB + 99


def test_entry_ids_restarted_below_the_cursor_read_again_and_say_so() -> None:
    store = Store()
    store.push(SUB + 10, "Training Step Progress: 3/50")
    store.push(SUB + 20, "Training Step Progress: 4/50")
    cur = {"ms": SUB + 5, "seq": 10_000, "sub": SUB, "attempt": "0:0", "bytes": 10}  # ids now below it
    lines, c, _ = iris_poll.read_on(store, _job(), _tasks(), cur, _req(), None)
    assert c["why"] == "reset" and lines[-1] == "Training Step Progress: 4/50"
    silent = {**cur, "seq": c["seq"], "ms": c["ms"]}  # nothing new, ids in order: no reset
    lines, c, last = iris_poll.read_on(store, _job(), _tasks(), silent, _req(), None)
    assert c["why"] == "cont" and lines == [] and c["read"] == 0 and last == SUB + 20


def _poll_doc(job_id: str, cursor: dict[str, Any], lines: list[str]) -> dict[str, Any]:
    return {"job_id": job_id, "state": "JOB_STATE_RUNNING", "submitted_at_ms": SUB, "started_at_ms": SUB + 1000,
            "tasks": [{"task_id": f"{job_id}/0", "state": "TASK_STATE_RUNNING"}], "log_lines": lines,
            "log_last_ms": cursor.get("newest_ms") or cursor["ms"], "log_cursor": cursor}  # fmt: skip


def _snap(docs: list[dict[str, Any]], ledger: Ledger) -> ClusterSnapshot:
    from sweep_core.iris.records import job_from_poll

    end = dt.datetime.fromtimestamp((SUB + 3_600_000) / 1000, dt.UTC)
    snap = iris_snapshot("cw", [job_from_poll(d) for d in docs], {}, now=end.timestamp(),
                         window_start=end - dt.timedelta(hours=1), window_end=end, source="iris client")  # fmt: skip
    before_digest(snap, ledger)
    digest_step([snap], CONFIG)
    carry(snap, ledger)
    return snap


def test_the_polls_cursor_reaches_the_row_and_the_ledger() -> None:
    jid = "/sweep/rl__x"
    c1 = {"ms": SUB + 9000, "seq": 77, "sub": SUB, "attempt": "0:0", "bytes": 3 * 2**20, "why": "first",
          "read": 3 * 2**20, "lines": 9000, "hist": 1, "tail": 2, "tail_bytes": 60, "newest_ms": SUB + 20000}  # fmt: skip
    lines = ['WANDB_MIRROR {"trainer/global_step": 4, "reward/mean": 0.25}', "noise", "Training Step Progress: 8/50"]
    snap = _snap([_poll_doc(jid, c1, lines)], Ledger())
    job = snap.running[0]
    assert job.metrics["step"] == 8 and job.metrics["reward"] == 0.25
    assert "reading history: 3.0 MiB read, up to" in _job_note(job)
    end = dt.datetime.fromtimestamp((SUB + 3_600_000) / 1000, dt.UTC)
    ledger, _ = fold_sweep(Ledger(), [snap], run_id="r1", window_end=end)
    assert ledger.jobs[f"cw|{jid}"].cursor == {"ms": SUB + 9000, "seq": 77, "sub": SUB, "attempt": "0:0",
                                                "bytes": 3 * 2**20}  # fmt: skip
    assert iris_cursors_for(ledger, "cw") == {jid: ledger.jobs[f"cw|{jid}"].cursor}

    c2 = {"ms": SUB + 30000, "seq": 99, "sub": SUB, "attempt": "0:1", "was": "0:0", "bytes": 40, "why": "attempt",
          "read": 40, "lines": 2}  # fmt: skip
    snap2 = _snap([_poll_doc(jid, c2, ["restarting", "Training Step Progress: 1/50"])], ledger)
    job2 = snap2.running[0]
    assert job2.metrics["step"] == 1 and job2.metrics.get("reward") is None  # not carried across attempts
    assert "log restarted: new attempt (tasks now 0:1, were 0:0)" in _job_note(job2)
    assert any(f"{jid} attempt" in n for n in snap2.notes)

    with pytest.raises(IrisStateError, match="log_cursor"):
        from sweep_core.iris.records import job_from_poll

        job_from_poll(_poll_doc(jid, {**c1, "seq": -1}, []))


@needs_iris
def test_a_running_job_with_long_engine_output_shows_its_step_and_reward_and_reads_only_new_entries(
    controller, tag, tmp_path
) -> None:
    from sweep_operators.iris_gather import cursor_request, gather_iris

    url, run = controller
    go = tmp_path / "go"
    cmd = long_log_command(go, "sleep 300")
    job_id = submit(url, run, f"rl__{tag}_long", cmd)
    wait_states(url, run, {job_id: "RUNNING"})
    iris_ops(tmp_path, "cw", url, run)
    cfg = parse_ops_text((tmp_path / "cw" / "ops.md").read_text(), tmp_path / "cw" / "ops.md", "cw")

    def sweep(ledger: Ledger, until: str, limits: Any = CONFIG.gather) -> Any:
        for _ in range(60):  # until the controller holds the line the test waits for
            end = dt.datetime.now(dt.UTC)
            req = cursor_request(iris_cursors_for(ledger, "cw"), LITERALS, limits)
            snap = gather_iris(cfg, end - dt.timedelta(minutes=15), end, read=req)
            job = next(j for j in snap.running or [] if j.job_id == job_id)
            if until in job.log_tail:
                break
            time.sleep(0.5)
        before_digest(snap, ledger)
        digest_step([snap], CONFIG)
        carry(snap, ledger)
        return snap, job, end

    snap, job, end = sweep(Ledger(), "flushed")
    assert job.log_cursor["why"] == "first" and job.log_cursor["read"] > 262144  # past the old 256 KiB bound
    assert job.metrics["step"] == 12 and job.metrics["reward"] == 0.42
    assert job.log_mtime is not None and time.time() - job.log_mtime < 300  # liveness: the newest entry read
    ledger, _ = fold_sweep(Ledger(), [snap], run_id="r1", window_end=end)
    assert ledger.jobs[f"cw|{job_id}"].cursor["bytes"] == job.log_cursor["read"]

    go.touch()
    snap2, job2, _ = sweep(ledger, "flushed2")
    new = ["Training Step Progress: 13/50", *(f"more-{i}" for i in range(1, 11)), "flushed2"]
    assert job2.log_cursor["why"] == "cont" and job2.log_cursor["lines"] == len(new)  # only the new entries
    assert job2.log_cursor["read"] == sum(len(x) + 1 for x in new)
    assert job2.metrics["step"] == 13 and job2.metrics["reward"] == 0.42  # the reward carried from the ledger
    assert "reward" in job2.metrics["carried"]

    # the same log from a first sight over a 20 kB budget: cut after the first page of 2,000 entries,
    # inside the burst (its lines share milliseconds), then read on: every entry once
    small = SimpleNamespace(log_budget_bytes=20_000, tail_bytes=16384)
    snap3, job3, end3 = sweep(Ledger(), "flushed2", small)
    cut = job3.log_cursor
    assert cut["why"] == "first" and cut["lines"] == 2000 and "reading history" in _job_note(job3)
    assert job3.metrics["step"] == 13  # the newest entries, fetched beside the history
    ledger3, _ = fold_sweep(Ledger(), [snap3], run_id="r3", window_end=end3)
    _, job4, _ = sweep(ledger3, "flushed2")
    total = job.log_cursor["lines"] + len(new)
    assert job4.log_cursor["why"] == "cont" and cut["lines"] + job4.log_cursor["lines"] == total
    assert cut["read"] + job4.log_cursor["read"] == job.log_cursor["read"] + job2.log_cursor["read"]
