"""The shipped include/ is the runbook's clusters (issue 27): every value the runbook
(/work/shared/spec/monitor-cron-sweep.md, "the runbook" below) names is in the shipped config, and
every hand-off the shipped config leaves off says why (``OFF: <handoff> needs <field> in <file>``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from sweep_core.admin.switches import HANDOFFS, cluster_switches
from sweep_core.config.ops import cluster_names, load_cluster
from sweep_core.config.sweep import load_sweep_config
from sweep_core.handoffs.chain.plan import chain_series

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "include" / "ops"
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")
DELPHI = "experiments/active/delphi/rl-scaling-laws-6279"

# (cluster, ops.md field, the runbook's value, the runbook's words)
OPS_FIELDS: list[tuple[str, str, Any, str]] = [
    # §1 Gather: "Scope = Leonardo + CoreWeave(iris) + TACC(Vista) — all three each sweep"
    ("leonardo", "status", "active", "§1 Scope"),
    ("coreweave", "status", "active", "§1 Scope"),
    ("tacc", "status", "active", "§1 Scope"),
    ("leonardo", "scheduler", "slurm", "§1 Leonardo + TACC are SLURM"),
    ("tacc", "scheduler", "slurm", "§1 Leonardo + TACC are SLURM"),
    ("coreweave", "scheduler", "iris", "§1 CoreWeave is a k8s/iris controller backend with NO ssh"),
    # §1 "Jupiter is SKIPPED (MDC downtime until ~2026-07-12)"; "Perlmutter DROPPED 2026-06-05"
    ("jupiter", "status", "skipped", "§1 Jupiter is SKIPPED"),
    ("jupiter", "skip_until", dt.date(2026, 7, 12), "§1 until ~2026-07-12"),
    ("perlmutter", "status", "dropped", "§1 Perlmutter DROPPED"),
    # §1 SLURM: "TACC <user>=penfever via ssh TACCVista"
    ("tacc", "user", "penfever", "§1 TACC <user>=penfever"),
    # §1 "iris_ops.py /benjaminfeuer/<job>"; "iris --cluster=cw-us-east-02a"
    ("coreweave", "user", "benjaminfeuer", "§1 CoreWeave /benjaminfeuer/<job>"),
    ("coreweave", "iris_cluster", "cw-us-east-02a", "§1 CoreWeave --cluster=cw-us-east-02a"),
    # §1 "export KUBECONFIG=~/.kube/coreweave-iris-gpu": the file named, its own current-context (none named)
    ("coreweave", "kubeconfig", "~/.kube/coreweave-iris-gpu", "§1 export KUBECONFIG=~/.kube/coreweave-iris-gpu"),
    ("coreweave", "kube_context", "", "§1 KUBECONFIG=...: the file's current-context"),
    # §1 TACC: "eval_jobs_dir=/scratch/10635/penfever/eval_jobs": where the harvest reads its results
    ("tacc", "eval_results_dir", "/scratch/10635/penfever/eval_jobs", "§1 TACC eval_jobs_dir"),
    # §1 TACC quota: its own command (read by health/quota_parsers.parse_taccinfo)
    ("tacc", "quota.command", "/usr/local/etc/taccinfo", "§1 INODE HEADROOM per cluster"),
    # §1 CoreWeave: "artifacts go to HF/R2, no POSIX tree to reap"; Leonardo's bind is disk quota
    ("coreweave", "quota.kind", "none", "§1 INODE HEADROOM: CoreWeave no POSIX tree"),
    ("leonardo", "quota.kind", "bytes", "§1 INODE HEADROOM: Leonardo's bind is disk quota"),
    # §1 Jupiter: "jutil project dataquota -p <project> + df -i"; Inodes are the binding constraint
    ("jupiter", "quota.kind", "inodes", "§1 INODE HEADROOM"),
]

# (cluster, ops.md field holding a list, a value it must hold, the runbook's words)
OPS_LISTS: list[tuple[str, str, str, str]] = [
    # §1 "login01 fork-saturation is a second false-empty cause → re-check via login02/03/04"
    ("leonardo", "login_nodes", "login01", "§1 login01 ... re-check via login02/03/04"),
    ("leonardo", "login_nodes", "login02", "§1 re-check via login02/03/04"),
    ("leonardo", "login_nodes", "login03", "§1 re-check via login02/03/04"),
    ("leonardo", "login_nodes", "login04", "§1 re-check via login02/03/04"),
    # §1 TACC: "eval_jobs_dir=/scratch/10635/penfever/eval_jobs" (harvest + reap its eval jobs)
    ("tacc", "log_roots", "/scratch/10635/penfever/eval_jobs", "§1 TACC eval_jobs_dir"),
    ("tacc", "artifact_roots", "/scratch/10635/penfever/eval_jobs", "§1 TACC eval_jobs_dir"),
    # §1 INODE HEADROOM: "the shared datasets project on /e/data1/datasets (where …/playground/ot-baf lives)"
    ("jupiter", "artifact_roots", "/e/data1/datasets/playground/ot-baf", "§1 INODE HEADROOM"),
]

# (cluster, text the ops.md must carry, the runbook's words): values for a person (prose), where the
# field would be wrong on the Airflow worker (the operator's Mac paths) or there is no field
OPS_TEXT: list[tuple[str, str, str]] = [
    ("tacc", "TACCVista", "§1 ssh TACCVista"),
    ("tacc", "eval/tacc/eval_harbor.sbatch", "§1 TACC sbatch_script"),
    ("tacc", "--job_type eval_listener --cluster-config tacc", "§1 TACC eval front door"),
    ("tacc", "canary", "§1 sanity-check the canary's traces uploaded + registered"),
    ("jupiter", "jutil project dataquota -p", "§1 INODE HEADROOM"),
    ("coreweave", "~/.kube/coreweave-iris-gpu", "§1 export KUBECONFIG=~/.kube/coreweave-iris-gpu"),
    ("coreweave", "/Users/benjaminfeuer/miniconda3/envs/otagent/bin/iris", "§1 the otagent-env iris binary"),
    ("coreweave", "/Users/benjaminfeuer/miniconda3/envs/otagent/bin/python", "§1 PY=..."),
]

# §4 "Standalone eval-grid trackers": the grids the harvest must find under trackers.globs
TRACKERS = [
    f"{DELPHI}/baseline_evals/grid.md",
    f"{DELPHI}/base_sft_evals/grid.md",
    f"{DELPHI}/pass_at_k_sft_evals/grid.md",
    f"{DELPHI}/main_sft_evals/SCORES.md",
]
# §4 "HF-only SFT chain ... main_sft_evals/SCORES.md; ... base_sft_evals/grid.md"
CHAIN_TRACKERS = {f"{DELPHI}/main_sft_evals/SCORES.md", f"{DELPHI}/base_sft_evals/grid.md"}
# §4 "Completion → the matching cleanup skill"
FLAVORS = {
    "rl-agentic-job-cleanup",
    "rl-standard-job-cleanup",
    "sft-job-cleanup",
    "datagen-job-cleanup",
    "eval-agentic-cleanup",
}
# §4 RL collapse rule: "zclip/staleclip/stale_clip/ z_clip/maxgn09_hint/shaped_entropy"
ABLATION_TAGS = {"zclip", "staleclip", "stale_clip", "z_clip", "maxgn09_hint", "shaped_entropy"}
# §4 "agentic (Harbor/Daytona/terminal_bench)" (the name fallback; the trace_jobs/ dir decides first)
AGENTIC_TAGS = {"harbor", "daytona", "terminal_bench"}


def _field(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = obj[part] if isinstance(obj, dict) else getattr(obj, part)
    return obj


@pytest.mark.parametrize(("cluster", "key", "value", "said"), OPS_FIELDS, ids=[f"{c}.{k}" for c, k, _, _ in OPS_FIELDS])
def test_ops_field_holds_the_runbooks_value(cluster: str, key: str, value: Any, said: str) -> None:
    assert _field(load_cluster(OPS, cluster), key) == value, said


@pytest.mark.parametrize(
    ("cluster", "key", "value", "said"), OPS_LISTS, ids=[f"{c}.{k}:{v}" for c, k, v, _ in OPS_LISTS]
)
def test_ops_list_holds_the_runbooks_value(cluster: str, key: str, value: str, said: str) -> None:
    got = _field(load_cluster(OPS, cluster), key)
    names = [getattr(x, "name", x) for x in got]
    assert value in names, said


@pytest.mark.parametrize(("cluster", "text", "said"), OPS_TEXT, ids=[f"{c}:{t}" for c, t, _ in OPS_TEXT])
def test_ops_md_carries_the_runbooks_value_for_a_person(cluster: str, text: str, said: str) -> None:
    assert text in (OPS / cluster / "ops.md").read_text(encoding="utf-8"), said


def test_sweep_yaml_holds_the_runbooks_values() -> None:
    rules = CONFIG.rules
    assert ABLATION_TAGS <= set(rules.ablation_tags)  # §4 RL collapse rule
    assert AGENTIC_TAGS <= set(rules.agentic_rl_tags)  # §4 Completion: RL by flavor
    assert "a3" in rules.concluded_series  # §5 "a3 series CONCLUDED"
    assert any("DCAgent2" in p for p in rules.eval_exempt)  # §4 "DCAgent2/* measurement runs are EXEMPT"
    assert {"AgentTimeoutError", "ContextLengthExceeded"} <= set(CONFIG.metrics.eval.passthrough)  # §1
    assert FLAVORS <= set(CONFIG.cleanup.flavors)  # §4 Completion
    # §2 Bucket every job by type: rl__* / sft__* / datagen__* / eval-*
    patterns = {b.name: [getattr(p, "pattern", p) for p in b.patterns] for b in CONFIG.buckets}
    assert "^rl__" in patterns["RL"] and "^sft__" in patterns["SFT"] and "^datagen__" in patterns["Datagen"]
    assert "^eval-" in patterns["Eval"]


@pytest.mark.parametrize("tracker", TRACKERS)
def test_every_runbook_tracker_grid_is_found_by_the_harvest_globs(tracker: str) -> None:
    from fnmatch import fnmatch

    def matches(glob: str) -> bool:  # ** spans directories, as pathlib's glob does
        return fnmatch(tracker, glob) or fnmatch(tracker, glob.replace("**/", ""))

    assert any(matches(g) for g in CONFIG.trackers.globs), tracker


def test_hf_chain_names_both_grids_and_says_why_it_is_off() -> None:
    series = CONFIG.hf_chain.series
    assert {s.tracker for s in series} == CHAIN_TRACKERS  # §4 HF-only chain: both grids
    assert all(not s.db_registration for s in series)  # HF-only: no DB registration
    assert chain_series(CONFIG.hf_chain) == []  # nothing is advanced with commands the runbook never gave
    cfg = load_cluster(OPS, "leonardo")
    chain = {s.handoff: s for s in cluster_switches(cfg, CONFIG, None, "ops.md", "sweep.yaml")}["hf_chain"]
    assert not chain.on and chain.needs_config
    for i, s in enumerate(series):
        assert f"hf_chain.series[{i}].match/hub_repo/upload/eval ({s.name})" in chain.why


def test_every_off_of_the_shipped_config_has_its_reason() -> None:
    for name in cluster_names(OPS):
        cfg = load_cluster(OPS, name)
        for s in cluster_switches(cfg, CONFIG, None, f"include/ops/{name}/ops.md", "include/sweep.yaml"):
            assert s.handoff in HANDOFFS and s.why
            if s.on:
                continue
            # an OFF is either a value to set (the field and the file named) or why it never runs there
            if s.needs_config:
                assert " in include/" in s.why, s.why
            else:
                assert s.why.startswith((f"status {cfg.status} in ops.md", f"{cfg.scheduler}:", "relaunch_commands"))


# (cluster, hand-off, the OFF line's field and file): what the runbook does not name, left empty on
# purpose, said in check-config and every sweep (the ops.md file named as include/ops/<cluster>/ops.md)
OFF_BY_DESIGN: list[tuple[str, str, str]] = [
    # §1 "Harvest finished TACC evals the same way as Leonardo": Leonardo's results dir is not named
    ("leonardo", "harvest", "eval_results_dir in include/ops/leonardo/ops.md"),
    # §1 "Drive named campaigns (flawed_summ et al.) off their OWN tracker docs": no path named
    ("leonardo", "campaigns", "campaigns in include/sweep.yaml"),
    ("tacc", "campaigns", "campaigns in include/sweep.yaml"),
    ("coreweave", "campaigns", "campaigns in include/sweep.yaml"),
    # §6 "update the relevant tracker (a3 / MiniMax datagen / Delphi)": the datagen tracker's path is not named
    ("leonardo", "datagen_tracker", "consolidate.tracker in include/sweep.yaml"),
    ("tacc", "datagen_tracker", "consolidate.tracker in include/sweep.yaml"),
    # §1 the otagent-env client is the operator's Mac's: no deployment path named
    ("coreweave", "cancel", "controller_url and iris_python in include/ops/coreweave/ops.md"),
]


@pytest.mark.parametrize(("cluster", "handoff", "needs"), OFF_BY_DESIGN, ids=[f"{c}.{h}" for c, h, _ in OFF_BY_DESIGN])
def test_what_the_runbook_does_not_name_is_off_naming_its_field_and_file(
    cluster: str, handoff: str, needs: str
) -> None:
    cfg = load_cluster(OPS, cluster)
    got = {
        s.handoff: s for s in cluster_switches(cfg, CONFIG, None, f"include/ops/{cluster}/ops.md", "include/sweep.yaml")
    }
    s = got[handoff]
    assert not s.on and s.needs_config and needs in s.why, s.why


def test_tacc_harvest_waits_only_for_the_tracker_clone() -> None:
    """TACC's results dir is the runbook's: with a tracker clone its harvest is ON, reading there."""
    from sweep_core.handoffs.harvest.plan import tracker_settings

    trackers = tracker_settings(CONFIG.trackers, {"SWEEP_TRACKER_REPO": "/srv/ot-agent"})
    got = {s.handoff: s for s in cluster_switches(load_cluster(OPS, "tacc"), CONFIG, trackers)}
    assert got["harvest"].on and got["harvest"].why.endswith("results from /scratch/10635/penfever/eval_jobs")
    leo = {s.handoff: s for s in cluster_switches(load_cluster(OPS, "leonardo"), CONFIG, trackers)}
    assert not leo["harvest"].on and leo["harvest"].why == "harvest needs eval_results_dir in ops.md"
