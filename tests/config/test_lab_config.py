"""The lab's values live in lab-config/, not in the shipped include/: include/ops is the runbook's clusters
(no bundled local cluster, no lab host, user or home), include/sweep.yaml names no stub hub org, and
lab-config/lab_config.py lays the lab's values over the shipped config for the demo and the tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import yaml

from sweep_core.admin.switches import cluster_switches
from sweep_core.config.ops import cluster_names, load_cluster
from sweep_core.config.sweep import load_sweep_config

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "include"
# §1 Scope: Leonardo + CoreWeave(iris) + TACC(Vista); Jupiter SKIPPED; Perlmutter DROPPED
RUNBOOK_CLUSTERS = {"leonardo", "coreweave", "tacc", "jupiter", "perlmutter"}
LAB_MARKS = ("/home/sweep", "ssh_local", "sweep-local", "local_cluster.sh")


def _lab_config():
    spec = importlib.util.spec_from_file_location("lab_config", ROOT / "lab-config" / "lab_config.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_include_ops_holds_only_the_runbooks_clusters() -> None:
    assert set(cluster_names(INCLUDE / "ops")) == RUNBOOK_CLUSTERS
    for name in RUNBOOK_CLUSTERS:
        text = (INCLUDE / "ops" / name / "ops.md").read_text(encoding="utf-8")
        assert not [m for m in LAB_MARKS if m in text], name
        hosts = {n.host for n in load_cluster(INCLUDE / "ops", name).login_nodes}
        assert not hosts & {"127.0.0.1", "localhost"}, name


def test_include_sweep_yaml_names_no_lab_value() -> None:
    text = (INCLUDE / "sweep.yaml").read_text(encoding="utf-8")
    assert not [m for m in LAB_MARKS if m in text]
    config = load_sweep_config(INCLUDE / "sweep.yaml")
    assert config.cleanup.hub_org == "" and config.trackers.default_cluster == ""


def test_the_empty_hub_org_turns_cleanup_off_with_its_reason() -> None:
    """A cluster with artifact roots is not cleaned up against a repo with no org (``/name``)."""
    config = load_sweep_config(INCLUDE / "sweep.yaml")
    clusters = [load_cluster(INCLUDE / "ops", n) for n in sorted(RUNBOOK_CLUSTERS)]
    with_roots = [c.name for c in clusters if c.status == "active" and c.scheduler == "slurm" and c.artifact_roots]
    assert with_roots
    for name in with_roots:
        cfg = load_cluster(INCLUDE / "ops", name)
        got = {s.handoff: s for s in cluster_switches(cfg, config, None, "ops.md", "include/sweep.yaml")}
        assert not got["cleanup"].on and got["cleanup"].why == "cleanup needs cleanup.hub_org in include/sweep.yaml"
        assert not got["upload"].on and not got["consolidate"].on


def test_the_lab_config_is_the_shipped_one_with_the_lab_values(tmp_path) -> None:
    ops, sweep = _lab_config().write_lab(tmp_path / "lab", "sweep7")
    assert set(cluster_names(ops)) == RUNBOOK_CLUSTERS | {"local"}
    local = load_cluster(ops, "local")
    assert local.user == "sweep7" and local.artifact_roots == ("/home/sweep7/jobs/artifacts",)
    assert all(str(r).startswith("/home/sweep7/") for r in local.log_roots)
    shipped_leonardo = load_cluster(INCLUDE / "ops", "leonardo").model_dump(exclude={"path"})
    assert load_cluster(ops, "leonardo").model_dump(exclude={"path"}) == shipped_leonardo
    lab = load_sweep_config(sweep)
    assert lab.cleanup.hub_org == "sweep-local" and lab.trackers.default_cluster == "local"
    assert Path(lab.deep_dive.serving_lut_file) == INCLUDE / "serving_lut.yaml"
    # every other key is the shipped one
    shipped = load_sweep_config(INCLUDE / "sweep.yaml").model_dump()
    got = lab.model_dump()
    for section, key in (("cleanup", "hub_org"), ("trackers", "default_cluster"), ("deep_dive", "serving_lut_file")):
        shipped[section].pop(key), got[section].pop(key)
    assert got == shipped
    cfg = {s.handoff: s for s in cluster_switches(local, lab, None)}
    assert cfg["cleanup"].on


def test_lab_only_leaves_the_shipped_clusters_out(tmp_path) -> None:
    ops, _ = _lab_config().write_lab(tmp_path / "lab", "sweep", shipped=False)
    assert cluster_names(ops) == ["local"]


def test_the_overlay_merges_mappings_and_replaces_the_rest() -> None:
    overlay = _lab_config().overlay
    base = yaml.safe_load("a: {b: 1, c: [1, 2]}\nd: x\n")
    assert overlay(base, {"a": {"c": [3]}, "e": 1}) == {"a": {"b": 1, "c": [3]}, "d": "x", "e": 1}
