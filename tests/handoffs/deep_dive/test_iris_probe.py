"""The iris deep-dive's log digest (pure): the whole log streamed in, bounded memory, and a stream
that stops before a job's end is unknown, never a short healthy log."""

from __future__ import annotations

from pathlib import Path

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.handoffs.deep_dive.iris_probe import LogDigest, read_log_stream, read_rollouts, rollout_dir

ROOT = Path(__file__).resolve().parents[3]
CFG = load_sweep_config(ROOT / "include" / "sweep.yaml")
MCFG = metrics_config(CFG.metrics)
KINDS = (("weight-sync", CFG.deep_dive.weight_sync_patterns), ("engine-starvation", CFG.deep_dive.starvation_patterns))


def _events(job: str, lines: list[str], end: bool = True) -> list[dict]:
    evs: list[dict] = [{"job": job, "state": "JOB_STATE_RUNNING", "submitted_at_ms": 1}]
    evs += [{"l": x, "t": 1000 + i} for i, x in enumerate(lines)]
    return evs + ([{"end": job, "lines": len(lines), "cut": False}] if end else [])


def test_metric_and_signature_lines_survive_a_small_tail() -> None:
    lines = ['WANDB_MIRROR {"trainer/global_step": 1, "reward/mean": 0.0}', "weight sync failed: NaN in shard 3"]
    lines += [f"heartbeat {i}" for i in range(20000)]
    d = LogDigest(MCFG, KINDS, tail_bytes=2048)
    for x in lines:
        d.feed(x)
    assert d.tail_size <= 2048 and len(d.tail) < 200  # bounded whatever the log's length
    assert d.text().startswith('WANDB_MIRROR {"trainer/global_step": 1')
    (hit,) = d.signatures()
    assert (hit.kind, hit.line_no) == ("weight-sync", 2)


def test_a_stream_cut_midway_is_unknown_not_short() -> None:
    evs = _events("/u/a", ["x"]) + _events("/u/b", ["y"] * 5, end=False) + [{"error": "controller: timed out"}]
    got = read_log_stream(evs, ["/u/a", "/u/b", "/u/c"], MCFG, KINDS, 4096, 10_000, "controller X")
    assert got["/u/a"].log == "x\n" and got["/u/a"].state == "RUNNING" and got["/u/a"].log_age_s == 9.0
    assert got["/u/b"].log is None and got["/u/b"].log_problem == "controller X: controller: timed out"
    assert got["/u/c"].log is None and "timed out" in got["/u/c"].log_problem


def test_rollout_dir_and_files(tmp_path: Path) -> None:
    assert rollout_dir("s3://b/rl/{name}/t", "/u/rl__a", "rl__a") == "s3://b/rl/rl__a/t"
    assert rollout_dir("s3://b/{name}", "/u/..", "..") == "" and rollout_dir("", "/u/a", "a") == ""
    (tmp_path / "a.jsonl").write_text('{"response": "hi"}\n' * 100)
    (tmp_path / "notes.txt").write_text("x")
    files, why = read_rollouts(tmp_path, ["*.jsonl"], 5, 64)
    assert why == "" and [f[0] for f in files] == ["a.jsonl"] and files[0][2] is True and len(files[0][1]) == 64
    assert "does not exist" in read_rollouts(tmp_path / "gone", ["*.jsonl"], 5, 64)[1]


def test_ray_worker_hang_lines_forwarded_into_the_iris_log_are_quoted_near_its_last_output() -> None:
    """iris has no log dir: Ray forwards worker output into the job log, whose newest lines are
    searched for the hang signals (opCount alone is none)."""
    from sweep_core.handoffs.deep_dive.ray_logs import hang_hits

    dead = "(EngineCore pid=812, ip=10.0.3.7) vllm.v1.engine.exceptions.EngineDeadError: EngineCore died"
    opcount = "(RayWorker pid=900) NCCL INFO comm 0x55d1 rank 3 opCount 1a2f lastOpCount 1a2e"
    got = read_log_stream(_events("/u/a", ["step 1", opcount, dead]), ["/u/a"], MCFG, KINDS, 4096, 9_000_000, "c")
    g = got["/u/a"]
    assert g.log_mtime == 1 and g.ray_note.endswith("the newest 3 line(s) searched")
    (hit,) = hang_hits(g.ray or [], MCFG)
    assert hit.line == dead and hit.evidence(g.log_mtime).startswith(
        "the iris job log (Ray forwards worker output into it) (file last written 1970-01-01 00:00:01Z, at the "
        "job's last output): (EngineCore pid=812"
    )
