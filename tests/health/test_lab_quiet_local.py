"""The lab's own config raises no warning on a fresh bundled cluster (issue 41): the artifact root the
quota check reads and the clone tree_hygiene reads (lab-config/ops/local/ops.md) are made by
scripts/local_cluster.sh, so a first sweep says nothing about its own config; its Clusters row is short."""

from __future__ import annotations

import pytest
from helpers import table_rows
from lab import ARTIFACTS, HOME
from sweep_runner import run_sweep

pytestmark = pytest.mark.cluster


def test_a_sweep_of_the_lab_cluster_warns_nothing_about_its_own_config(local_cluster, tmp_path) -> None:
    assert ARTIFACTS.is_dir() and (HOME / "repo" / ".git").is_dir()  # what the cluster script made
    run = run_sweep({"clusters": ["local"], "lookback_hours": 0.25}, tmp_path)
    assert run.state == "success", run.task_states
    own = [ln for ln in run.report.splitlines() if ln.startswith(("- [inode_headroom]", "- [tree_hygiene]"))]
    assert not [ln for ln in own if "No such file or directory" in ln or "UNKNOWN" in ln], own
    quota = run.snapshots["local"].quota or {}
    assert quota.get("status") == "OK", quota
    row = next(r for r in table_rows(run.rendered["overview"]) if r["Cluster"] == "local")
    assert row["Note"].count("OFF") == 1 and "(what each needs: run log head, check-config)" in row["Note"]
