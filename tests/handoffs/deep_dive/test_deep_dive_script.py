"""The deep-dive's script run by real bash on real files (squeue a stand-in that knows no job, so
ops.md log_pattern finds the log): the metric history across chain-link logs through the sweep's
RL parser, the newest rollouts of the trace dir, signatures; nothing outside the ops.md roots is
read (a symlinked trace dir or log that leads out is refused and said), and the use-case turns it
into verdicts, KILL requests for sweep_cancel and ledger lines."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from handoff_fakes import cluster, local_bash, ops

from sweep_core.config.deep_dive_schema import DeepDiveSection
from sweep_core.config.ops import ClusterConfig
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.handoffs.deep_dive.usecase import deep_dive, deep_dive_record, kill_requests, settle
from sweep_core.ledger.given import merge_given
from sweep_core.ledger.store import load_ledger

CFG = DeepDiveSection()
MCFG = metrics_config(None)


def _wandb(step: int, reward: float) -> str:
    return "WANDB_MIRROR " + json.dumps({"trainer/global_step": step, "reward/mean": reward}) + "\n"


def _layout(tmp: Path) -> ClusterConfig:
    logs, art, outside = tmp / "logs", tmp / "art", tmp / "outside"
    for d in (logs, art, outside):
        d.mkdir()
    # healthy: two chain links, rewards rising; rollouts with text
    # the earlier link: the same name with its own id (as ops.md log_pattern %x-%j.out names it)
    (logs / "rl__good-1.out").write_text("".join(_wandb(s, 0.1 * s) for s in range(1, 4)))
    (logs / "rl__good-11.out").write_text("Training Step Progress: 5/100\n" + _wandb(4, 0.4) + _wandb(5, 0.5))
    good = art / "rl__good" / "trace_jobs"
    good.mkdir(parents=True)
    (good / "rollouts_0001.jsonl").write_text(
        "".join(json.dumps({"response": f"answer {i}"}) + "\n" for i in range(10))
    )
    # dead: all reward 0 on 12 steps, empty rollouts, a weight-sync line
    (logs / "rl__dead-12.out").write_text(
        "".join(_wandb(s, 0.0) for s in range(1, 13)) + "[rank3] weight sync failed: NaN in broadcast tensor\n"
    )
    dead = art / "rl__dead" / "trace_jobs"
    dead.mkdir(parents=True)
    (dead / "rollouts_0002.jsonl").write_text((json.dumps({"response": ""}) + "\n") * 6)
    # escape: a trace dir symlinked out of the artifact root, a log symlinked out of the log root
    (outside / "secret.jsonl").write_text(json.dumps({"response": "secret"}) + "\n")
    (art / "rl__esc").mkdir()
    (art / "rl__esc" / "trace_jobs").symlink_to(outside)
    (outside / "x.out").write_text(_wandb(1, 0.5))
    (logs / "rl__esc-13.out").symlink_to(outside / "x.out")
    return cluster("local", log_roots=(str(logs),), artifact_roots=(str(art),), log_pattern=str(logs / "%x-%j.out"))


def test_real_bash_probe_to_verdicts_kill_requests_and_ledger(tmp_path) -> None:
    cfg = _layout(tmp_path)
    jobs = [
        {"cluster": "local", "job_id": "11", "name": "rl__good"},
        {"cluster": "local", "job_id": "12", "name": "rl__dead"},
        {"cluster": "local", "job_id": "13", "name": "rl__esc"},
        {"cluster": "local", "job_id": "1;rm", "name": "rl__bad"},
        {"cluster": "gone", "job_id": "14", "name": "rl__far"},
    ]
    got = deep_dive(jobs, CFG, MCFG, load_cluster=ops(cfg), run_script=local_bash(tmp_path))
    by_id = {v["job_id"]: v for v in got["verdicts"]}
    good, dead, esc, far = by_id["11"], by_id["12"], by_id["13"], by_id["14"]
    assert good["verdict"] == "NO-KILL", good
    assert "reward 0.5 at step 5 (5 steps logged)" in good["evidence"]  # both links' history
    assert "rollouts have text (10/10 newest non-empty)" in good["evidence"]
    assert good["watch"][0] == "watch reward_mean < 0.05"
    assert any(u.startswith("GPU utilisation unknown (not probed") for u in good["unknown"])
    assert dead["verdict"] == "KILL"
    assert dead["evidence"][:2] == [
        "reward 0.0 on all 12 logged steps since step 1",
        "rollouts are empty strings (6/6 newest)",
    ]
    assert any(
        e.startswith("weight-sync signature at line 13 of this log: [rank3] weight sync failed")
        for e in dead["evidence"]
    )
    assert esc["verdict"] == "UNKNOWN"
    assert any("outside the ops.md log_roots: not read" in u for u in esc["unknown"])
    assert any("outside the ops.md artifact_roots: not read" in u for u in esc["unknown"])
    assert far["verdict"] == "UNKNOWN" and "ops.md" in far["unknown"][0]
    assert any("1;rm" in n and "not a Slurm job id" in n for n in got["notes"])

    kills = kill_requests(got["verdicts"])
    assert kills == [
        {
            "cluster": "local",
            "job_id": "12",
            "name": "rl__dead",
            "severity": "critical",
            "action": "kill-approval",
            "rule": "deep_dive_kill",
            "evidence": "[deep_dive_kill] KILL verdict on 3 strong signals (all-reward-0, empty-rollouts, weight-sync): "
            + "; ".join(dead["evidence"]),
        }
    ]
    text = deep_dive_record(got)
    assert "rl__dead" in text and "KILL: reward 0.0 on all 12 logged steps since step 1" in text

    at = dt.datetime(2026, 12, 3, 14, 5, tzinfo=dt.UTC)
    _, lines = settle(tmp_path / "runlogs", got["verdicts"], "dd1", at, dry_run=False, unknown_reprobes=3)
    assert "local|11: 2026-12-03 14:05Z NO-KILL, watch reward_mean < 0.05" in lines
    ledger = load_ledger(tmp_path / "runlogs")
    assert ledger.jobs["local|12"].deep_dive.startswith("2026-12-03 14:05Z KILL: reward 0.0 on all 12")
    # a re-run's fold (against the ledger before) keeps the verdict: merge_given carries it like `told`
    from sweep_core.ledger.entries import Ledger

    folded = merge_given(Ledger(), ledger)
    assert folded.jobs["local|11"].deep_dive == ledger.jobs["local|11"].deep_dive


def test_garbage_rollouts_and_a_disk_quota_line_reach_the_verdict_through_the_real_probe(tmp_path) -> None:
    """The detectors and the named traps on what the real bash probe read (issue 28)."""
    cfg = _layout(tmp_path)
    logs, art = tmp_path / "logs", tmp_path / "art"
    (logs / "rl__salad-21.out").write_text(
        "".join(_wandb(s, 0.3) for s in range(1, 6)) + "OSError: [Errno 122] Disk quota exceeded: '/ckpt/s5'\n"
    )
    trace = art / "rl__salad" / "trace_jobs"
    trace.mkdir(parents=True)
    garbage = "Let's think step by step. " + "the answer is 5. " * 60
    (trace / "rollouts_0001.jsonl").write_text("".join(json.dumps({"response": garbage}) + "\n" for _ in range(8)))
    jobs = [{"cluster": "local", "job_id": "21", "name": "rl__salad"}]
    (v,) = deep_dive(jobs, CFG, MCFG, load_cluster=ops(cfg), run_script=local_bash(tmp_path))["verdicts"]
    assert v["verdict"] == "KILL" and v["basis"] == "one strong signal (garbage-text)"
    assert v["evidence"][0].startswith("garbage rollout text in 8/8 newest (#1: runaway repetition: ")
    assert "the answer is 5' repeated 60 times" in v["evidence"][0]
    assert any(e.startswith("EDQUOT (Disk quota exceeded: see the quota cell") for e in v["evidence"])
    (req,) = kill_requests([v])
    assert req["evidence"].startswith(
        "[deep_dive_kill] KILL verdict on one strong signal (garbage-text): garbage rollout text"
    )
