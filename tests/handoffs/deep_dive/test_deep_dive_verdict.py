"""The deep-dive verdict rules (sweep_core.handoffs.deep_dive.plan): a healthy run is NO-KILL with
the watch signal that would flip it; all-reward-0, idle GPUs while the log advances, empty rollouts
and a weight-sync / starvation signature are each a KILL with specific evidence; an input that was
not read is said as unknown, never read as healthy or as zero."""

from __future__ import annotations

import datetime as dt

from sweep_core.config.deep_dive_schema import DeepDiveSection
from sweep_core.handoffs.deep_dive.inputs import DeepDiveInput, GpuUtil, SignatureHit
from sweep_core.handoffs.deep_dive.plan import KILL, NO_KILL, UNKNOWN, decide

CFG = DeepDiveSection()
LUT = DeepDiveSection.model_validate(
    {"serving_lut": [{"match": r"qwen3_8b.*_8n", "util_min": 40, "util_max": 95, "note": "run 1234"}]}
)


def _series(rewards: list[float], first_step: int = 1) -> list[dict[str, float]]:
    return [{"step": float(first_step + i), "reward": r} for i, r in enumerate(rewards)]


def _gpus(util: float, n: int = 8) -> list[GpuUtil]:
    return [GpuUtil(f"node{i // 4}", i % 4, util, 70000.0, 81920.0) for i in range(n)]


def _healthy(**kw: object) -> DeepDiveInput:
    base: dict[str, object] = {
        "state": "RUNNING",
        "series": _series([0.1, 0.2, 0.3, 0.31]),
        "step": 4,
        "max_steps": 100,
        "log_age_s": 60.0,
        "signatures": [],
        "rollouts": ["The answer is 42."] * 20,
        "gpus": _gpus(78.0),
        "gpu_note": "",
        "hang_hits": [],  # the Ray worker logs near the last output read, no hang line
        "hang_note": "2 matching file(s) in /logs/ray-101 looked at, 2 written near the last output",
    }
    base.update(kw)
    return DeepDiveInput("local", "101", "rl__qwen3_8b_8n_grpo", **base)  # type: ignore[arg-type]


def test_a_healthy_run_is_no_kill_with_the_watch_signal_that_would_flip_it() -> None:
    v = decide(_healthy(), LUT)
    assert v.verdict == NO_KILL
    assert v.watch[0] == "watch reward_mean < 0.05"
    assert "watch GPU util below the LUT's 40 %" in v.watch
    assert v.headline() == "NO-KILL, watch reward_mean < 0.05"
    assert "reward 0.31 at step 4 (4 steps logged)" in v.evidence
    assert "rollouts have text (20/20 newest non-empty)" in v.evidence
    assert v.unknown == []
    at = dt.datetime(2026, 12, 3, 14, 5, tzinfo=dt.UTC)
    assert v.record(at) == "2026-12-03 14:05Z NO-KILL, watch reward_mean < 0.05"


def test_all_reward_zero_is_a_kill_naming_the_steps() -> None:
    v = decide(_healthy(series=_series([0.0] * 48, first_step=12)), CFG)
    assert v.verdict == KILL
    assert v.evidence[0] == "reward 0.0 on all 48 logged steps since step 12"
    assert v.headline() == "KILL: reward 0.0 on all 48 logged steps since step 12"


def test_reward_zero_only_lately_counts_from_the_last_nonzero_step() -> None:
    v = decide(_healthy(series=_series([0.2, 0.1] + [0.0] * 12)), CFG)
    assert v.verdict == KILL
    assert v.evidence[0] == "reward 0.0 on the last 12 logged steps since step 3"
    short = decide(_healthy(series=_series([0.2] + [0.0] * 3)), CFG)
    assert short.verdict == NO_KILL
    assert any("not yet all-reward-0" in e for e in short.evidence)


def test_idle_gpus_while_the_log_advances_is_a_kill() -> None:
    v = decide(_healthy(gpus=_gpus(3.0), log_age_s=30.0), LUT)
    assert v.verdict == KILL
    assert v.evidence[0] == "GPU util 3 % on 8/8 GPUs while the log advances"


def test_idle_gpus_with_a_silent_log_is_not_this_kill_but_said() -> None:
    v = decide(_healthy(gpus=_gpus(0.0), log_age_s=7200.0), CFG)
    assert v.verdict == NO_KILL
    assert any("the log is not advancing either" in e for e in v.evidence)


