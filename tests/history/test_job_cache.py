"""The job page's cache (history.job_cache), pure: a warm request reads only the files it has not
seen, and what it shows equals a fresh read of every file (rows, curves, marks) and the history's
own series reader; a re-run's replaced file is read again, a file removed by retention or moved
aside drops out with its points, a corrupt file is said on the page (never kept, never a crash);
the cache stays within its bound. The restart a job's log states is kept in its row
(``restart_line``, ``restart_step``: cleaned, bounded) and marked on the page's step axis."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from sweep_core.fanin.step_check import RESTART_KEY, restart_evidence
from sweep_core.history.job_cache import BATCH, JobCache
from sweep_core.history.job_page import chart_data, job_page
from sweep_core.history.job_view import JobView, load_job_view
from sweep_core.history.rows import RESTART_EVIDENCE, RESTART_LINE, RESTART_STEP, restart_of, sweep_frame
from sweep_core.history.series import job_series
from sweep_core.history.store import HistoryStore, _groups_for, read_file
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job
from sweep_core.records.vocab import Bucket, Severity
from sweep_core.state.state_dir import move_aside

T0 = dt.datetime(2026, 12, 1, 0, 0, tzinfo=dt.UTC)
H = dt.timedelta(hours=1)


def _sweep(store: HistoryStore, i: int, *, reward: float = 0.0, evidence: dict | None = None, flag: bool = False,
           extra: int = 0, run: str = "") -> None:  # fmt: skip
    """Sweep ``i``: job 41 at step 10*(i+1) with 10 reward/loss points (the first re-reads the last
    sweep's step, as a log re-read does: the later sweep's value must win), and job 42."""
    steps = range(10 * i, 10 * i + 10 + 1 + extra)
    pts = {"reward": [[float(s), reward + s / 100] for s in steps], "loss": [[float(s), 2.0 - s / 1000] for s in steps]}
    job = Job("c1", "41", "rl__a", "RUNNING", "squeue", bucket="RL", minutes_since_output=1.0 + i,
              metrics={"step": 10 * i + 10 + extra}, points=pts, evidence=evidence or {})  # fmt: skip
    other = Job(
        "c1", "42", "rl__b", "RUNNING", "squeue", bucket="RL", metrics={"step": i}, points={"reward": [[i, 9.0]]}
    )
    snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, running=[job, other], finished=[])
    flags = (
        [
            Flag(
                rule="rl_flat",
                severity=Severity.WARN,
                cluster="c1",
                job_id="41",
                job_name="rl__a",
                bucket=Bucket.RL,
                message=f"flat {i}",
            )
        ]
        if flag
        else []
    )
    end = T0 + i * H
    store.append(sweep_frame([snap], flags, run_id=run or f"r{i}", window_start=end - H, window_end=end),
                 run_id=run or f"r{i}", window_end=end)  # fmt: skip


def _same(a: object, b: object) -> bool:
    """Equal, NaN and <NA> equal to themselves."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b) or (str(a) == str(b) == "<NA>")
    except TypeError:
        return str(a) == str(b)


def _shown(view: JobView) -> dict[str, Any]:
    return {"rows": view.rows, "metrics": view.metrics, "curves": [(c.metric, c.points, c.sent, c.log)
            for c in view.curves], "marks": view.marks, "name": view.name, "notes": view.notes}  # fmt: skip


def _fresh(store: HistoryStore) -> JobView:
    return load_job_view(store, "c1", "41")  # no cache: every file read


