"""iris logs read on from the ledger's cursor through the iris CLI (sweep_core.iris.cli_logs): the
read against a stand-in of ``iris job logs --since-ms S --no-tail|--tail --max-lines N`` (entries
after ``since_ms``, exclusive, in time order; printed ``[HH:MM:SS] task=… | data``, whole seconds),
then the ended jobs' final read: the client poll's and the digest's side of it."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

from iris_local import IRIS_PY, long_log_command, needs_iris, submit, wait_states
from lab import USER

from sweep_core.config.ops import parse_ops_text
from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.cursor import before_digest, carry, cursor_note, iris_cursors_for, prefilter
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.iris.cli_logs import CLI_ATTEMPT, entries, read_cli, read_jobs
from sweep_core.iris.state import IrisJob, iris_snapshot
from sweep_core.ledger.entries import Ledger
from sweep_core.ledger.fold import fold_sweep
from sweep_core.pipeline.steps import digest_step

CONFIG = load_sweep_config(Path(__file__).resolve().parents[2] / "include" / "sweep.yaml")
LITERALS, _ = prefilter(metrics_config(CONFIG.metrics))
SUB = 1_796_000_000_000 + 400  # not on a whole second


class Cli:
    """``iris job logs`` of one job: entries (ms, data) in time order, printed as the CLI prints them."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, str]] = []
        self.calls: list[tuple[int, int, bool]] = []
        self.printed = 0

    def push(self, ms: int, data: str) -> None:
        self.entries.append((ms, data))

    def __call__(self, since_ms: int, max_lines: int, tail: bool) -> list[str]:
        self.calls.append((since_ms, max_lines, tail))
        hit = [e for e in self.entries if e[0] > since_ms]
        hit = hit[-max_lines:] if tail else hit[:max_lines]
        out = [f"[{dt.datetime.fromtimestamp(ms / 1000, dt.UTC):%H:%M:%S}] task=/sweep/j/0 | {d}" for ms, d in hit]
        self.printed += len(out)
        return out


def _req(**kw: Any) -> dict[str, Any]:
    return {"literals": list(LITERALS), "keep": 50, "tail_bytes": 16384, "page": 100, **kw}


