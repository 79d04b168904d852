"""A healthy sweep reads quietly (issue 41): a ``?`` column's reason in a few words in the row (every
reason in full under the run log's "Why `?`"), one note per fact. The RL lines are what the demo's iris
job prints (scripts/demo_iris_jobs.py line 15: step and reward only, no grad/entropy/TIS)."""

from __future__ import annotations

from pathlib import Path

from helpers import table_rows

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.render import short_reasons
from sweep_core.fanin.report import render_run_log
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job

ROOT = Path(__file__).resolve().parents[2]
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")
NOW = 1_764_680_000.0
DEMO_RL = "".join(
    f'Training Step Progress: {i}/900\nWANDB_MIRROR {{"trainer/global_step": {i}, "trainer/max_steps": 900, '
    f'"reward/mean": 0.5{i % 10}}}\n'
    for i in range(1, 5)
)


def run(name: str, tail: str, *, age_min: float = 1, **kw) -> Job:
    """A RUNNING job as the gather builds it (its log last written ``age_min`` ago)."""
    return Job("leo", "41", name, "RUNNING", "squeue", log_tail=tail, log_mtime=NOW - age_min * 60, **kw)


def sweep(running: list[Job]):
    snap = ClusterSnapshot("leo", "slurm", ClusterStatus.OK, remote_now=NOW, running=running, finished=[], pending=[])
    result = run_fan_in([snap], CONFIG)
    return result, {(f.rule, f.job_name): f for f in result.flags}


def _row(result, bucket: str, name: str) -> dict[str, str]:
    return next(r for r in table_rows(result.rendered.tables[bucket]) if r["Name"] == name)


def test_a_question_mark_reason_is_a_few_words_in_the_row_and_whole_in_the_run_log() -> None:
    result, _ = sweep([run("rl__demo_grpo", DEMO_RL)])
    job = result.snapshots[0].running[0]
    assert len(job.metric_problems) == 3 and all("(names: " in p for p in job.metric_problems)
    row = _row(result, "RL", "rl__demo_grpo")
    assert (row["Grad"], row["Entropy"], row["TIS"]) == ("?", "?", "?")
    assert row["Note"] == "?: no grad_norm, entropy, tis in the last WANDB_MIRROR dict"
    table = result.rendered.tables["RL"]
    assert sum("rl__demo_grpo" in ln or ln.startswith("│ ") for ln in table.splitlines()) <= 3  # header + 1 line
    text = render_run_log(result, ROOT / "include" / "templates", dag_id="d", run_id="r",
                          window_start="2026-12-02T09:00:00+00:00", window_end="2026-12-02T12:00:00+00:00")  # fmt: skip
    why = text.split("## Why `?`")[1].split("## Actions taken")[0]
    assert all(p.replace("_", "\\_") in why or p in why for p in job.metric_problems), why


def test_short_reasons_keep_what_differs_and_cut_long_ones() -> None:
    got = short_reasons(["no loss in the log tail (x)", "no loss in the log tail (y)", "step unknown: " + "z" * 200])
    assert got.startswith("no loss in the log tail; step unknown: zz") and got.endswith("…")
    assert short_reasons(["pass rate {0:.2f} is not a usable number"]) == "pass rate {0:.2f} is not a usable number"


def test_a_log_older_than_its_job_is_said_once_in_the_row() -> None:
    # a reused log file, last written 120 min ago, by a job that has run 3 min: the rule's message says it
    old = run("rl__wedged", "Training Step Progress: 12/900\n", age_min=120, elapsed="00:03:00", num_nodes=1)
    result, flags = sweep([old])
    assert "log last written before this job started" in flags[("liveness_stale", "rl__wedged")].message
    note = _row(result, "RL", "rl__wedged")["Note"]
    assert note.count("before this job started") == 1, note


def test_an_efficiency_question_mark_is_short_in_the_row_and_whole_in_the_run_log() -> None:
    from sweep_core.slurm.efficiency import job_efficiency

    # the bundled cluster's accounting (jobacct_gather none): TotalCPU 0, no MaxRSS (test_efficiency.py's row 103)
    rec = {"Elapsed": "00:01:00", "Timelimit": "00:05:00", "TotalCPU": "00:00:00", "AllocCPUS": "2", "NNodes": "1",
           "ReqMem": "200M", "AllocTRES": "billing=2,cpu=2,node=1"}  # fmt: skip
    eff = job_efficiency(rec, [{"TotalCPU": "00:00:00", "MaxRSS": "", "TRESUsageInTot": ""}]).to_dict()
    done = Job("leo", "42", "sft__done", "COMPLETED", "sacct", efficiency=eff, exit_code="0:0")
    snap = ClusterSnapshot("leo", "slurm", ClusterStatus.OK, remote_now=NOW, running=[], finished=[done], pending=[])
    result = run_fan_in([snap], CONFIG)
    note = _row(result, "SFT", "sft__done")["Note"]
    assert "efficiency ?: TotalCPU 0 and no step usage recorded;" in note and "(job accounting gather off" not in note
    text = render_run_log(result, ROOT / "include" / "templates", dag_id="d", run_id="r",
                          window_start="2026-12-02T09:00:00+00:00", window_end="2026-12-02T12:00:00+00:00")  # fmt: skip
    why = text.split("## Why `?`")[1].split("## Actions taken")[0]
    assert "sft\\_\\_done" in why or "sft__done" in why
    assert "(job accounting gather off?)" in why
