"""Each flag rule on realistic inputs (log fixtures + jobs as the gather builds them)."""

from __future__ import annotations

from helpers import FIXTURES, table_rows

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.tracebacks import first_real_traceback
from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.rules.context import History

ROOT = FIXTURES.parents[1]
CONFIG = load_sweep_config(ROOT / "include" / "sweep.yaml")
NOW = 1_764_680_000.0


def log(name: str) -> str:
    return (FIXTURES / "logs" / name).read_text()


def run(name: str, tail: str = "", *, age_min: float = 1, **kw) -> Job:
    return Job(
        cluster="leo",
        job_id=kw.pop("job_id", str(abs(hash(name)) % 10_000)),
        name=name,
        state="RUNNING",
        source="squeue",
        log_tail=tail,
        log_mtime=NOW - age_min * 60,
        **kw,
    )


def ended(name: str, state: str, tail: str = "", **kw) -> Job:
    return Job(
        cluster="leo",
        job_id=kw.pop("job_id", str(abs(hash(name + state)) % 10_000)),
        name=name,
        state=state,
        source="sacct",
        log_tail=tail,
        exit_code=kw.pop("exit_code", "0:0"),
        **kw,
    )


def sweep(running=(), finished=(), pending=(), caps=None, history=None):
    snap = ClusterSnapshot(
        "leo",
        "slurm",
        ClusterStatus.OK,
        remote_now=NOW,
        running=list(running),
        finished=list(finished),
        pending=list(pending),
    )
    result = run_fan_in([snap], CONFIG, caps=caps, history=history)
    return result, {(f.rule, f.job_name): f for f in result.flags}


def test_healthy_rl_raises_nothing() -> None:
    _, flags = sweep([run("rl__a2_qwen8b", log("rl_healthy.out"))])
    assert flags == {}


def test_stalled_job_names_last_line_and_hang_signals() -> None:
    tail = "Training Step Progress: 12/100\n[rank0]: NCCL watchdog Timeout after 1800000ms\nstill waiting\n"
    _, flags = sweep([run("rl__a2_stall", tail, age_min=200, num_nodes=4)])
    f = flags[("liveness_stale", "rl__a2_stall")]
    assert "last line: 'still waiting'" in f.message and "NCCL watchdog" in f.message
    assert f.severity == "critical" and f.action == "kill-approval"  # multi-node, hours stale


def test_the_kill_threshold_of_a_silent_multi_node_job_is_rules_liveness_kill_minutes() -> None:
    tail = "Training Step Progress: 12/100\n"
    job = run("rl__a2_quiet", tail, age_min=70, num_nodes=2)
    _, flags = sweep([job])
    assert flags[("liveness_stale", "rl__a2_quiet")].action == "investigate"  # 70 min < the default 120
    short = CONFIG.model_copy(update={"rules": CONFIG.rules.model_copy(update={"liveness_kill_minutes": 60})})
    flags = {f.job_name: f for f in run_fan_in([_snap([job])], short).flags if f.rule == "liveness_stale"}
    assert flags["rl__a2_quiet"].severity == "critical" and flags["rl__a2_quiet"].action == "kill-approval"


def _snap(running: list[Job]) -> ClusterSnapshot:
    return ClusterSnapshot("leo", "slurm", ClusterStatus.OK, remote_now=NOW, running=running, finished=[], pending=[])


def test_collapse_two_signals_same_step_flags_cancel_and_salvage() -> None:
    result, flags = sweep([run("rl__a2_qwen8b_lr3e6", log("rl_collapsed.out"))])
    f = flags[("rl_collapse", "rl__a2_qwen8b_lr3e6")]
    assert f.action == "cancel+salvage" and "step 42" in f.message
    assert "grad_norm" in f.message and "reward" in f.message and "entropy" in f.message
    assert "[rl_collapse]" in result.rendered.tables["RL"]


