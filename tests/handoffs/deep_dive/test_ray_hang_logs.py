"""Deeper hang evidence: the deep-dive's script (real bash on real files) lists the job's Ray
worker-log dir (ops.md ray_log_dir) ONCE at depth 1, reads the last bytes of the worker logs last
written near the job's last output, and the verdict quotes each hang line (EngineDead, NCCL
timeout, Watchdog, RPC timeout; never opCount alone) with its file and time. Unset, the input is
said OFF with its reason; a dir outside the log roots is refused."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from handoff_fakes import NO_JOB_SQUEUE, cluster, local_bash, ops

from sweep_core.config.deep_dive_schema import DeepDiveSection
from sweep_core.config.ops import ClusterConfig
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.handoffs.deep_dive.inputs import DeepDiveInput
from sweep_core.handoffs.deep_dive.plan import decide
from sweep_core.handoffs.deep_dive.ray_logs import RayLog, hang_hits
from sweep_core.handoffs.deep_dive.usecase import deep_dive

CFG = DeepDiveSection()
MCFG = metrics_config(None)
OPCOUNT = "NCCL INFO [Service thread] comm 0x55d1 rank 3 nranks 16 opCount 1a2f lastOpCount 1a2e"
WATCHDOG = (
    "[rank3]:[E1205 11:58:01.123456 4242 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=912, OpType=ALLREDUCE) ran for 600010 milliseconds before timing out."
)
ENGINE_DEAD = "[2026-12-05 11:57:30,001 E 4242 4299] vllm.v1.engine.exceptions.EngineDeadError: EngineCore died"
NEAR_END = "RPC to raylet timed out: RpcError: Deadline Exceeded (timeout 30 s)"


def _bash(tmp: Path):
    """run_script through real bash; squeue knows no job (ops.md log_pattern finds the log), ``ls``
    is the real one recorded, ``find`` and ``du`` fail the test (the GPFS ban)."""
    calls = tmp / "calls"
    calls.unlink(missing_ok=True)
    real_ls = subprocess.run(["bash", "-c", "command -v ls"], capture_output=True, text=True).stdout.strip()
    stubs = {"squeue": NO_JOB_SQUEUE, "ls": f'#!/bin/bash\nprintf "ls %s\\n" "$*" >>{calls}\nexec {real_ls} "$@"\n'}
    stubs |= {b: f'#!/bin/sh\necho "{b} $*" >>{calls}\nexit 1\n' for b in ("find", "du")}
    return local_bash(tmp, stubs), calls


def _write(path: Path, text: str, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))


def _wandb(step: int) -> str:
    return "WANDB_MIRROR " + json.dumps({"trainer/global_step": step, "reward/mean": 0.4}) + "\n"


def _layout(tmp: Path, last_output: float) -> Path:
    """logs/rl__wedge-31.out last written at ``last_output``; its Ray session (the job's --temp-dir
    below the log dir) with worker logs written near it, long before it, or not worker logs at all."""
    logs = tmp / "logs"
    _write(logs / "rl__wedge-31.out", "".join(_wandb(s) for s in range(1, 6)), last_output)
    session = logs / "ray-31" / "session_2026-12-05_10-00-00_123_4242" / "logs"
    near = last_output - 120
    _write(session / "worker-aa11-01000000-4242.err", f"INFO ok\n{WATCHDOG}\n{WATCHDOG}\n", near)
    _write(session / "worker-bb22-01000000-4243.out", f"{ENGINE_DEAD}\nshutting down\n", last_output + 60)
    _write(session / "worker-cc33-01000000-4244.err", f"{OPCOUNT}\n" * 50, near)  # opCount alone: no evidence
    # the signature beyond the last ray_file_bytes of a long file: not read; the one near the end is
    _write(session / "worker-dd44-01000000-4245.err", "EngineDead early\n" + "x" * 70000 + f"\n{NEAR_END}\n", near)
    _write(session / "worker-ee55-01000000-4246.err", "NCCL timeout: an hour before\n", last_output - 3600)
    _write(session / "raylet.out", "EngineDead in the raylet\n", near)  # not a worker log
    _write(session / "old" / "worker-ff66-01000000-1.err", "EngineDead one level down\n", near)  # depth 1 only
    (session / "worker-gg77-01000000-4247.err").symlink_to(tmp / "elsewhere.err")
    _write(tmp / "elsewhere.err", "EngineDead through a symlink\n", near)
    (logs / "ray-31" / "session_latest").symlink_to(session.parent.name)
    return logs


def _probe(tmp: Path, ray_log_dir: str, logs: Path) -> tuple[dict, list[str]]:
    cfg = cluster("local", log_roots=(str(logs),), artifact_roots=(str(tmp / "art"),),
                  log_pattern=str(logs / "%x-%j.out"), ray_log_dir=ray_log_dir)  # fmt: skip
    run, calls = _bash(tmp)
    jobs = [{"cluster": "local", "job_id": "31", "name": "rl__wedge"}]
    (v,) = deep_dive(jobs, CFG, MCFG, load_cluster=ops(cfg), run_script=run)["verdicts"]
    return v, calls.read_text().splitlines() if calls.exists() else []


def test_hang_lines_of_the_ray_worker_logs_near_a_stale_last_output_are_quoted_and_kill(tmp_path) -> None:
    last = time.time() - 3 * 3600  # the job log stopped 3 h ago: not advancing
    logs = _layout(tmp_path, last)
    v, calls = _probe(tmp_path, "ray-%j/session_latest/logs", logs)
    assert v["verdict"] == "KILL" and v["basis"] == "one strong signal (ray-hang)", v
    head = next(e for e in v["evidence"] if "Ray worker log(s)" in e)
    assert head.startswith(
        "3 hang line(s) in 3 Ray worker log(s) written near the last output while the job log has not "
        "advanced for 30+ min (a wedge): Ray worker hang line in worker-"
    )
    quoted = [e for e in v["evidence"] if "Ray worker hang line in " in e]
    text = "\n".join(quoted)
    assert (
        "worker-aa11-01000000-4242.err (line stamped 12-05 11:58:01; file last written " in text
        and "2 min before the job's last output) (2 times): " + WATCHDOG in text
    )
    assert "worker-bb22-01000000-4243.out (line stamped 2026-12-05 11:57:30; " in text
    assert "1 min after the job's last output): " + ENGINE_DEAD in text
    assert "worker-dd44-01000000-4245.err (file last written " in text and NEAR_END in text
    for absent in ("opCount", "EngineDead early", "an hour before", "in the raylet", "one level down", "symlink"):
        assert absent not in text, absent
    # the ray dir listed once, depth 1 (the log dir once for the chain links); no find, no du
    assert sorted(calls) == sorted(
        [f"ls -1t -- {logs}", f"ls -1t -- {logs / 'ray-31' / 'session_2026-12-05_10-00-00_123_4242' / 'logs'}"]
    )


def test_worker_logs_in_the_log_dir_itself_reuse_its_one_listing_and_an_advancing_log_makes_it_weak(
    tmp_path,
) -> None:
    last = time.time() - 60  # the log advances
    logs = tmp_path / "logs"
    _write(logs / "rl__wedge-31.out", "".join(_wandb(s) for s in range(1, 6)), last)
    _write(logs / "worker-aa11-01000000-4242.err", f"{WATCHDOG}\n", last - 30)
    v, calls = _probe(tmp_path, ".", logs)
    assert calls == [f"ls -1t -- {logs}"]
    assert v["verdict"] == "NO-KILL"
    (weak,) = [e for e in v["evidence"] if e.startswith("weak signal: 1 hang line(s) in 1 Ray worker log(s)")]
    assert "while the job log still advances" in weak and WATCHDOG in weak
    assert "watch hang lines in the Ray worker logs near the last output" in v["watch"]


def test_unset_ray_log_dir_is_off_with_its_reason_and_a_dir_outside_the_log_roots_is_refused(tmp_path) -> None:
    logs = _layout(tmp_path, time.time() - 3 * 3600)
    v, _ = _probe(tmp_path, "", logs)
    assert v["verdict"] == "NO-KILL"
    assert "Ray worker logs: off: ops.md ray_log_dir is unset (Ray writes worker logs to each node's " \
        "/tmp/ray/session_*/logs, which the login node cannot read)" in v["unknown"]  # fmt: skip
    outside = tmp_path / "outside"
    _write(outside / "worker-aa11-01000000-4242.err", f"{WATCHDOG}\n", time.time() - 3 * 3600)
    v, calls = _probe(tmp_path, str(outside), logs)
    assert any(u.startswith("Ray worker logs: ray_log_dir ") and "outside the ops.md log_roots: not read" in u
               for u in v["unknown"]), v["unknown"]  # fmt: skip
    assert not any(str(outside) in c for c in calls)


def test_opcount_alone_is_no_hang_line_and_a_truncated_first_line_is_not_quoted() -> None:
    logs = [
        RayLog("worker-a.err", 1_700_000_000, f"{OPCOUNT}\n{OPCOUNT}\n"),
        RayLog("worker-b.err", 1_700_000_000, "meout (cut mid-line) RPC timeout\nok\n", truncated=True),
        RayLog("worker-c.err", 1_700_000_000, f"{WATCHDOG} opCount 1a2f\n"),
    ]
    hits = hang_hits(logs, MCFG)
    assert [(h.file, h.stamp, h.count) for h in hits] == [("worker-c.err", "12-05 11:58:01", 1)]
    assert hits[0].evidence(1_700_000_000 + 600) == (
        f"worker-c.err (line stamped 12-05 11:58:01; file last written 2023-11-14 22:13:20Z, 10 min before the "
        f"job's last output): {WATCHDOG} opCount 1a2f"
    )
    # the verdict: no Ray worker logs read is said unknown, never healthy
    inp = DeepDiveInput("c", "1", "rl__x", series=[{"step": 1, "reward": 0.3}], hang_note="off: why")
    assert "Ray worker logs: off: why" in decide(inp, CFG).unknown


def test_check_config_says_whether_the_ray_worker_logs_are_read_and_why_not() -> None:
    from sweep_core.admin.switches import cluster_switches
    from sweep_core.config.sweep import load_sweep_config

    sweep = load_sweep_config(Path(__file__).resolve().parents[3] / "include" / "sweep.yaml")

    def line(cfg: ClusterConfig) -> str:
        return next(s for s in cluster_switches(cfg, sweep, None, "ops/x/ops.md") if s.handoff == "deep_dive").why

    assert "Ray worker logs OFF: needs ray_log_dir in ops/x/ops.md (Ray's default /tmp/ray is on each node" in line(
        cluster("x", log_roots=("/l",))
    )
    assert "Ray worker logs: ray-%j/session_latest/logs" in line(
        cluster("x", log_roots=("/l",), ray_log_dir="ray-%j/session_latest/logs")
    )
