"""The live GPU polls' cost per hour per cluster (issue 41): how many `srun --jobid --overlap
nvidia-smi` job steps the sweep starts on a shipped SLURM cluster's login node and controller in one
hour, before (every 5-minute watch probed, as the report sweep does) and now (the watch probes
nothing: sweep_core.gpu.probe.probe_for_run; the report sweep at most ops.md gpu_probe_max).

On the bundled cluster (one scratch instance: its cluster.env), N RUNNING RL jobs (the stub
nvidia-smi answers each: scripts/gpu_stub/), then per shipped cluster whose ops.md says
`gpu_probe: srun-overlap` (leonardo, tacc) the REAL gather script of its ops.md (user and log
pattern made the instance's) as the watch and as the report sweep builds it, run as the instance's
user. Steps per run = the job steps slurmdbd recorded for the N jobs during that run (sacct, named
nvidia-smi); runs per hour from include/sweep.yaml `schedule` and `watch.schedule` (croniter over
24 h). The RL deep-dive probes once per job handed to it (not scheduled): not counted here.

    source scripts/env.sh && python benchmarks/gpu_probe_hourly.py \
        /var/tmp/sweep-local-cluster-scratch8/cluster.env [24]

It cancels every job of the instance's user: run it on a scratch instance no test is using.
"""

from __future__ import annotations

import datetime as dt
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import yaml
from croniter import croniter

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))

from sweep_core.config.ops import load_cluster  # noqa: E402
from sweep_core.config.sweep import load_sweep_config  # noqa: E402
from sweep_core.gpu.probe import gpu_patterns  # noqa: E402
from sweep_core.slurm.gather import build_gather_script, parse_gather_output  # noqa: E402
from sweep_core.slurm.gather_plan import gather_request  # noqa: E402

STUB_JOBS = Path("/var/lib/sweep-gpu-stub/jobs")


def load_env(path: Path) -> dict[str, str]:
    """The instance's cluster.env as a dict (SLURM_CONF, SWEEP_CLUSTER_USER, ...)."""
    out = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.startswith("#"):
            out[key.strip()] = " ".join(shlex.split(value))
    return out


def sh(env: dict[str, str], *args: str, user: str = "", stdin: str | None = None) -> str:
    """Run a Slurm command with the instance's SLURM_CONF (as ``user`` when given)."""
    pre = ["runuser", "-u", user, "--", "env", f"SLURM_CONF={env['SLURM_CONF']}", f"HOME=/home/{user}"] if user else []
    e = {**os.environ, "SLURM_CONF": env["SLURM_CONF"]}
    return subprocess.run([*pre, *args], input=stdin, capture_output=True, text=True, env=e, timeout=900).stdout


def runs_per_hour(cron: str | None) -> float:
    """Runs per hour of a cron schedule, counted over 24 h (None = off: 0)."""
    if not cron:
        return 0.0
    start = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    it, n = croniter(cron, start - dt.timedelta(seconds=1)), 0  # a run at the start counts
    while it.get_next(dt.datetime) < start + dt.timedelta(hours=24):
        n += 1
    return n / 24.0


def probe_steps(env: dict[str, str], ids: list[str]) -> int:
    """Job steps slurmdbd recorded for these jobs that ran nvidia-smi (the probes so far)."""
    out = sh(env, "sacct", "-n", "-P", "-j", ",".join(ids), "-o", "JobID,JobName")
    return sum(1 for line in out.splitlines() if line.endswith("|nvidia-smi"))


def main(env_file: Path, n: int) -> None:
    env = load_env(env_file)
    user = env["SWEEP_CLUSTER_USER"]
    logs = Path(f"/home/{user}/jobs/logs")
    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    raw = yaml.safe_load((ROOT / "include" / "sweep.yaml").read_text())
    report_h, watch_h = runs_per_hour(raw.get("schedule")), runs_per_hour((raw.get("watch") or {}).get("schedule"))
    sh(env, "scancel", "-u", user)
    ids = []
    try:
        for k in range(n):
            cmd = ["sbatch", "--parsable", "-J", f"rl__hourly_{k}", "-o", str(logs / "%x-%j.out"),
                   "--wrap", "echo 'Training Step Progress: 3/600'; exec sleep 3000"]  # fmt: skip
            ids.append(sh(env, *cmd, user=user).strip().split(";")[0])
        for jid in ids:
            (STUB_JOBS / jid).write_text("h100x8_busy\n")
        end = time.time() + 300
        while len(sh(env, "squeue", "-h", "-u", user, "-t", "RUNNING").splitlines()) < n:
            if time.time() > end:
                raise SystemExit(f"{n} jobs not RUNNING after 300 s")
            time.sleep(2)
        print(f"{n} RUNNING RL jobs as {user} ({env_file}); report sweep {raw.get('schedule')!r} = "
              f"{report_h:g} runs/h, watch {(raw.get('watch') or {}).get('schedule')!r} = {watch_h:g} runs/h")  # fmt: skip
        lines = [
            "| cluster | gpu_probe_max | steps per report run | steps per watch run (before) | steps per watch run "
            "(now) | job steps/hour before | job steps/hour now |",
            "|---|---|---|---|---|---|---|",
        ]
        for name in ("leonardo", "tacc"):
            shipped = load_cluster(ROOT / "include" / "ops", name)
            if shipped.gpu_probe != "srun-overlap":
                continue
            cfg = shipped.model_copy(update={"user": user, "log_pattern": str(logs / "%x-%j.out")})
            now = dt.datetime.now(dt.UTC)
            got = {}
            for kind, watch in (("report", False), ("watch before", False), ("watch now", True)):
                req = gather_request(cfg, config.gather, now - dt.timedelta(hours=1), now,
                                     gpu_patterns=gpu_patterns(config.buckets), watch=watch)  # fmt: skip
                script, marker = build_gather_script(req)
                before = probe_steps(env, ids)
                out = parse_gather_output(sh(env, "bash", "-s", user=user, stdin=script), marker)
                time.sleep(3)  # slurmdbd records the steps a moment later
                steps = probe_steps(env, ids) - before
                records = sum(1 for k in out.records if k.startswith("gpu:"))
                got[kind] = steps
                print(f"{name} {kind}: {records} probe record(s), {steps} job step(s) in sacct", flush=True)
            before_h = got["report"] * report_h + got["watch before"] * watch_h
            now_h = got["report"] * report_h + got["watch now"] * watch_h
            lines.append(f"| {name} | {cfg.gpu_probe_max} | {got['report']} | {got['watch before']} | "
                         f"{got['watch now']} | {before_h:.1f} | {now_h:.1f} |")  # fmt: skip
    finally:
        sh(env, "scancel", "-u", user)
        for jid in ids:
            (STUB_JOBS / jid).unlink(missing_ok=True)
        for f in logs.glob("rl__hourly_*"):
            f.unlink()
    print("\n".join(lines))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 24)