def test_a_collapse_names_the_salvage_flavor_of_its_own_job_and_the_salvage_takes_it() -> None:
    """A standard GRPO run is salvaged by rl-standard-job-cleanup (model + metric CSVs, no trace dataset),
    a Harbor run by rl-agentic-job-cleanup: the flag line says which and the salvage act records it."""
    from sweep_core.handoffs.cancel.outcome import ActOutcome, Did
    from sweep_core.handoffs.upload.salvage import salvage_acts

    std, agentic = "rl__a2_qwen8b_dapo", "rl__a2_harbor_qwen8b"
    _, flags = sweep([run(std, log("rl_collapsed.out")), run(agentic, log("rl_collapsed.out"))])
    assert flags[("rl_collapse", std)].message.endswith("salvage by rl-standard-job-cleanup")
    assert flags[("rl_collapse", agentic)].message.endswith("salvage by rl-agentic-job-cleanup")

    class Req:
        def __init__(self, job_id: str, name: str) -> None:
            f = flags[("rl_collapse", name)]
            self.cluster, self.job_id, self.name, self.action = "leo", job_id, name, "cancel+salvage"
            self.evidence = f"[rl_collapse] CRITICAL leo RL {job_id} {name}: {f.message}"

    class Dec:
        def __init__(self, req: Req) -> None:
            self.request = req

    done = {"leo": {"1": ActOutcome(Did.CANCELLED, "cancelled"), "2": ActOutcome(Did.CANCELLED, "cancelled")}}
    acts = salvage_acts([Dec(Req("1", std)), Dec(Req("2", agentic))], done, "now", lambda name: "never-asked")
    assert [(a[2], a[3]["flavor"], a[3]["step"]) for a in acts] == [
        (std, "rl-standard-job-cleanup", "41"),
        (agentic, "rl-agentic-job-cleanup", "41"),
    ]
    old = Req("3", std)
    old.evidence = "[rl_collapse] CRITICAL leo RL 3 x: step 42: reward drop"  # a line from before: by name
    done["leo"]["3"] = ActOutcome(Did.CANCELLED, "cancelled")
    (act,) = salvage_acts([Dec(old)], done, "now", lambda name: f"by-name:{name}")
    assert act[3]["flavor"] == f"by-name:{std}"


def test_the_standard_rl_hub_check_is_the_model_and_its_metric_csvs() -> None:
    from sweep_core.handoffs.hub_evidence import judge_hub_listing

    (hub,) = CONFIG.cleanup.flavors["rl-standard-job-cleanup"].hub
    assert hub.type == "model"
    model = ["config.json", "model-00001-of-00002.safetensors"]
    assert judge_hub_listing(model, list(hub.expected)).ok is False  # the metric CSVs missing
    assert judge_hub_listing([*model, "metrics/train_metrics.csv"], list(hub.expected)).ok is True
    assert "-traces" not in hub.repo


def test_ablation_tag_only_observes() -> None:
    _, flags = sweep([run("rl__a2_zclip_qwen8b", log("rl_collapsed.out"))])
    f = flags[("rl_collapse", "rl__a2_zclip_qwen8b")]
    assert f.action == "" and "ablation observation (zclip), not actionable" in f.message


def test_nan_is_a_failure_even_for_ablations() -> None:
    _, flags = sweep([run("rl__a2_staleclip", log("rl_nan.out"))])
    f = flags[("rl_collapse", "rl__a2_staleclip")]
    assert f.severity == "critical" and "NaN" in f.message and f.action == "diagnose"


def test_resume_overshoot_and_completion_at_max() -> None:
    done = ended("rl__a2_cell5", "COMPLETED", log("rl_overshoot.out"))
    link = run("rl__a2_cell5", "Training Step Progress: 3/100\n")
    _, flags = sweep([link], [done])
    # the spurious link still runs under the same name (same artifact dir): cancel it first
    held = flags[("completion_cleanup", "rl__a2_cell5")]  # handed off: sweep_cleanup's probe holds it in the backlog
    assert held.action == "cleanup:rl-standard-job-cleanup" and "nothing is deleted while it lives" in held.message
    assert flags[("rl_resume_overshoot", "rl__a2_cell5")].action == "cancel"
    _, flags = sweep([], [done])
    assert flags[("completion_cleanup", "rl__a2_cell5")].action == "cleanup:rl-standard-job-cleanup"