def test_a_warm_request_reads_only_new_files_and_shows_what_a_fresh_read_shows(tmp_path) -> None:
    store, cache = HistoryStore(tmp_path, retention_days=10_000), JobCache()
    for i in range(6):
        _sweep(store, i, flag=i == 3)
    first = load_job_view(store, "c1", "41", cache=cache)
    assert cache.reads == 6 and _same(_shown(first), _shown(_fresh(store)))
    warm = load_job_view(store, "c1", "41", cache=cache)
    assert cache.reads == 6 and _same(_shown(warm), _shown(first))  # nothing read again
    _sweep(store, 6, reward=5.0)  # a new sweep re-reads step 60 with another value: the newest wins
    warm = load_job_view(store, "c1", "41", cache=cache)
    assert cache.reads == 7 and _same(_shown(warm), _shown(_fresh(store)))
    reward = dict(next(c for c in warm.curves if c.metric == "reward").points)
    assert reward[60] == 5.6 and reward[59] == 0.59 and len(reward) == 71
    # the history's own reader (pandas over every file) gives the same series
    assert {c.metric: c.points for c in warm.curves} == job_series(store, "c1", "41", bound=20_000)
    assert warm.rows[-1]["m.step"] == 70 and [m.kind for m in warm.marks] == ["flag"]
    assert cache.files_of(("c1", "41")) == sorted(f.path.name for f in store.files())


def test_a_rerun_replacing_a_file_is_read_again(tmp_path) -> None:
    store, cache = HistoryStore(tmp_path, retention_days=10_000), JobCache()
    for i in range(3):
        _sweep(store, i)
    load_job_view(store, "c1", "41", cache=cache)
    _sweep(store, 1, reward=3.0, extra=1)  # run r1 re-run: the same file name, other rows
    warm = load_job_view(store, "c1", "41", cache=cache)
    assert cache.reads == 4 and _same(_shown(warm), _shown(_fresh(store)))
    assert dict(warm.curves[0].points)[15] == 3.15  # the re-run's value, not the cached one


def test_a_file_removed_by_retention_drops_out_with_its_points(tmp_path) -> None:
    store, cache = HistoryStore(tmp_path, retention_days=10_000), JobCache()
    for i in range(5):
        _sweep(store, i)
    before = load_job_view(store, "c1", "41", cache=cache)
    assert before.curves[0].points[0][0] == 0
    store.retention_days = 0
    gone = store.prune(T0 + 2 * H)  # sweeps 0 and 1 are past retention
    assert len(gone) == 2
    after = load_job_view(store, "c1", "41", cache=cache)
    assert cache.reads == 5 and _same(_shown(after), _shown(_fresh(store)))
    assert after.curves[0].points[0][0] == 20 and len(after.rows) == 3  # steps 0-19 were only in the pruned files
    assert len(cache.files_of(("c1", "41"))) == 3


def test_a_corrupt_file_is_said_not_kept_and_drops_out_once_moved_aside(tmp_path) -> None:
    store, cache = HistoryStore(tmp_path, retention_days=10_000), JobCache()
    for i in range(3):
        _sweep(store, i)
    bad = store.files()[1].path
    bad.write_bytes(b"PAR1 not parquet at all")
    view = load_job_view(store, "c1", "41", cache=cache)
    assert len(view.rows) == 2 and any(bad.name in n and "unusable" in n for n in view.notes)
    assert bad.exists() and bad.name not in cache.files_of(("c1", "41"))  # read-only: left in place, not kept
    again = load_job_view(store, "c1", "41", cache=cache)
    assert any(bad.name in n for n in again.notes) and cache.reads == 4  # said again: read again
    move_aside(bad, "test: what the sweep's own read does", [])
    moved = load_job_view(store, "c1", "41", cache=cache)
    assert not moved.notes and len(moved.rows) == 2 and cache.reads == 4
    assert _same(_shown(moved), _shown(_fresh(store)))
    page = job_page(view)
    assert "unusable" in page and page.count("<tr class='sweep'>") == 2


