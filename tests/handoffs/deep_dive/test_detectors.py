"""The deep-dive detectors (sweep_core.handoffs.deep_dive.detectors) on the labelled fixtures in
tests/fixtures/rollouts/: precision >= 0.95 at recall >= 0.90 for garbage text, all-reward-0 and
engine starvation each; and single cases a user would recognise."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from fixtures.rollouts.measure import FILES, HERE, load, score

from sweep_core.config.deep_dive_schema import DeepDiveSection
from sweep_core.handoffs.deep_dive.detectors import (
    STRONG,
    WEAK,
    detect_all_reward_0,
    detect_garbage,
    detect_starvation,
    garbage_reason,
)

CFG = DeepDiveSection()


@pytest.mark.parametrize("kind", list(FILES))
def test_each_detector_meets_the_bar_on_the_labelled_fixtures(kind: str) -> None:
    recs = load(kind)
    assert sum(r["label"] == "healthy" for r in recs) >= 50 and sum(r["label"] == "failing" for r in recs) >= 50
    assert {r["task"] for r in recs} == {"math", "code", "agentic"}
    s = score(kind)
    assert s.precision >= 0.95 and s.recall >= 0.90, (kind, s)


def test_the_fixtures_are_what_the_seeded_generator_writes(tmp_path) -> None:
    script = (HERE / "make_rollouts.py").read_text()
    copy = tmp_path / "make_rollouts.py"
    copy.write_text(script)
    subprocess.run([sys.executable, str(copy)], check=True, capture_output=True)
    for name in FILES.values():
        assert (tmp_path / name).read_text(encoding="utf-8") == (HERE / name).read_text(encoding="utf-8"), name


def test_the_garbage_signatures_are_named_and_healthy_lookalikes_are_not_garbage() -> None:
    assert garbage_reason("<|im_start|>assistant\n\n<|im_end|>") == "empty after the chat template"
    rep = garbage_reason("Let's think step by step. " + "I think " * 300)
    assert rep is not None and rep.startswith("runaway repetition: 'I think'")
    mixed = garbage_reason("the answer это 的 ответ 是 value задача 数 and 그리고 next 时 только " * 4)
    assert mixed is not None and mixed.startswith("mixed scripts")
    pieces = ["\u2581con", "tree", "ing", "\u0120de", "river", "<0x0A>", "lambda", "sea", "##ed", "ask", "self"]
    rng = random.Random(7)
    salad = garbage_reason(" ".join(rng.choice(pieces) for _ in range(60)))
    assert salad is not None and salad.startswith("token salad")
    table = "| n | n^2 |\n|---|---|\n" + "".join(f"| {i} | {i * i} |\n" for i in range(1, 40))
    russian = "Решим задачу. Сила F = m·a, где m = 3 кг и a = 2 м/с². Угол θ не нужен. Ответ: $\\boxed{6}$."
    for healthy in (table, russian, "", "<|im_start|>assistant\n42<|im_end|>", "-" * 80 + "\nok\n"):
        assert garbage_reason(healthy) is None, healthy


def test_garbage_is_strong_on_most_rollouts_weak_on_some_and_not_judged_on_few() -> None:
    bad, good = "<think>\n\n</think>", "We add 2 and 3 to get 5, so the answer is $\\boxed{5}$."
    strong = detect_garbage([bad] * 15 + [good] * 5, 5, 0.6, 0.2)
    assert strong is not None and strong.strength == STRONG
    assert strong.detail == "garbage rollout text in 15/20 newest (#1: empty after the chat template)"
    weak = detect_garbage([good] * 14 + [bad] * 6, 5, 0.6, 0.2)
    assert weak is not None and weak.strength == WEAK and "6/20" in weak.detail
    assert detect_garbage([good] * 19 + [bad], 5, 0.6, 0.2) is None
    assert detect_garbage([bad] * 4, 5, 0.6, 0.2) is None  # too few to judge


def test_reward_zero_is_strong_at_the_threshold_and_weak_at_half_of_it() -> None:
    steps = list(enumerate([0.3, 0.2] + [0.0] * 10, start=1))
    got = detect_all_reward_0(steps, 10)
    assert got is not None and (got.strength, got.detail) == (
        STRONG,
        "reward 0.0 on the last 10 logged steps since step 3",
    )
    half = detect_all_reward_0(list(enumerate([0.3] + [0.0] * 6, start=1)), 10)
    assert half is not None and half.strength == WEAK
    assert detect_all_reward_0(list(enumerate([0.0] * 4 + [0.01], start=1)), 10) is None


def _engine(ts: str, gen: float, run: int = 0) -> str:
    return (
        f"INFO 12-03 {ts} [metrics.py:386] Avg prompt throughput: {gen:.1f} tokens/s, Avg generation throughput: "
        f"{gen:.1f} tokens/s, Running: {run} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 3.0%, "
        "CPU KV cache usage: 0.0%."
    )


def test_starvation_is_a_long_span_without_tokens_or_steps_a_short_one_is_a_training_phase() -> None:
    log = [_engine("10:00:00", 900.0, 64), "[2026-12-03 10:01:00] Training Step Progress: 7/100"]
    wedge = [
        *log,
        _engine("10:05:00", 0.0),
        _engine("10:40:00", 0.0),
        "[2026-12-03 10:41:00] waiting for rollout batch",
    ]
    got = detect_starvation("\n".join(wedge), 20, CFG.starvation_patterns, year=2026)
    assert (
        got is not None
        and got.strength == STRONG
        and got.detail.startswith("no token generated for 41 min (since 12-03 10:00:00)")
    )
    phase = [*log, _engine("10:05:00", 0.0), _engine("10:09:00", 0.0)]
    assert detect_starvation("\n".join(phase), 20, CFG.starvation_patterns, year=2026) is None
    line = [*phase, "WARNING No available KV cache blocks; request 17 waits"]
    weak = detect_starvation("\n".join(line), 20, CFG.starvation_patterns, year=2026)
    assert weak is not None and weak.strength == WEAK and "No available KV cache blocks" in weak.detail


def test_fixture_records_carry_their_label_kind_and_maker() -> None:
    for kind, name in FILES.items():
        first = json.loads((HERE / name).read_text(encoding="utf-8").splitlines()[0])
        assert first["kind"] == kind and first["label"] in ("healthy", "failing") and first["sub"]


def test_all_reward_0_without_printed_steps_names_no_step() -> None:
    """Rewards whose lines printed no step: the finding counts them and names no step."""
    got = detect_all_reward_0([(None, 0.3)] + [(None, 0.0)] * 12, 10)
    assert got is not None and "12 logged steps" in got.detail and "step" not in got.detail.split("steps")[-1]