def test_a_running_link_that_reports_a_step_past_max_steps_is_an_overshoot_with_the_step_unknown() -> None:
    """A resumed link past its end (``101/100``): the Step column is ``?`` with the reason (never a
    step above the total), and the overshoot rule still sees the link past max_steps and acts."""
    tail = 'Training Step Progress: 101/100\nWANDB_MIRROR {"trainer/global_step": 101, "trainer/max_steps": 100}\n'
    result, flags = sweep([run("rl__a2_cell6", tail)])
    job = result.snapshots[0].running[0]
    assert job.metrics["step"] is None and job.metrics["past_max_steps"] == 101
    assert any("101 is above the total 100" in p for p in job.metric_problems), job.metric_problems
    f = flags[("rl_resume_overshoot", "rl__a2_cell6")]
    assert f.action == "cancel" and "RUNNING at step 101/100: past max_steps" in f.message


def test_agentic_rl_completion_goes_to_agentic_cleanup() -> None:
    _, flags = sweep([], [ended("rl__harbor_tb2_qwen", "COMPLETED")])
    assert flags[("completion_cleanup", "rl__harbor_tb2_qwen")].action == "cleanup:rl-agentic-job-cleanup"


def test_chain_timeout_with_and_without_successor() -> None:
    _, flags = sweep(
        [run("rl__a2_chain", "Training Step Progress: 61/100\n")],
        [ended("rl__a2_chain", "TIMEOUT", exit_code="0:15"), ended("sft__lonely", "TIMEOUT")],
    )
    assert "successor" in flags[("chain_timeout", "rl__a2_chain")].message
    assert flags[("chain_timeout", "rl__a2_chain")].severity == "info"
    assert flags[("chain_timeout", "sft__lonely")].action == "diagnose"
    _, flags = sweep(
        [], [ended("sft__queued", "TIMEOUT")], pending=[Job("leo", "99", "sft__queued", "PENDING", "squeue-pending")]
    )
    assert flags[("chain_timeout", "sft__queued")].severity == "info"


def test_masked_traceback_shows_the_real_one() -> None:
    assert first_real_traceback(log("sft_masked_traceback.out")).startswith(
        "ValueError: sequence length 40962 exceeds max_position_embeddings"
    )
    _, flags = sweep([], [ended("sft__cell3", "FAILED", log("sft_masked_traceback.out"), exit_code="1:0")])
    f = flags[("genuine_failure", "sft__cell3")]
    assert "ValueError: sequence length" in f.message and "ChildFailedError" not in f.message
    assert "[new]" in f.message


def test_recurring_failure_is_marked_recurring() -> None:
    job = ended("sft__cell3", "FAILED", log("sft_masked_traceback.out"), exit_code="1:0")
    first, _ = sweep([], [job])
    sig = first.snapshots[0].finished[0].metrics["failure_signature"]
    again = ended("sft__cell3", "FAILED", log("sft_masked_traceback.out"), exit_code="1:0", job_id="777")
    _, flags = sweep([], [again], history=History(failure_signatures={sig: {f"leo|{job.job_id}"}}, known=True))
    assert "RECURRING" in flags[("genuine_failure", "sft__cell3")].message
    # the same job seen again by an overlapping window is not "recurring"
    same = ended("sft__cell3", "FAILED", log("sft_masked_traceback.out"), exit_code="1:0", job_id=job.job_id)
    _, flags = sweep([], [same], history=History(failure_signatures={sig: {f"leo|{job.job_id}"}}, known=True))
    assert "[new]" in flags[("genuine_failure", "sft__cell3")].message


def test_timeout_and_cancelled_are_not_genuine_failures() -> None:
    _, flags = sweep([], [ended("sft__x", "TIMEOUT"), ended("sft__y", "CANCELLED by 1001")])
    assert not any(rule == "genuine_failure" for rule, _ in flags)


def test_datagen_avg_turns_one_is_dead_and_all_chunks_done_is_cleanup() -> None:
    chunks = [["812_1", "COMPLETED"], ["812_2", "COMPLETED"]]
    _, flags = sweep(
        [run("datagen__minimax", log("datagen_dead.out"), job_id="900_1")],
        [ended("datagen__glm", "COMPLETED", job_id="812_2", chunks=chunks)],
    )
    assert flags[("datagen_realness", "datagen__minimax")].severity == "critical"
    assert flags[("completion_cleanup", "datagen__glm")].action == "cleanup:datagen-job-cleanup"


