"""The shipped Prometheus alert rules (include/monitoring/prometheus/sweep_alerts.yml) checked and
unit-tested by Debian's promtool (scripts/test.sh installs the prometheus package): a wedge, a
collapse, a sweep that has not succeeded in 2 cadences; and the endpoint's exposition passes
`promtool check metrics` (Prometheus' naming lint: units, _total, label names)."""

from __future__ import annotations

import datetime as dt
import subprocess
from collections import Counter

import pytest
from sweep_runner import ROOT

from sweep_core.history.openmetrics import Facts, RunFacts, exposition, families
from sweep_core.history.rows import sweep_frame
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Flag, Job

pytestmark = pytest.mark.slow  # Debian's promtool: scripts/test.sh installs it, --fast installs nothing
RULES = ROOT / "include" / "monitoring" / "prometheus"


def test_promtool_checks_and_unit_tests_the_shipped_alert_rules() -> None:
    check = subprocess.run(["promtool", "check", "rules", "sweep_alerts.yml"], cwd=RULES, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert check.returncode == 0 and "SUCCESS: 7 rules found" in check.stdout, check.stdout + check.stderr
    test = subprocess.run(["promtool", "test", "rules", "sweep_alerts.test.yml"], cwd=RULES, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert test.returncode == 0 and "SUCCESS" in test.stdout, test.stdout + test.stderr


def test_the_exposition_passes_promtools_metric_lint() -> None:
    end = dt.datetime(2026, 12, 6, 12, tzinfo=dt.UTC)
    snap = ClusterSnapshot("hpc", "slurm", ClusterStatus.OK, running=[
        Job("hpc", "1", "rl__a", "RUNNING", "squeue", bucket="RL", minutes_since_output=3, metrics={"reward": 0.2}),
        Job("hpc", "2", "sft__b", "RUNNING", "squeue", bucket="SFT", minutes_since_output=1, metrics={"loss": 1.5}),
    ], quota={"status": "OK", "worst": {"used": 5, "soft": 10, "kind": "bytes"}})  # fmt: skip
    frame = sweep_frame([snap], [Flag(rule="rl_collapse", severity="critical", cluster="hpc", job_id="1", message="x")],
                        run_id="r", window_start=end, window_end=end)  # fmt: skip
    facts = Facts(report=frame, watch=frame, runs=[RunFacts("monitor_cron_sweep", end, 20.0, {"hpc": 3.0}, 10800.0)],
                  acts=Counter({("hpc", "cancel"): 1}), approvals=[("sweep_cancel", end)])  # fmt: skip
    body, _ = exposition(families(facts))
    lint = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, timeout=60)
    assert lint.returncode == 0 and not lint.stdout.strip() and not lint.stderr.strip(), lint.stdout + lint.stderr