def test_the_cache_keeps_within_its_bound_least_recently_asked_out(tmp_path) -> None:
    store = HistoryStore(tmp_path, retention_days=10_000)
    for i in range(4):
        _sweep(store, i)
    one = JobCache()
    load_job_view(store, "c1", "41", cache=one)
    heavy = one.weight()
    cache = JobCache(bound=heavy + 10)
    load_job_view(store, "c1", "41", cache=cache)
    load_job_view(store, "c1", "42", cache=cache)  # 41 and 42 do not both fit: 41 (asked first) goes
    assert cache.jobs() == [("c1", "42")] and cache.weight() <= cache.bound
    small = JobCache(bound=10)  # a job heavier than the bound alone: served, not kept
    view = load_job_view(store, "c1", "41", cache=small)
    assert view.found and small.jobs() == [] and small.weight() == 0


def test_the_restart_the_log_states_is_kept_in_the_row_and_marked_at_its_step(tmp_path) -> None:
    assert RESTART_EVIDENCE == RESTART_KEY  # the key the fan-in's digest files the line under
    # verl's RayPPOTrainer._load_checkpoint prints these three lines on a resume (volcengine/verl,
    # verl/trainer/ppo/ray_trainer.py, commit 00401103a8c8900774aba04b910de5b0af930b99:
    # print(f"Load from checkpoint folder: {global_step_folder}"), print(f"Setting global step to
    # {self.global_steps}"), print(f"Resuming from {global_step_folder}"), the folder asserted to
    # hold "global_step_"); a colour code and markup appended to test the cleaning
    folder, steps = "/ckpt/rl_a/global_step_1200", 1200
    tail = (f"step 500 | reward 0.3\nLoad from checkpoint folder: {folder}\nSetting global step to {steps}\n"
            f"Resuming from {folder} \x1b[31m<b>\nstep 1201 | reward 0.4\n")  # fmt: skip
    line = restart_evidence(tail)
    assert line.startswith("Resuming from /ckpt/rl_a/global_step_1200")
    store = HistoryStore(tmp_path, retention_days=10_000)
    _sweep(store, 0)
    _sweep(store, 1, evidence={RESTART_KEY: line})
    _sweep(store, 2, evidence={RESTART_KEY: line})  # the same line still in the tail: one restart
    _sweep(store, 3, evidence={RESTART_KEY: "x" * 5000 + " resume_from_checkpoint"})
    table = pq.read_table(store.files()[1].path).to_pandas()
    row = table[(table["record"] == "job") & (table["job_id"] == "41")].iloc[0]
    assert row[RESTART_LINE] == "Resuming from /ckpt/rl_a/global_step_1200 <b>"  # the colour code stripped
    assert row[RESTART_STEP] == 1200.0
    other = table[(table["record"] == "job") & (table["job_id"] == "42")].iloc[0]
    assert pd.isna(other[RESTART_LINE]) and pd.isna(other[RESTART_STEP])  # its log states no restart
    view = load_job_view(store, "c1", "41", cache=JobCache())
    restarts = [m for m in view.marks if m.kind == "restart"]
    assert [(m.step, m.at[:13]) for m in restarts] == [(1200, "2026-12-01T01"), (40, "2026-12-01T03")]
    assert "the log says: Resuming from /ckpt/rl_a/global_step_1200" in restarts[0].label
    assert "names no step: marked at this sweep's" in restarts[1].label and len(restarts[1].label) <= 300
    drawn = chart_data(view)["marks"]
    assert {"kind": "restart", "step": 1200, "at": restarts[0].at, "label": restarts[0].label} in drawn
    page = job_page(view)
    assert (
        "step 1200 · <b>restart</b> restart: the log says: Resuming from /ckpt/rl_a/global_step_1200 &lt;b&gt;" in page
    )
    assert "<b>\nstep" not in page and "\x1b" not in page