def test_datagen_with_chunks_left_is_not_cleaned() -> None:
    chunks = [["812_1", "COMPLETED"], ["812_[2-4]", "PENDING"]]
    _, flags = sweep([], [ended("datagen__glm", "COMPLETED", job_id="812_1", chunks=chunks)])
    assert ("completion_cleanup", "datagen__glm") not in flags


def test_eval_cleanup_only_when_upload_failed() -> None:
    _, flags = sweep(
        [],
        [
            ended("eval-ok", "COMPLETED", "50/50 trials, pass_rate=0.5\n"),
            ended("eval-up", "COMPLETED", log("eval_upload_failed.out")),
        ],
    )
    assert ("completion_cleanup", "eval-ok") not in flags
    assert flags[("completion_cleanup", "eval-up")].action == "cleanup:eval-agentic-cleanup"


def test_eval_zombie_instant_fail_and_dcagent2_exempt() -> None:
    _, flags = sweep(
        [run("eval-zombie", "50/50 trials, pass_rate=0.4\n"), run("eval-DCAgent2_measure", "", age_min=300)],
        [ended("eval-instant", "FAILED", "ImportError: no module x\n", elapsed="00:00:07", exit_code="1:0")],
    )
    assert "zombie" in flags[("eval_health", "eval-zombie")].message
    assert "instant-fail" in flags[("eval_health", "eval-instant")].message
    exempt = flags[("eval_health", "eval-DCAgent2_measure")]
    assert exempt.severity == "info" and "calibration" in exempt.message


def test_stalled_dcagent2_eval_gets_no_investigate_action() -> None:
    # Before: exempt in eval_health but liveness_stale still asked a person to investigate it.
    result, flags = sweep([run("eval-DCAgent2_measure", "", age_min=300), run("eval-plain", "", age_min=300)], [])
    mine = [f for f in result.flags if f.job_name == "eval-DCAgent2_measure"]
    assert [(f.rule, f.severity, f.action) for f in mine] == [("eval_health", "info", "")]
    assert "calibration" in mine[0].message
    assert flags[("liveness_stale", "eval-plain")].action == "investigate"  # the exemption is by name only


def test_new_untested_rl_and_standing_constraints() -> None:
    jobs = [
        run("rl__a2_debug_geom", log("rl_healthy.out"), job_id="1"),
        run("rl__a3_qwen", log("rl_healthy.out"), job_id="2"),
        run("rl__a2_seen", log("rl_healthy.out"), job_id="3"),
    ]
    _, flags = sweep(jobs, caps={"leo": 2}, history=History(rl_names={"rl__a3_qwen", "rl__a2_seen"}, known=True))
    assert flags[("rl_new_untested", "rl__a2_debug_geom")].action == "deep-dive"
    assert ("rl_new_untested", "rl__a2_seen") not in flags
    assert ("concluded_series", "rl__a3_qwen") in flags
    assert "3 RL jobs RUNNING > cap 2" in flags[("rl_concurrency_cap", "")].message


def test_a_deep_dive_verdict_on_record_is_shown_not_asked_again() -> None:
    from sweep_core.ledger.entries import Ledger, LedgerEntry

    ledger = Ledger()
    verdict = "2026-12-03 14:05Z NO-KILL, watch reward_mean < 0.05"
    ledger.jobs["leo|7"] = LedgerEntry("leo", "7", "rl__a2_debug_geom", deep_dive=verdict)
    history = History(rl_names={"rl__a2_seen"}, known=True, ledger=ledger)
    result, flags = sweep([run("rl__a2_debug_geom", log("rl_healthy.out"), job_id="7")], history=history)
    f = flags[("rl_new_untested", "rl__a2_debug_geom")]
    assert f.action == "" and f.severity == "info"
    assert "deep-dive on record, not asked again" in f.message
    (row,) = table_rows(result.rendered.tables["RL"])
    assert f"deep-dive {verdict}" in row["Note"]
    # a KILL on record stays loud (sweep_cancel waits for a human)
    ledger.jobs["leo|7"].deep_dive = "2026-12-03 14:05Z KILL: reward 0.0 on all 48 logged steps since step 12"
    _, flags = sweep([run("rl__a2_debug_geom", log("rl_healthy.out"), job_id="7")], history=history)
    assert flags[("rl_new_untested", "rl__a2_debug_geom")].severity == "warn"


