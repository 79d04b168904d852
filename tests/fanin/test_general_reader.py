"""The general reader under the profiles (sweep_core/fanin/metrics/general.py, issue 40): each
framework's console line as its own printing code writes it (fixtures in
tests/fixtures/logs/general/, each citing repo, file, line and commit), read through
``extract_training`` with the shipped include/sweep.yaml; and never a wrong step."""

from __future__ import annotations

import math

import pytest
from fuzzing import check_extracted
from helpers import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.metrics.config import metrics_config
from sweep_core.fanin.metrics.general import column_of, read_general
from sweep_core.fanin.metrics.select import extract_training
from sweep_core.fanin.metrics.vocabulary import NAMES

ROOT = FIXTURES.parents[1]
CFG = metrics_config(load_sweep_config(ROOT / "include" / "sweep.yaml").metrics)
GENERAL = FIXTURES / "logs" / "general"


def read(name: str) -> str:
    return (GENERAL / name).read_text()


# fixture -> (bucket, the reader, what a person reads in it; a None is "?" with its reason)
READ = {
    "verl-bar.out": ("rl", "general", {"step": 12, "max_steps": 300, "reward": None}),
    "verl-entropy-loss.out": ("rl", "verl", {"step": 42, "reward": 0.367, "grad_norm": 0.203, "entropy": 0.598}),
    "trl-ppo.out": (
        "rl",
        "general",
        {"step": 12, "max_steps": 1000, "reward": -1.9123, "entropy": 1.3021, "grad_norm": None, "lr": 2.9e-06},
    ),
    "slime.out": (
        "rl",
        "general",
        {"step": 12, "reward": None, "grad_norm": 0.2044, "entropy": 0.4498, "lr": 1e-06},
    ),
    "prime-rl-trainer.out": ("rl", "general", {"step": 12, "grad_norm": 0.2011, "entropy": 0.4398, "lr": 1e-06}),
    "prime-rl-orchestrator.out": ("rl", "general", {"step": 12, "reward": 0.4531}),
    "nemo-rl.out": ("rl", "general", {"step": 5, "max_steps": 100, "reward": 0.4531}),
    "cosmos-rl.out": (
        "rl",
        "general",
        {"step": 7, "max_steps": 200, "reward": 0.3906, "grad_norm": 0.18234, "entropy": 0.51234, "lr": 1e-06},
    ),
    "deepspeed-chat.out": ("rl", "general", {"step": 10, "max_steps": None, "reward": 0.3012}),
    "torchtune.out": ("sft", "general", {"step": 25, "loss": 1.1702880859375, "grad_norm": 0.7985, "lr": 1.9998e-05}),
    "torchtune-jsonl.out": ("sft", "general", {"step": 25, "loss": 1.1702880859375, "grad_norm": 0.7985}),
    "torchtitan.out": ("sft", "general", {"step": 10, "total": 1000, "loss": 7.98765, "grad_norm": 1.1987}),
    "deepspeed.out": ("sft", "general", {"step": 100, "loss": None, "lr": 2e-05}),
    # the loss of step 999, not the evaluation's after it
    "deepspeed-chat-sft.out": ("sft", "general", {"step": 999, "loss": 1.1719}),
    "unsloth.out": ("sft", "general", {"step": 20, "total": 60, "loss": 1.0123, "grad_norm": 0.4412}),
    "hf-eval-then-train.out": ("sft", "general", {"step": 601, "total": 6000, "loss": 1.0388}),
    "lightning-epoch0.out": ("sft", "general", {"step": 451, "total": 1000, "loss": 2.571}),
    "nemo2.out": ("sft", "general", {"step": 17, "total": 99, "loss": 2.104, "lr": 1.5e-05}),
}


@pytest.mark.parametrize("name", READ)
def test_each_framework_reads_as_a_person_reads_it(name: str) -> None:
    bucket, reader, want = READ[name]
    text = read(name)
    ex = extract_training(bucket, "job", text, [], CFG)
    assert ex.values.get("log_profile") == reader
    assert {k: ex.values[k] for k in want} == pytest.approx(want)
    check_extracted(bucket, [text], ex.values, ex.problems)
    for key, value in ex.values.items():  # every unknown says why (lr: shown as —)
        if value is None and key not in ("past_max_steps", "lr"):
            word = {"max_steps": "max steps", "total": "total"}.get(key, key)
            assert any(word in p or "step" in p for p in ex.problems), (key, ex.problems)