def test_gpu_below_but_not_far_below_the_serving_lut_is_evidence_not_a_signal() -> None:
    v = decide(_healthy(gpus=_gpus(25.0)), LUT)  # 40 % floor, far below = under 20 %
    assert v.verdict == NO_KILL and v.weight == 0
    assert "GPU util 25 % mean is outside the serving LUT's 40-95 % (row 'qwen3_8b.*_8n')" in v.evidence


def test_empty_rollouts_are_a_kill() -> None:
    v = decide(_healthy(rollouts=["", "  ", "\n"] + [""] * 17), CFG)
    assert v.verdict == KILL
    assert v.evidence[0] == "rollouts are empty strings (20/20 newest)"
    few = decide(_healthy(rollouts=["", ""]), CFG)
    assert few.verdict == NO_KILL
    assert "only 2 rollout(s) read (< 5): emptiness not judged" in few.unknown


def test_a_signature_match_is_a_kill_quoting_the_line() -> None:
    hit = SignatureHit("weight-sync", "this log", 812, "weight sync failed: checksum mismatch on rank 3")
    v = decide(_healthy(signatures=[hit]), CFG)
    assert v.verdict == KILL
    assert (
        v.evidence[0]
        == "weight-sync signature at line 812 of this log: weight sync failed: checksum mismatch on rank 3"
    )


def test_unknown_inputs_are_said_unknown_never_healthy_or_zero() -> None:
    v = decide(_healthy(gpus=None, gpu_note="not probed", rollouts=None, rollout_note="no trace dir"), CFG)
    assert v.verdict == NO_KILL
    assert "GPU utilisation unknown (not probed)" in v.unknown
    assert "rollouts unknown (no trace dir)" in v.unknown
    assert not any("GPU util" in e or "rollout" in e for e in v.evidence)
    # the watch signals of inputs that were read come first
    assert v.watch[0] == "watch reward_mean < 0.05"
    # an unread GPU (None) is not 0 %: no idle kill on 7 known busy GPUs + 1 unknown
    partial = [*_gpus(80.0, 7), GpuUtil("node1", 3, None)]
    assert decide(_healthy(gpus=partial), CFG).verdict == NO_KILL
    nothing = DeepDiveInput("local", "9", "rl__x", problems=["log unknown: the cluster did not answer"])
    u = decide(nothing, CFG)
    assert u.verdict == UNKNOWN and u.watch == []
    assert u.headline() == "UNKNOWN: log unknown: the cluster did not answer"
    assert "reward unknown: no log read" in u.unknown and "log signatures unknown: no log read" in u.unknown


def test_the_default_signatures_match_garbage_and_starvation_lines_not_healthy_ones() -> None:
    from sweep_core.handoffs.deep_dive.history import signature_hits

    kinds = (("weight-sync", CFG.weight_sync_patterns), ("engine-starvation", CFG.starvation_patterns))
    healthy = "INFO weight sync done in 2.1s\nEngine 000: Avg generation throughput: 812.3 tokens/s\n"
    assert signature_hits(healthy, [], kinds) == []
    log = healthy + "[rank3] weight sync failed: checksum mismatch\n"
    chain = "WARNING No available KV cache blocks; request 17 waits\n"
    hits = signature_hits(log, [chain], kinds)
    assert [(h.kind, h.where, h.line_no) for h in hits] == [
        ("weight-sync", "this log", 3),
        ("engine-starvation", "earlier chain log #1", 1),
    ]


def test_an_accounting_reading_is_said_job_wide_and_idle_while_advancing_is_a_kill() -> None:
    """ops.md gpu_probe: accounting: the deep-dive's ONE sstat for its jobs gives a job-wide figure."""
    from sweep_core.handoffs.deep_dive.remote import ProbeJob, read_deep_dive
    from sweep_core.records.remote_result import CommandResult
    from sweep_core.slurm.gather import GatherOutput

    tres = "cpu=00:10:00,gres/gpumem=2048M,gres/gpuutil={u},mem=4G"
    sstat = "\n".join(
        [
            f"101.batch|{tres.format(u=0)}|{tres.format(u=0)}|{tres.format(u=0)}",
            f"101.0|{tres.format(u=2)}|{tres.format(u=1)}|{tres.format(u=3)}",
            "102.batch|cpu=00:00:01|cpu=00:00:01|cpu=00:00:01",
        ]
    )
    out = GatherOutput(records={"gpuacct": CommandResult(0, sstat, "")}, complete=True, marker="@@M@@")
    jobs = [ProbeJob("local", "101", "rl__qwen3_8b_8n_grpo"), ProbeJob("local", "102", "rl__b")]
    got = read_deep_dive(out, jobs, timeout_s=20)
    assert [(g.node, g.util) for g in got[0].gpus or []] == [("accounting", 3.0)]
    assert got[1].gpus is None and got[1].gpu_note.startswith("accounting records no gres/gpuutil")
    v = decide(_healthy(gpus=got[0].gpus, gpu_note=got[0].gpu_note, log_age_s=30.0), LUT)
    assert v.verdict == KILL
    assert (
        v.evidence[0]
        == "GPU util 3 % job-wide in accounting (sstat, the busiest step's maximum) while the log advances"
    )