def test_first_sweep_does_not_call_every_run_new() -> None:
    _, flags = sweep([run("rl__a2_plain", log("rl_healthy.out"))], history=History())
    assert ("rl_new_untested", "rl__a2_plain") not in flags


def test_every_flag_lists_its_rule_in_the_summary() -> None:
    from sweep_core.fanin.report import flagged_lines

    result, flags = sweep([run("rl__a2_x", log("rl_collapsed.out"))], [ended("sft__z", "FAILED", exit_code="1:0")])
    lines = flagged_lines(result)
    for rule, _ in flags:
        assert any(line.startswith(f"[{rule}]") for line in lines)


# ---- new / untested RL: the launch fingerprint of a series, remembered across sweeps --------------


def state_after(*jobs: Job, hour: int = 3) -> dict:
    """What the Parquet history keeps of one sweep that saw ``jobs``, as the rules read it."""
    import datetime as dt

    from sweep_core.history.rows import sweep_frame
    from sweep_core.history.rules_history import states_from_frame

    result, _ = sweep(list(jobs), history=History(known=True))
    end = dt.datetime(2026, 12, 2, hour, tzinfo=dt.UTC)
    frame = sweep_frame(result.snapshots, result.flags, run_id=f"r{hour}", window_start=end, window_end=end)
    (state,) = states_from_frame(frame)
    return state


def remembered(*jobs: Job) -> History:
    """The history a later sweep loads after one sweep saw ``jobs``."""
    from sweep_core.history.rules_history import history_from

    return history_from([state_after(*jobs)])


BANNER = log("rl_launch_banner.out")


def test_unchanged_fingerprint_raises_no_flag() -> None:
    history = remembered(run("rl__a2_qwen8b", BANNER, num_nodes=4, partition="boost_usr_prod"))
    assert history.rl_fingerprints["rl__a2_qwen8b"] == {
        "nodes": 4,
        "partition": "boost_usr_prod",
        "model": "Qwen/Qwen3-8B",
        "config": "configs/rl/a2.yaml",
        "image": "/leonardo_work/AIFAC_L01_028/containers/vllm_0.10.sif",
        "commit": "abc1234",
    }
    _, flags = sweep([run("rl__a2_qwen8b", BANNER, num_nodes=4, partition="boost_usr_prod")], history=history)
    assert ("rl_new_untested", "rl__a2_qwen8b") not in flags


def test_geometry_change_is_a_deep_dive_naming_it() -> None:
    history = remembered(run("rl__a2_qwen8b", BANNER, num_nodes=4))
    _, flags = sweep([run("rl__a2_qwen8b", BANNER, num_nodes=8)], history=history)
    f = flags[("rl_new_untested", "rl__a2_qwen8b")]
    assert f.action == "deep-dive" and "nodes 4→8" in f.message
    assert "GPU utilisation vs the serving LUT at the new geometry" in f.message
    assert "all-reward-0" in f.message and "literal rollouts" in f.message and "KILL/NO-KILL" in f.message


def test_image_config_and_commit_change_of_a_restarted_link() -> None:
    history = remembered(run("rl__a2_qwen8b", BANNER, num_nodes=4))
    relaunch = (
        BANNER.replace("vllm_0.10.sif", "vllm_0.11.sif")
        .replace("configs/rl/a2.yaml", "configs/rl/a2b.yaml")
        .replace("git_sha=abc1234", "git_sha=def5678")
    )
    _, flags = sweep([run("rl__a2_qwen8b_resume2", relaunch, num_nodes=4)], history=history)
    f = flags[("rl_new_untested", "rl__a2_qwen8b_resume2")]  # same series: not "first sweep to see"
    assert "first sweep" not in f.message and "series rl__a2_qwen8b" in f.message
    assert "image vllm_0.10.sif→vllm_0.11.sif" in f.message
    assert "config a2.yaml→a2b.yaml" in f.message and "commit abc1234→def5678" in f.message
    assert "nodes" not in f.message.split(": deep-dive")[0]


