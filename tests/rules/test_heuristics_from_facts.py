"""Issue 27 "heuristics from facts": ablation tags found inside a name's tokens (``_zclip2``,
``staleclip5``, the ``stale_clip``/``z_clip`` spellings), and an RL completion's cleanup flavor
decided by what the gather saw in its artifact dir (trace_jobs/ or not), the name only as fallback."""

from __future__ import annotations

import pytest
from test_rules import ended, log, run, sweep

from sweep_core.rules.context import has_tag, has_tag_within

ABLATION = ("zclip", "staleclip", "stale_clip", "z_clip", "maxgn09_hint", "shaped_entropy")


@pytest.mark.parametrize(
    ("name", "tag"),
    [
        ("rl__a2_qwen8b_zclip2", "zclip"),
        ("rl__a2_qwen8b_staleclip5", "staleclip"),
        ("rl__a2_stale_clip5_q8b", "stale_clip"),
        ("rl__a2_stale-clip_q8b", "stale_clip"),  # a tag's parts may be joined by _ - / . or nothing
        ("rl__a2_Z_CLIP3", "z_clip"),
        ("rl__a2_shaped_entropy3", "shaped_entropy"),
        ("rl__a2_shapedentropy0p5", "shaped_entropy"),
        ("rl__a2_maxgn09_hint", "maxgn09_hint"),
        ("rl__a2.zclip", "zclip"),
    ],
)
def test_an_ablation_tag_is_found_inside_a_token_and_in_each_spelling(name: str, tag: str) -> None:
    assert has_tag_within(name, ABLATION) == tag
    assert has_tag_within(name, ("stale_clip", "z_clip", "shaped_entropy", "maxgn09_hint"))  # one spelling is enough
    assert has_tag(name, ABLATION) in ("", tag)  # the whole-token matcher missed most of these


@pytest.mark.parametrize("name", ["rl__a2_qwen8b_lr3e6", "rl__a3_base", "rl__clipped_reward", "rl__z_cl_ip"])
def test_a_name_without_an_ablation_tag_matches_none(name: str) -> None:
    assert has_tag_within(name, ABLATION) == ""


def test_a_numbered_ablation_that_collapses_is_observed_not_cancelled() -> None:
    """The runbook's override: ``…_zclip2`` collapsing is the experiment (INFO, no action); the
    same collapse on a standard run is CRITICAL cancel+salvage."""
    for name in ("rl__a2_qwen8b_zclip2", "rl__a2_staleclip5", "rl__a2_shaped_entropy3"):
        _, flags = sweep([run(name, log("rl_collapsed.out"))])
        f = flags[("rl_collapse", name)]
        assert f.severity == "info" and f.action == "" and "ablation observation" in f.message, f
    _, flags = sweep([run("rl__a2_qwen8b", log("rl_collapsed.out"))])
    assert flags[("rl_collapse", "rl__a2_qwen8b")].action == "cancel+salvage"


def _done(name: str, traces: bool | None) -> object:
    job = ended(name, "COMPLETED")
    if traces is not None:
        job.metrics.update(artifact_dir=f"/gpfs/art/{name}", trace_jobs=traces)
    return job


def test_trace_jobs_in_the_artifact_dir_makes_an_unnamed_agentic_run_agentic() -> None:
    _, flags = sweep([], [_done("rl__a2_swe_q8b", True)])
    f = flags[("completion_cleanup", "rl__a2_swe_q8b")]
    assert f.action == "cleanup:rl-agentic-job-cleanup"
    assert "/gpfs/art/rl__a2_swe_q8b holds trace_jobs/" in f.message and "the dir decides" in f.message


def test_no_trace_jobs_makes_a_harbor_named_run_standard() -> None:
    _, flags = sweep([], [_done("rl__harbor_tb2_qwen", False)])
    f = flags[("completion_cleanup", "rl__harbor_tb2_qwen")]
    assert f.action == "cleanup:rl-standard-job-cleanup"
    assert "has no trace_jobs/" in f.message and "the name says agentic (harbor)" in f.message


@pytest.mark.parametrize(
    ("name", "action"),
    [("rl__harbor_tb2_qwen", "cleanup:rl-agentic-job-cleanup"), ("rl__a2_math", "cleanup:rl-standard-job-cleanup")],
)
def test_without_an_artifact_dir_the_name_decides_and_the_flag_says_so(name: str, action: str) -> None:
    _, flags = sweep([], [_done(name, None)])
    f = flags[("completion_cleanup", name)]
    assert f.action == action and "by name" in f.message and "no artifact dir found" in f.message


def test_the_gathered_fact_survives_the_metric_extraction() -> None:
    """The fan-in fills each job's metric columns from its log: the gather's facts stay beside them."""
    result, _ = sweep([], [_done("rl__a2_swe_q8b", True)])
    job = result.snapshots[0].finished[0]
    assert job.metrics["trace_jobs"] is True and job.metrics["artifact_dir"] == "/gpfs/art/rl__a2_swe_q8b"