# --- the measured detectors in the verdict (issue 28): one strong signal or two weak ones ---------

SALAD = "river \u2581con ing self Ġde lambda <0x0A> tree sea ##ed ask import every " * 3
GOOD = "We add 2 and 3 to get 5, so the answer is $\\boxed{5}$."


def test_garbage_rollout_text_in_most_rollouts_is_a_kill_on_one_strong_signal() -> None:
    v = decide(_healthy(rollouts=["<|im_start|>assistant\n<|im_end|>"] * 14 + [GOOD] * 6), CFG)
    assert v.verdict == KILL and v.basis == "one strong signal (garbage-text)"
    assert v.evidence[0] == "garbage rollout text in 14/20 newest (#1: empty after the chat template)"
    assert v.headline() == "KILL: garbage rollout text in 14/20 newest (#1: empty after the chat template)"


def test_one_weak_signal_is_no_kill_but_said_and_a_second_makes_the_kill_naming_both() -> None:
    some = [SALAD] * 5 + [GOOD] * 15
    one = decide(_healthy(rollouts=some), CFG)
    assert one.verdict == NO_KILL and one.basis == ""
    assert one.evidence[0].startswith("weak signal: garbage rollout text in 5/20 newest (#1: token salad")
    two = decide(_healthy(rollouts=some, series=_series([0.3, 0.2] + [0.0] * 6)), CFG)
    assert two.verdict == KILL and two.basis == "two weak signals (all-reward-0, garbage-text)"
    assert two.evidence[:2] == [
        "weak signal: reward 0.0 on the last 6 logged steps since step 3 (< 10)",
        one.evidence[0],
    ]
    assert two.headline().startswith("KILL on two weak signals (all-reward-0, garbage-text): weak signal: reward")


def test_a_starvation_line_alone_is_weak_and_a_long_span_without_tokens_is_strong() -> None:
    line = SignatureHit("engine-starvation", "this log", 40, "WARNING No available KV cache blocks")
    v = decide(_healthy(signatures=[line]), CFG)
    assert v.verdict == NO_KILL
    assert "weak signal: engine-starvation signature at line 40 of this log: WARNING No available KV cache blocks" in (
        v.evidence
    )
    stats = (
        "Avg prompt throughput: {0} tokens/s, Avg generation throughput: {0} tokens/s, Running: 0 reqs, Pending: 0 reqs"
    )
    log = "\n".join(
        [
            f"INFO 12-03 10:00:00 {stats.format('812.0')}",
            f"INFO 12-03 10:02:00 {stats.format('0.0')}",
            "[2026-12-03 10:45:00] waiting for rollout batch (3/256 collected)",
        ]
    )
    wedge = decide(_healthy(starvation_log=log), CFG)
    assert wedge.verdict == KILL and wedge.basis == "one strong signal (starvation)"
    assert wedge.evidence[0].startswith("no token generated for 45 min (since 12-03 10:00:00)")
    both = decide(_healthy(starvation_log=log, signatures=[line]), CFG)
    assert both.basis == "one strong signal (starvation)"  # the weak line beside it does not count twice


def test_edquot_and_sig53_are_named_in_the_evidence_and_never_a_kill() -> None:
    from sweep_core.fanin.metrics.hang import named_traps

    log = "step 3\nOSError: [Errno 122] Disk quota exceeded: '/scratch/ckpt'\nsrun: error: task 0: Exited with exit code 53\n"
    traps = [t.evidence() for t in named_traps(log)]
    v = decide(_healthy(traps=traps), CFG)
    assert v.verdict == NO_KILL
    assert any(
        e.startswith("EDQUOT (Disk quota exceeded: see the quota cell and the cleanup backlog") for e in v.evidence
    )
    assert any(e.startswith("sig53 (exit 0:53") for e in v.evidence)