def test_a_short_and_a_full_sha_are_the_same_commit() -> None:
    history = remembered(run("rl__a2_qwen8b", BANNER))
    full = BANNER.replace("git_sha=abc1234", "git_sha=abc1234ffee0011")
    _, flags = sweep([run("rl__a2_qwen8b", full)], history=history)
    assert ("rl_new_untested", "rl__a2_qwen8b") not in flags


def test_unreadable_fields_are_not_a_change() -> None:
    # the banner scrolled out of this link's tail and no chain tail has it; squeue gave no node count
    history = remembered(run("rl__a2_qwen8b", BANNER, num_nodes=4))
    _, flags = sweep([run("rl__a2_qwen8b", log("rl_healthy.out"))], history=history)
    assert ("rl_new_untested", "rl__a2_qwen8b") not in flags
    # ...and a sweep that could not read them does not forget them: a later real change is still seen
    from sweep_core.history.rules_history import history_from

    states = [state_after(run("rl__a2_qwen8b", BANNER), hour=3), state_after(run("rl__a2_qwen8b", ""), hour=6)]
    history = history_from(states)
    assert history.rl_fingerprints["rl__a2_qwen8b"]["image"].endswith("vllm_0.10.sif")
    _, flags = sweep([run("rl__a2_qwen8b", BANNER.replace("vllm_0.10", "vllm_0.11"))], history=history)
    assert "image vllm_0.10.sif→vllm_0.11.sif" in flags[("rl_new_untested", "rl__a2_qwen8b")].message


def test_banner_read_from_the_earlier_chain_link() -> None:
    history = remembered(run("rl__a2_qwen8b", BANNER))
    moved = BANNER.replace("Qwen/Qwen3-8B", "Qwen/Qwen3-14B")
    _, flags = sweep([run("rl__a2_qwen8b", log("rl_chain_current.out"), chain_tails=[moved])], history=history)
    assert "model Qwen/Qwen3-8B→Qwen/Qwen3-14B" in flags[("rl_new_untested", "rl__a2_qwen8b")].message


def test_ablation_and_other_tags_unaffected_by_fingerprints() -> None:
    jobs = [
        run("rl__a2_zclip_qwen8b", BANNER.replace("WANDB", "x") + log("rl_collapsed.out"), num_nodes=4),
        run("rl__harbor_tb2_qwen", BANNER, num_nodes=2),
    ]
    history = remembered(*jobs)
    _, flags = sweep(jobs, history=history)
    assert not any(rule == "rl_new_untested" for rule, _ in flags)
    assert "ablation observation (zclip)" in flags[("rl_collapse", "rl__a2_zclip_qwen8b")].message
    # an untested tag still flags with an unchanged fingerprint, and says why
    debug = run("rl__a2_debug_qwen8b", BANNER, num_nodes=4)
    _, flags = sweep([debug], history=remembered(debug))
    f = flags[("rl_new_untested", "rl__a2_debug_qwen8b")]
    assert f.message.startswith("untested setting (debug): deep-dive") and f.action == "deep-dive"


def test_ended_jobs_are_remembered_but_not_flagged() -> None:
    history = remembered(run("rl__a2_qwen8b", BANNER, num_nodes=4))
    _, flags = sweep([], [ended("rl__a2_qwen8b", "COMPLETED", BANNER, num_nodes=8)], history=history)
    assert ("rl_new_untested", "rl__a2_qwen8b") not in flags


def test_completed_job_whose_name_a_live_job_reuses_waits_in_the_backlog() -> None:
    """Cleanup deletes by name ({root}/{name}): a completed job whose name a RUNNING rerun or a
    PENDING successor of the same cluster reuses keeps its trees while it lives, and the flag says
    why; it is handed off all the same (the probe refuses it, the backlog keeps it: never forgotten)."""
    done = ended("sft__reuse", "COMPLETED", job_id="150", metrics={"launch_yaml": ""})  # its banner names no YAML
    rerun = run("sft__reuse", "", job_id="151")
    _, flags = sweep([rerun], [done])
    f = flags[("completion_cleanup", "sft__reuse")]
    assert f.action == "cleanup:sft-job-cleanup" and "151 (RUNNING)" in f.message
    assert "nothing is deleted while it lives" in f.message
    held = Job(cluster="leo", job_id="152", name="sft__reuse", state="PENDING", source="squeue")
    _, flags = sweep([], [done], pending=[held])
    f = flags[("completion_cleanup", "sft__reuse")]
    assert f.action == "cleanup:sft-job-cleanup" and "152 (PENDING)" in f.message
    # another name, or the same name on another cluster, does not hold the hand-off back
    other = Job(cluster="jupiter", job_id="153", name="sft__reuse", state="RUNNING", source="squeue")
    _, flags = sweep([run("sft__other", "", job_id="154"), other], [done])
    assert flags[("completion_cleanup", "sft__reuse")].action == "cleanup:sft-job-cleanup"


