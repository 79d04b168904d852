"""Live GPU polls run where the runbook wants them (issue 41): the report sweep's gather probes at
most ops.md gpu_probe_max RUNNING jobs with `srun --overlap`, the 5-minute watch's gather starts no
srun step at all (an `accounting` cluster keeps its ONE sstat). The cost per hour per cluster:
benchmarks/gpu_probe_hourly.py."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from sweep_core.config.ops import load_cluster
from sweep_core.config.sweep import load_sweep_config
from sweep_core.gpu.probe import gpu_patterns, probe_for_run
from sweep_core.slurm.gather import build_gather_script
from sweep_core.slurm.gather_plan import gather_request

ROOT = Path(__file__).resolve().parents[2]
END = dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC)


def _request(cluster: str, *, watch: bool, probe: str | None = None):
    config = load_sweep_config(ROOT / "include" / "sweep.yaml")
    cfg = load_cluster(ROOT / "include" / "ops", cluster)
    if probe is not None:
        cfg = cfg.model_copy(update={"gpu_probe": probe})
    return gather_request(cfg, config.gather, END - dt.timedelta(hours=3), END,
                          gpu_patterns=gpu_patterns(config.buckets), watch=watch)  # fmt: skip


def test_the_watch_starts_no_srun_probe_the_report_sweep_at_most_gpu_probe_max() -> None:
    for cluster in ("leonardo", "tacc"):
        report, watch = _request(cluster, watch=False), _request(cluster, watch=True)
        assert (report.gpu_probe, report.gpu_max) == ("srun-overlap", 20)
        assert watch.gpu_probe == "none"
        assert "GPU_PROBE=none" in build_gather_script(watch)[0]  # the script's header: gpu_probe.sh skips
        assert "GPU_PROBE=srun-overlap" in build_gather_script(report)[0]


def test_accounting_is_one_sstat_and_stays_on_the_watch() -> None:
    assert probe_for_run("accounting", watch=True) == "accounting"
    assert probe_for_run("srun-overlap", watch=True) == "none"
    assert probe_for_run("srun-overlap", watch=False) == "srun-overlap"
    assert _request("leonardo", watch=True, probe="accounting").gpu_probe == "accounting"