def test_a_burst_in_one_second_is_paged_through_each_line_once_and_the_next_read_reads_only_new_lines() -> None:
    cli = Cli()
    for i in range(250):
        cli.push(SUB + 100 + i, f"line-{i}")  # one second: the CLI prints the same time for all
    lines, c1, last = read_cli(cli, SUB, None, _req(), None)
    assert lines == [f"line-{i}" for i in range(250)] and c1["lines"] == 250 and c1["why"] == "first"
    assert cli.calls[0][:2] == (SUB - 1, 100) and all(not t for _, _, t in cli.calls)  # from the submission, --no-tail
    assert (c1["ms"], c1["at"], c1["attempt"]) == (SUB // 1000 * 1000, 250, CLI_ATTEMPT) and last == c1["ms"]
    for i in range(250, 255):
        cli.push(SUB + 400 + i, f"line-{i}")  # the same second, stored after the read
    cli.push(SUB + 5000, "Training Step Progress: 4/50")
    cli.printed = 0
    cur = {k: c1[k] for k in ("ms", "seq", "sub", "attempt", "bytes", "at")}
    lines, c2, last = read_cli(cli, SUB, cur, _req(), None)
    assert c2["why"] == "cont" and lines == [*(f"line-{i}" for i in range(250, 255)), "Training Step Progress: 4/50"]
    assert c2["read"] == sum(len(x) + 1 for x in lines) and c2["bytes"] == c1["bytes"] + c2["read"]
    assert (c2["at"], last) == (1, (SUB + 5000) // 1000 * 1000)
    cli.printed = 0
    cur = {k: c2[k] for k in ("ms", "seq", "sub", "attempt", "bytes", "at")}
    lines, c3, _ = read_cli(cli, SUB, cur, _req(), None)  # nothing new: one line of its second printed, none read
    assert lines == [] and c3["read"] == 0 and cli.printed == 1 and c3["ms"] == c2["ms"]


def test_a_second_holding_more_lines_than_a_page_may_ask_for_is_skipped_past_and_said() -> None:
    cli = Cli()
    for i in range(300):
        cli.push(SUB + 100, f"burst-{i}")
    cli.push(SUB + 3000, "Training Step Progress: 5/50")
    lines, c, _ = read_cli(cli, SUB, None, _req(max_page=250), None)
    assert lines[:200] == [f"burst-{i}" for i in range(200)] and lines[-1] == "Training Step Progress: 5/50"
    assert len(lines) == 201 and c["skipped"] == 1 and max(n for _, n, _ in cli.calls) <= 250
    job = iris_snapshot("cw", [IrisJob("/sweep/j", "RUNNING", log_cursor=c)], {}, now=SUB / 1000,
                        window_start=dt.datetime.now(dt.UTC), window_end=dt.datetime.now(dt.UTC),
                        source="iris CLI").running[0]  # fmt: skip
    assert "log lines of 1 second(s) skipped" in cursor_note(job)


def test_a_read_past_the_budget_keeps_its_metric_lines_then_the_newest_lines() -> None:
    cli = Cli()
    cli.push(SUB + 10, 'WANDB_MIRROR {"trainer/global_step": 1, "reward/mean": 0.1}')
    for i in range(400):
        cli.push(SUB + 2000 + i * 10, f"engine noise {i}")
    cli.push(SUB + 9000, "Training Step Progress: 9/50")
    lines, c, last = read_cli(cli, SUB, None, _req(tail_lines=5), 2000)
    assert c["hist"] == 1 and lines[0].startswith("WANDB_MIRROR") and c["read"] < 2000 + 100 * 20
    assert lines[1:] == [*(f"engine noise {i}" for i in range(396, 400)), "Training Step Progress: 9/50"]
    assert cli.calls[-1][2] and last == (SUB + 9000) // 1000 * 1000 > c["ms"]


def test_dates_roll_over_midnight_and_continuation_lines_stay_with_their_entry() -> None:
    day = 1_796_083_200  # a UTC midnight
    got = entries(["[23:59:59] task=/u/j/0 | a", "  more of a", "[00:00:01] task=/u/j/0 | b"], day - 1)
    assert got == [(day - 1, "a\n  more of a"), (day + 1, "b")]


def test_a_cursor_of_the_other_path_or_submission_reads_from_the_start_and_says_so() -> None:
    cli = Cli()
    cli.push(SUB + 10, "Training Step Progress: 3/50")
    client_cur = {"ms": SUB + 10, "seq": 7, "sub": SUB, "attempt": "0:0", "bytes": 40}
    lines, c, _ = read_cli(cli, SUB, client_cur, _req(), None)
    assert c["why"] == "source" and lines == ["Training Step Progress: 3/50"]
    job = iris_snapshot("cw", [IrisJob("/sweep/j", "RUNNING", log_cursor=c)], {}, now=SUB / 1000,
                        window_start=dt.datetime.now(dt.UTC), window_end=dt.datetime.now(dt.UTC),
                        source="iris CLI").running[0]  # fmt: skip
    assert "read through the other iris path" in cursor_note(job)
    _, c, _ = read_cli(cli, SUB + 5, {**c}, _req(), None)
    assert c["why"] == "resubmitted"


def _ended(job_id: str, state: str, finished: int, **kw: Any) -> IrisJob:
    return IrisJob(job_id, state, submitted_at_ms=SUB, started_at_ms=SUB + 1000, finished_at_ms=finished, **kw)


def test_ended_jobs_get_a_final_read_from_their_cursor_and_old_ones_none() -> None:
    logs = {"/sweep/a": Cli(), "/sweep/b": Cli(), "/sweep/old": Cli()}
    logs["/sweep/a"].push(SUB + 10, "Training Step Progress: 3/50")
    logs["/sweep/a"].push(SUB + 9000, "RuntimeError: boom")
    logs["/sweep/b"].push(SUB + 10, "Training Step Progress: 7/50")
    logs["/sweep/old"].push(SUB + 10, "old")
    window = SUB + 5000
    a, b = _ended("/sweep/a", "FAILED", SUB + 9500), _ended("/sweep/b", "SUCCEEDED", SUB + 9600)
    old = _ended("/sweep/old", "SUCCEEDED", SUB + 100)
    cur_a = {"ms": SUB // 1000 * 1000, "seq": 0, "sub": SUB, "attempt": CLI_ATTEMPT, "at": 1, "bytes": 29}
    read_jobs([a, b, old], logs.__getitem__, {"cursors": {"/sweep/a": cur_a}, **_req()}, window)
    assert a.log_cursor["why"] == "cont" and a.log_tail == "RuntimeError: boom\n"  # only what came after
    assert b.log_cursor["why"] == "first" and "7/50" in b.log_tail  # never seen running: from the start
    assert not logs["/sweep/old"].calls and old.log_tail == "" and old.log_cursor == {}


def test_an_ended_jobs_final_read_meets_the_ledger_and_the_budget_cut_is_said() -> None:
    """The digest's side: an ended job read on from its cursor gets the ledger's last lines before
    its new ones and keeps the ledger's metrics; one cut by the budget says so in its note."""
    end = dt.datetime.fromtimestamp((SUB + 3_600_000) / 1000, dt.UTC)
    start = end - dt.timedelta(hours=1)

    def snap(jobs: list[IrisJob], ledger: Ledger) -> Any:
        s = iris_snapshot("cw", jobs, {}, now=end.timestamp(), window_start=start, window_end=end, source="iris CLI")
        before_digest(s, ledger)
        digest_step([s], CONFIG)
        carry(s, ledger)
        return s

    cli = Cli()
    cli.push(SUB + 10, 'WANDB_MIRROR {"trainer/global_step": 4, "reward/mean": 0.25}')
    cli.push(SUB + 20, "Training Step Progress: 4/50")
    run = IrisJob("/sweep/rl__x", "RUNNING", submitted_at_ms=SUB, started_at_ms=SUB + 5)
    read_jobs([run], lambda _: cli, {"cursors": {}, **_req()}, 0)
    first = snap([run], Ledger())
    ledger, _ = fold_sweep(Ledger(), [first], run_id="r1", window_end=end)
    assert first.running[0].metrics["step"] == 4
    for i in range(30):
        cli.push(SUB + 30 + i, f"engine noise {i}")
    cli.push(SUB + 2000, "Traceback (most recent call last):\nRuntimeError: loader died")
    gone = _ended("/sweep/rl__x", "FAILED", SUB + 2500, error="exit 1")
    read_jobs([gone], lambda _: cli, {"cursors": iris_cursors_for(ledger, "cw"), **_req()}, SUB + 1000)
    assert gone.log_cursor["why"] == "cont" and "Training Step Progress" not in gone.log_tail
    final = snap([gone], ledger).finished[0]
    assert final.metrics["step"] == 4 and final.metrics["reward"] == 0.25  # kept from its running read
    assert "RuntimeError: loader died" in final.evidence.get("traceback", "")
    cut = IrisJob("/sweep/rl__y", "FAILED", submitted_at_ms=SUB, started_at_ms=SUB + 5, finished_at_ms=SUB + 2500)
    read_jobs([cut], lambda _: cli, {"cursors": {}, "budget": 100, **_req(page=10)}, SUB + 1000)
    note = cursor_note(snap([cut], Ledger()).finished[0])
    assert "reading history" in note and "ended: its final read cut there" in note


def _sweep(cfg: Any, job_id: str, ledger: Ledger, until: str, source: str) -> Any:
    """One gather of the cluster read on from ``ledger``'s cursors, repeated until ``job_id``'s log
    holds ``until`` (the controller has stored it), digested: (snapshot, the job, window end)."""
    from sweep_operators.iris_gather import cursor_request, gather_iris

    for _ in range(60):
        end = dt.datetime.now(dt.UTC)
        req = cursor_request(iris_cursors_for(ledger, "cw"), LITERALS, CONFIG.gather)
        snap = gather_iris(cfg, end - dt.timedelta(minutes=15), end, read=req)
        job = next(j for j in snap.all_jobs() if j.job_id == job_id)
        if until in job.log_tail:
            break
        time.sleep(1)
    assert snap.login_node == source
    before_digest(snap, ledger)
    digest_step([snap], CONFIG)
    carry(snap, ledger)
    return snap, job, end


@needs_iris
def test_the_cli_path_reads_a_long_log_whole_then_only_new_entries_and_the_ended_row_keeps_step_and_reward(
    controller, tag, tmp_path, monkeypatch
) -> None:
    """On a REAL controller through the iris CLI (no client python): a job prints its step and
    reward, then >300 KB of engine output; the first sweep reads it whole (past the old bound),
    the job ENDS, and the second sweep's final read reads only what came after the cursor: its
    row shows the last step and the reward kept from the first read."""
    from sweep_operators.iris_hook import IrisHook

    url, run = controller
    go = tmp_path / "go"
    cmd = long_log_command(go, "exit 0")
    job_id = submit(url, run, f"rl__{tag}_clilong", cmd)
    wait_states(url, run, {job_id: "RUNNING"})
    (tmp_path / "cw").mkdir()
    (tmp_path / "cw" / "ops.md").write_text(
        f"---\nscheduler: iris\nstatus: active\nuser: {USER}\ncontroller_url: {url}\n"
        f"iris_binary: {Path(IRIS_PY).with_name('iris')}\niris_home: {run}\niris_timeout_s: 120\n---\nCLI only.\n"
    )
    cfg = parse_ops_text((tmp_path / "cw" / "ops.md").read_text(), tmp_path / "cw" / "ops.md", "cw")
    calls: list[int] = []
    real_poll = IrisHook._poll_cli

    def counted(hook: IrisHook, *a: Any) -> Any:
        try:
            return real_poll(hook, *a)
        finally:
            calls.append(hook.log_calls)

    monkeypatch.setattr(IrisHook, "_poll_cli", counted)
    snap, job, end = _sweep(cfg, job_id, Ledger(), "flushed", "iris CLI")
    assert job.state == "RUNNING" and job.log_cursor["why"] == "first"
    assert job.log_cursor["read"] > 300_000 and job.log_cursor["lines"] >= 3003  # whole, not a bounded tail
    assert job.metrics["step"] == 12 and job.metrics["reward"] == 0.42
    assert calls[-1] >= 2  # paged: 2,000 lines a page
    ledger, _ = fold_sweep(Ledger(), [snap], run_id="r1", window_end=end)
    assert ledger.jobs[f"cw|{job_id}"].cursor["attempt"] == "cli"

    go.touch()
    wait_states(url, run, {job_id: "SUCCEEDED"})
    snap2, job2, _ = _sweep(cfg, job_id, ledger, "flushed2", "iris CLI")
    new = ["Training Step Progress: 13/50", *(f"more-{i}" for i in range(1, 11)), "flushed2"]
    assert job2.state == "COMPLETED" and job2 in snap2.finished
    assert job2.log_cursor["why"] == "cont" and job2.log_cursor["lines"] == len(new)  # only the new entries
    assert job2.log_cursor["read"] == sum(len(x) + 1 for x in new)
    assert calls[-1] == 1  # one page, not the 300 KB again
    assert job2.metrics["step"] == 13 and job2.metrics["reward"] == 0.42 and "reward" in job2.metrics["carried"]


@needs_iris
def test_the_client_path_reads_an_ended_job_on_from_its_running_cursor(controller, tag, tmp_path) -> None:
    """The iris client poll (iris_poll.py) on a REAL controller: a job seen RUNNING, then FAILED,
    gets a final read of only the entries after its cursor; its row shows its last step, the
    reward of its running read and the traceback."""
    from iris_local import iris_ops

    url, run = controller
    go = tmp_path / "go"
    cmd = (
        "echo 'Training Step Progress: 5/50'; "
        'echo \'WANDB_MIRROR {"trainer/global_step": 5, "reward/mean": 0.3}\'; sleep 1; echo flushed; '
        f"while [ ! -e {go} ]; do sleep 0.2; done; "
        "echo 'Training Step Progress: 6/50'; echo 'Traceback (most recent call last):'; "
        "echo 'RuntimeError: reward model died'; sleep 1; echo flushed2; exit 1"
    )
    job_id = submit(url, run, f"rl__{tag}_ends", cmd)
    wait_states(url, run, {job_id: "RUNNING"})
    iris_ops(tmp_path, "cw", url, run)
    cfg = parse_ops_text((tmp_path / "cw" / "ops.md").read_text(), tmp_path / "cw" / "ops.md", "cw")

    snap, job, end = _sweep(cfg, job_id, Ledger(), "flushed", "iris client")
    assert job.state == "RUNNING" and job.metrics["reward"] == 0.3
    ledger, _ = fold_sweep(Ledger(), [snap], run_id="r1", window_end=end)
    go.touch()
    wait_states(url, run, {job_id: "FAILED"})
    _, gone, _ = _sweep(cfg, job_id, ledger, "flushed2", "iris client")
    assert gone.state == "FAILED" and gone.log_cursor["why"] == "cont" and gone.log_cursor["lines"] == 4
    assert gone.metrics["step"] == 6 and gone.metrics["reward"] == 0.3  # the ledger's last lines before the new
    assert "RuntimeError: reward model died" in gone.evidence["traceback"]