# the step a person must NOT be told: fixture -> (bucket, the reason's words)
NOT_THE_STEP = {
    # the eval bar (no description, total 25) is the newest; the training bar (6000) is older
    "hf-eval-running.out": ("sft", "different totals"),
    # the Episode bar counts prompts, not steps
    "openrlhf-episode.out": ("rl", "something else ('Episode"),
    # DeepSpeed-Chat's Step restarts each epoch
    "deepspeed-chat-epoch2.out": ("rl", "within epoch 1"),
    # OpenRLHF SFT's bars count epochs and the micro-batches of an epoch
    "openrlhf-sft.out": ("sft", "only bars of something else ('Train step of epoch 0"),
    # TRL's dataset bars say "train dataset" and count examples (examples/s), as does a bare one
    "trl-sft-launch.out": ("sft", "only bars of something else"),
}


@pytest.mark.parametrize("name", NOT_THE_STEP)
def test_a_bar_or_header_that_is_not_the_training_step_is_unknown_with_its_reason(name: str) -> None:
    bucket, why = NOT_THE_STEP[name]
    ex = extract_training(bucket, "job", read(name), [], CFG)
    assert ex.values["step"] is None
    assert any(p.startswith("step unknown") and why in p for p in ex.problems), ex.problems


def test_a_record_printed_over_several_lines_is_one_point_of_its_step() -> None:
    """The series the collapse rule reads: DeepSpeed-Chat's step line then its reward line, one point each step."""
    ex = extract_training("rl", "j", read("deepspeed-chat.out"), [], CFG)
    assert ex.series == [{"step": 9.0, "reward": 0.2871}, {"step": 10.0, "reward": 0.3012}]
    ex = extract_training("rl", "j", read("nemo-rl.out"), [], CFG)
    assert ex.series == [{"step": 5.0, "reward": 0.4531}]


def test_vllm_engine_stats_in_an_rl_log_give_no_number() -> None:
    ex = extract_training("rl", "j", read("vllm-rollout.out"), [], CFG)
    assert all(ex.values[k] is None for k in ("step", "max_steps", "reward", "grad_norm", "entropy", "tis"))
    assert any("Processed prompts" in p for p in ex.problems), ex.problems


def test_a_bars_postfix_is_a_record_though_its_count_is_not_the_step() -> None:
    ex = extract_training("sft", "j", read("openrlhf-sft.out"), [], CFG)
    assert (ex.values["loss"], ex.values["grad_norm"], ex.values["lr"]) == (1.21, 0.498, 2e-5)
    assert [p["loss"] for p in ex.series] == [1.23, 1.21]


def test_hf_trainers_end_of_run_summary_is_no_loss_reading() -> None:
    """Its train_loss is the run's average, not the last loss."""
    ex = extract_training("sft", "j", read("trl-sft-launch.out"), [], CFG)
    assert ex.values["loss"] is None and any("loss" in p for p in ex.problems)


def test_a_profile_never_takes_the_eval_bar_nor_the_eval_dict() -> None:
    """TRL's profile reads bars by their N/M: the eval's bar (its eval dict after it) is not the step,
    and the eval's own dict is passed over for the step's dict before it."""
    ex = extract_training("rl", "j", read("trl-grpo-eval.out"), [], CFG)
    assert ex.values["log_profile"] == "trl" and ex.values["step"] is None and ex.values["max_steps"] is None
    assert any("evaluation's" in p for p in ex.problems)
    assert (ex.values["reward"], ex.values["entropy"], ex.values["grad_norm"]) == (0.25, 0.4412, 0.3711)


def test_the_eval_bar_of_a_bannerless_hf_run_is_never_the_step() -> None:
    """The case issue 40 calls WRONG: an evaluation bar followed by the training bar, neither with a
    description, no banner total in the tail. The eval's own banner or its eval dict tells it."""
    text = read("hf-eval-then-train.out")
    assert extract_training("sft", "j", text, [], CFG).values["step"] == 601
    cut = text[: text.rindex(" 10%")]  # the tail ends with the eval dict: the eval bar is the newest bar
    ex = extract_training("sft", "j", cut, [], CFG)
    assert ex.values["step"] is None and any("evaluation follows it" in p for p in ex.problems)
    # and with the banner's total known, the training bar is told by its total
    banner = "  Total optimization steps = 6,000\n" + read("hf-eval-running.out")
    assert extract_training("sft", "j", banner, [], CFG).values["step"] == 600