def test_a_one_job_read_skips_row_groups_without_losing_a_row(tmp_path) -> None:
    store = HistoryStore(tmp_path, retention_days=10_000)
    jobs = [Job("c1", str(j), f"rl__{j}", "RUNNING", "squeue", bucket="RL", metrics={"step": 99},
                points={"reward": [[float(s), s / 7 + j] for s in range(100)]}) for j in (*range(300, 0, -1), 5, 50)]  # fmt: skip
    snap = ClusterSnapshot("c1", "slurm", ClusterStatus.OK, running=jobs, finished=[])
    path = store.append(sweep_frame([snap], [], run_id="r", window_start=T0 - H, window_end=T0), run_id="r",
                        window_end=T0)  # fmt: skip
    meta = pq.ParquetFile(path).metadata
    whole = pq.read_table(path).to_pandas()
    for job_id in ("5", "50", "300", "1", "999"):
        groups = _groups_for(meta, {"cluster": "c1", "job_id": job_id})
        assert meta.num_row_groups > 3 and groups is not None and len(groups) < meta.num_row_groups
        got = read_file(path, where={"cluster": "c1", "job_id": job_id}, read_only=True)
        want = whole[(whole["cluster"] == "c1") & (whole["job_id"] == job_id)]
        assert got is not None and len(got) == len(want)  # 300 jobs: the job row(s) and 100 points each
        assert got["value"].dropna().tolist() == want["value"].dropna().tolist()
    assert len(read_file(path, where={"cluster": "c1", "job_id": "5"}, read_only=True)) == 2 + 200


def test_a_request_out_of_time_reads_newest_first_says_what_is_left_and_the_next_reads_on(tmp_path) -> None:
    store, cache = HistoryStore(tmp_path, retention_days=10_000), JobCache()
    for i in range(40):
        _sweep(store, i)
    part = load_job_view(store, "c1", "41", cache=cache, budget=0.0)  # one batch, then the budget is spent
    assert cache.reads == BATCH and len(part.rows) == BATCH
    assert part.rows[-1]["m.step"] == 400 and part.curves[0].points[0][0] == 10 * (40 - BATCH)  # the newest
    left = [n for n in part.notes if "not read yet" in n]
    assert len(left) == 1 and left[0].startswith(f"{40 - BATCH} of the 40 sweep files") and "reload" in left[0]
    assert f"{40 - BATCH} of the 40 sweep files" in job_page(part)
    whole = load_job_view(store, "c1", "41", cache=cache, budget=0.0)  # reads the 8 left
    assert cache.reads == 40 and not whole.notes and _same(_shown(whole), _shown(_fresh(store)))


def test_megatron_s_resume_line_names_its_iteration_as_the_restart_step() -> None:
    # Megatron-LM load_checkpoint prints, on rank 0 (NVIDIA/Megatron-LM, megatron/training/checkpointing.py,
    # commit 0032978f335e0b72490147137948f9a45269f9d7): f'  successfully loaded checkpoint from {load_dir} '
    # f'[ t {_tp_r + 1}/{_tp_w}, ' f'p {_pp_r + 1}/{_pp_w} ] ' f'at iteration {iteration}'; its folders
    # are 'iter_{:07d}' (get_checkpoint_name). The line is built by that format here.
    load_dir, iteration = "/leonardo_scratch/ckpt/step_2_mix", 5427
    said = f"  successfully loaded checkpoint from {load_dir} [ t {0 + 1}/{2}, p {1 + 1}/{4} ] at iteration {iteration}"
    tail = f" iteration     5426/  250000 | lm loss: 2.3E+00 |\n{said}\n iteration     5428/  250000 |\n"
    line = restart_evidence(tail)
    assert line == said.strip()
    job = Job("c1", "41", "sft_meg", "RUNNING", "squeue", evidence={RESTART_KEY: line})
    assert restart_of(job) == (said.strip(), 5427.0)  # not the 2 of the folder's name, nor a rank
    folder = f"/ckpt/run/iter_{1200:07d}"
    job = Job("c1", "41", "sft_meg", "RUNNING", "squeue", evidence={RESTART_KEY: f"loading checkpoint from {folder}"})
    assert restart_of(job)[1] == 1200.0
    job = Job("c1", "41", "x", "RUNNING", "squeue", evidence={RESTART_KEY: "Resuming training from a fresh start"})
    assert restart_of(job)[1] is None  # names no step: none is made up