def test_failure_text_never_ends_with_the_elastic_separator_line() -> None:
    tail = (
        "Traceback (most recent call last):\n"
        '  File "/usr/bin/torchrun", line 8, in <module>\n'
        + "=" * 60
        + "\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        + "=" * 60
        + "\n"
    )
    _, flags = sweep([], [ended("sft__cell4", "FAILED", tail, exit_code="1:0")])
    line = flags[("genuine_failure", "sft__cell4")].line()
    assert "ChildFailedError:" in line and "===" not in line


def test_a_relaunch_under_a_new_id_is_the_same_run_unless_its_setting_changed() -> None:
    """issue 20: the ledger links an ops.md relaunch command's new id to the old one (same series):
    not a new/untested RL launch, no new deep-dive, the old verdict its Note; a changed launch is."""
    import tempfile

    from sweep_core.fanin.fingerprint import series_of
    from sweep_core.ledger.acts import link_acts, record_acts
    from sweep_core.ledger.store import load_ledger
    from sweep_core.rules.config import rules_config

    with tempfile.TemporaryDirectory() as d:
        verdict = "2026-12-03 14:05Z NO-KILL, watch reward_mean < 0.05"
        act = {"run": "c1", "at": "2026-12-04T07:00:00+00:00", "series": "s", "step": "5"}
        record_acts(d, [("leo", "7", "rl__a2_debug_geom", {"kind": "relaunch", **act}),
                        *link_acts("leo", "7", "8", "rl__a2_debug_geom", act)])  # fmt: skip
        ledger = load_ledger(d)
    ledger.jobs["leo|7"].deep_dive = verdict
    assert ledger.jobs["leo|8"].acts[-1]["from"] == "leo|7"
    history = History(rl_names={"rl__a2_seen"}, known=True, ledger=ledger)
    job = run("rl__a2_debug_geom", log("rl_healthy.out"), job_id="8", num_nodes=4)
    result, flags = sweep([job], history=history)
    assert ("rl_new_untested", "rl__a2_debug_geom") not in flags  # not new, no deep-dive: the same run
    (row,) = table_rows(result.rendered.tables["RL"])
    assert f"deep-dive {verdict}" in row["Note"]
    series = series_of("rl__a2_debug_geom", rules_config(CONFIG.rules).fingerprint)
    history.rl_fingerprints[series] = {"nodes": 2}
    _, flags = sweep([run("rl__a2_debug_geom", log("rl_healthy.out"), job_id="8", num_nodes=4)], history=history)
    f = flags[("rl_new_untested", "rl__a2_debug_geom")]
    assert f.action == "deep-dive" and "nodes 2→4" in f.message and "untested setting" not in f.message


def test_a_collapse_in_a_series_that_printed_no_step_names_no_step() -> None:
    """A series whose lines printed no step (a value with no step is kept, never given its index as
    one) still flags a collapse, and the flag names the record, not a made-up step."""
    from sweep_core.rules.config import rules_config
    from sweep_core.rules.rl import collapse_steps

    cfg = rules_config(CONFIG.rules)
    series = [{"reward": 0.8, "grad_norm": 0.5, "entropy": 0.9}, {"reward": 0.1, "grad_norm": 90.0, "entropy": 0.01}]
    ((step, signals),) = collapse_steps(series, cfg)
    assert step is None and len(signals) >= 2
    stepped = [{**series[0], "step": 40}, {**series[1], "step": 41}]
    assert collapse_steps(stepped, cfg)[0][0] == 41