def test_a_later_epochs_bar_counts_within_its_epoch_and_is_not_the_step() -> None:
    text = read("lightning-epoch0.out") + (
        "Epoch 0: 100%|██████████| 1000/1000 [03:05<00:00, 5.40it/s, v_num=0, train_loss=2.410]\n"
        "Epoch 1:   1%|          | 10/1000 [00:01<03:03, 5.40it/s, v_num=0, train_loss=2.402]\n"
    )
    ex = extract_training("sft", "j", text, [], CFG)
    assert ex.values["step"] is None and ex.values["loss"] == 2.402
    assert any("within that epoch" in p for p in ex.problems), ex.problems


def test_an_eval_section_and_eval_lines_give_no_column() -> None:
    ex = extract_training("rl", "j", read("nemo-rl.out"), [], CFG)
    assert ex.values["reward"] == 0.4531  # Avg Reward, not the Validation block's Accuracy after it
    ex = extract_training("rl", "j", read("prime-rl-orchestrator.out"), [], CFG)
    assert ex.values["reward"] == 0.4531  # Step 12's, not 'Evaluated aime2024 (Step 12) | ... Reward 0.2917'


def test_namespaced_names_are_read_by_their_parts() -> None:
    assert column_of("critic/rewards/mean")[0] == "reward"
    assert column_of("rewards/accuracy/mean")[0] == "reward"  # a reward function's own mean
    assert column_of("objective/rlhf_reward")[0] == "reward"
    assert column_of("train/entropy_loss")[0] == "entropy"
    assert column_of("Grad. Norm")[0] == "grad_norm" and column_of("lm loss")[0] == "loss"
    assert column_of("train/lr-pg_0")[0] == "lr"
    # never a column: evaluation, a spread, a critic's own grad norm, a reference model, a sum over tokens
    for name in ("eval_loss", "eval/reward", "rewards/accuracy/std", "critic/grad_norm", "ref/entropy"):
        assert column_of(name) is None, name
    assert column_of("objective/entropy") is None and column_of("rollout/rewards") is None
    # exact names outrank names read by their parts
    assert column_of("objective/rlhf_reward")[1] < column_of("objective/scores")[1]


def test_every_vocabulary_name_feeds_its_column() -> None:
    """A new name is one line in vocabulary.NAMES: each one reads as its column."""
    for col, names in NAMES.items():
        for name in names:
            assert column_of(name) is not None and column_of(name)[0] == col, (name, col)


def test_a_tail_with_no_record_says_so_and_the_default_keeps_its_reason() -> None:
    ex = extract_training("rl", "j", "loading model\nstarting\n", [], CFG)
    assert ex.values["step"] is None and any("no known log format" in p for p in ex.problems)
    ex = read_general("sft", "hello\nworld\n")
    assert ex.values["step"] is None and any("no metric record" in p and "loss" in p for p in ex.problems)


def test_a_step_above_the_total_is_unknown() -> None:
    text = "========================= Step 120/100 =========================\n  • Avg Reward: 0.5\n"
    ex = extract_training("rl", "j", text, [], CFG)
    assert ex.values["step"] is None and ex.values["past_max_steps"] == 120
    assert any("above the total" in p for p in ex.problems)


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("stepStp :=|{}'\"-/0123456789.,%[]\r\n abcdefgilmnorvwxyzEI")), max_size=300)
)
def test_any_text_reads_without_raising_and_every_number_is_in_it(text: str) -> None:
    for bucket in ("rl", "sft"):
        ex = read_general(bucket, text)
        values = {k: v for k, v in ex.values.items() if k != "log_profile"}
        check_extracted(bucket, [text], {**values, "log_profile": "general"}, ex.problems)
        for k, v in values.items():
            assert v is None or isinstance(v, int | float), (k, v)
            if isinstance(v, float) and math.isfinite(v) and k not in ("step", "total", "max_steps"):
                assert any(c.isdigit() for c in text)
