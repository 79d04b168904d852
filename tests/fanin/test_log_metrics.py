"""Metric extractors on realistic log fixtures (tests/fixtures/logs/); bad lines never crash."""

from __future__ import annotations

import json
import math

import pytest
from fuzzing import check_extracted
from helpers import FIXTURES
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sweep_core.config.sweep import load_sweep_config
from sweep_core.fanin.metrics.common import parse_metric_dict
from sweep_core.fanin.metrics.config import MetricsConfigError, metrics_config
from sweep_core.fanin.metrics.datagen import chunk_counts, expand_array_tasks, extract_datagen
from sweep_core.fanin.metrics.eval import extract_eval
from sweep_core.fanin.metrics.hang import hang_evidence
from sweep_core.fanin.metrics.rl import extract_rl
from sweep_core.fanin.metrics.sft import extract_sft

ROOT = FIXTURES.parents[1]
CFG_RAW = load_sweep_config(ROOT / "include" / "sweep.yaml").metrics.model_dump()
CFG = metrics_config(CFG_RAW)


def log(name: str) -> str:
    return (FIXTURES / "logs" / name).read_text()


def test_rl_healthy_tqdm_and_mirror() -> None:
    ex = extract_rl(log("rl_healthy.out"), [], CFG)
    assert ex.values["step"] == 45 and ex.values["max_steps"] == 100
    assert ex.values["reward"] == pytest.approx(0.345)
    assert ex.values["grad_norm"] == 1.1 and ex.values["entropy"] == 0.62 and ex.values["tis"] == 1.02
    assert len(ex.series) == 10 and ex.problems == []


def test_rl_chain_restart_takes_dicts_from_the_earlier_link() -> None:
    ex = extract_rl(log("rl_chain_current.out"), [log("rl_chain_earlier.out")], CFG)
    assert ex.values["step"] == 63  # the step from THIS log
    assert ex.values["reward"] == 0.5  # the dict from the earlier chain log
    assert ex.values["metrics_from"] == "earlier chain log #1"


def test_rl_python_dict_with_nan_and_inf() -> None:
    ex = extract_rl(log("rl_nan.out"), [], CFG)
    assert math.isnan(ex.values["reward"]) and math.isinf(ex.values["grad_norm"])


def test_rl_malformed_lines_give_unknown_with_reasons() -> None:
    ex = extract_rl(log("rl_malformed.out"), [], CFG)
    assert ex.values["step"] is None and ex.values["reward"] is None
    assert any("unparseable" in p for p in ex.problems)
    assert any("no step line" in p for p in ex.problems)


def test_sft_banner_tqdm_and_loss_dict() -> None:
    ex = extract_sft(log("sft_healthy.out"), CFG)
    assert ex.values == {"step": 227, "total": 1875, "loss": 0.5987, "grad_norm": 1.521, "lr": 1.9e-05}


def test_datagen_counts_and_realness_inputs() -> None:
    ex = extract_datagen(log("datagen_healthy.out"), CFG, (3, 16))
    assert ex.values["chunks_done"] == 3 and ex.values["chunks_total"] == 16
    assert ex.values["results"] == 380 and ex.values["avg_turns"] == 4.27
    assert ex.values["exc_pct"] == pytest.approx(5.0)
    assert extract_datagen(log("datagen_dead.out"), CFG, None).values["avg_turns"] == 1.0


def test_eval_passthrough_exceptions_are_never_blamed() -> None:
    ex = extract_eval(log("eval_passthrough.out"), CFG)
    assert ex.values["done"] == 40 and ex.values["total"] == 50 and ex.values["pass_rate"] == 0.42
    assert ex.values["top_exception"] == "RuntimeError ×1"
    assert ex.values["passthrough"] == 8
    assert ex.values["checks"] == {"sandbox": "ok", "image_pull": "ok", "upload": "ok", "register": "ok"}


def test_eval_infra_check_fails_on_upload_error() -> None:
    ex = extract_eval(log("eval_upload_failed.out"), CFG)
    assert ex.values["checks"]["upload"] == "FAIL" and ex.values["checks"]["sandbox"] == "ok"


def test_array_expansion_and_chunk_counts() -> None:
    assert expand_array_tasks("812_[1-3,7]") == ["812_1", "812_2", "812_3", "812_7"]
    assert expand_array_tasks("812_[4-5%2]") == ["812_4", "812_5"]
    assert expand_array_tasks("812_4") == ["812_4"]
    rows = [
        ("812_1", "COMPLETED"),
        ("812_2", "COMPLETED"),
        ("812_3", "RUNNING"),
        ("812_[4-8]", "PENDING"),
        ("812_2.batch", "COMPLETED"),
        ("812_9", "CANCELLED by 1001"),
    ]
    done, total, states = chunk_counts(rows)
    assert (done, total) == (2, 9) and states["PENDING"] == 5 and states["CANCELLED"] == 1


def test_hang_evidence_names_engine_and_nccl_lines() -> None:
    tail = "step 10\nINFO x\n[rank0]: NCCL watchdog thread terminated: Timeout\nEngineDeadError: engine died\nwaiting\n"
    last, near = hang_evidence(tail, CFG)
    assert last == "waiting"
    assert any("NCCL" in n for n in near) and any("EngineDead" in n for n in near)


def test_bad_regex_in_config_is_a_clear_error() -> None:
    with pytest.raises(MetricsConfigError, match="rl.step"):
        metrics_config({"rl": {"step": ["("]}})


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(max_size=400))
@example("pass_rate=" + "9" * 400 + "\navg_turns=" + "9" * 400)  # inf to float(): unknown, never a number
@example('WANDB_MIRROR {"trainer/global_step": -3, "trainer/max_steps": -7}')  # a negative count is no count
def test_extractors_never_raise_on_arbitrary_text(text: str) -> None:
    for kind, fn in (
        ("rl", lambda t: extract_rl(t, [t], CFG)),
        ("sft", lambda t: extract_sft(t, CFG)),
        ("datagen", lambda t: extract_datagen(t, CFG, None)),
        ("eval", lambda t: extract_eval(t, CFG)),
    ):
        for t in (text, "WANDB_MIRROR " + text, "{'loss': " + text):
            got = fn(t)  # the declared keys; a count or a metric the text holds, or None with a reason
            check_extracted(kind, [t], got.values, got.problems)


def test_parse_metric_dict_rejects_non_dicts() -> None:
    with pytest.raises(ValueError):
        parse_metric_dict("[1, 2]")
    assert parse_metric_dict('x {"a": 1} y') == {"a": 1}


# ---- the search shortcuts give exactly the plain re answers ---------------------------------------

_PATTERNS = [
    r"(\d+)/(\d+) trials",
    r"Training Step Progress:[^\n]*?(\d+)/(\d+)",
    r"\b([A-Z]\w*(?:Error|Exc))\b",
    r"(?m)^\d+",
    r"\d*",
    r"\B",
    r"(?<=a)\d+",
    r"a[^\n]*z",
    r"(?s)a.*z",
    r"a\s*1",
    r"ab$",
    r"x(?:ab|cd)?y",
    r"(?i)error",
]
_PIECES = ["a", "b", "1", "23", "/", " trials", "\n", "\n\n", " ", "x", "z", "Error", "Exc", "A", "y", "cd", "é"]


@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=60),
    st.lists(st.sampled_from(_PATTERNS), min_size=1, max_size=3),
    st.sampled_from([1, 3, 7, 2048]),
)
def test_last_match_findall_and_search_equal_plain_re(pieces: list[str], patterns: list[str], block: int) -> None:
    import re

    import sweep_core.fanin.metrics.patterns as lm

    text = "".join(pieces)
    compiled = [re.compile(p) for p in patterns]
    want = None
    for p in compiled:  # the definition: over finditer, the match ending last (earliest on a tie)
        for m in p.finditer(text):
            if want is None or m.end() > want.end():
                want = m
    old, lm._BLOCK = lm._BLOCK, block
    try:
        got = lm._last(compiled, text)
    finally:
        lm._BLOCK = old

    def span(m: re.Match[str] | None) -> object:
        return None if m is None else (m.re.pattern, m.span(), m.groups())

    assert span(got) == span(want)
    for p in compiled:
        assert lm.findall(p, text) == p.findall(text)
        assert (lm.search(p, text) is None) == (p.search(text) is None)


def test_line_local_and_required_literals() -> None:
    import re

    from sweep_core.fanin.metrics.patterns import line_local, required_literals

    assert line_local(re.compile(r"Training Step Progress:[^\n]*?(\d+)/(\d+)"))
    assert not line_local(re.compile(r"a\s+b")) and not line_local(re.compile(r"x$"))
    assert not line_local(re.compile(r"(?s)a.b")) and not line_local(re.compile(r"a(?=b)"))
    assert required_literals(re.compile(r"(\d+)/(\d+) trials")) == (" trials",)
    lits = required_literals(re.compile(r"\b(\w+(?:Error|Exception))\b"))  # re factors out the common "E"
    assert lits and all(any(lit in word for lit in lits) for word in ("Error", "Exception"))
    assert required_literals(re.compile(r"(?i)error")) == () and required_literals(re.compile(r"\d+")) == ()


def test_full_16k_tail_reads_the_last_step() -> None:
    lines = [
        f"Training Step Progress:  {i}%|███▌      | {i}/100 [1:36:10<2:01:00, 62.1s/it]\n"
        f'WANDB_MIRROR {{"trainer/global_step": {i}, "reward/mean": 0.3{i}, "actor/grad_norm": 1.1}}\n'
        for i in range(1, 100)
    ]
    tail = "".join(lines)[-16384:]
    ex = extract_rl(tail, [], CFG)
    assert ex.values["step"] == 99 and ex.values["max_steps"] == 100 and ex.values["reward"] == float("0.399")


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["loss", "grad_norm", "a b", "x/nan", "é", "epoch"]),
            st.sampled_from(["0.5", "1e-05", "-1", "-0", "012", ".5", "5.", "nan", "inf", "True", "'s'", "1e999"]),
        ),
        max_size=5,
    ),
    st.sampled_from(["", " ", "\t"]),
)
def test_python_dict_lines_parse_as_ast_does(items: list[tuple[str, str]], pad: str) -> None:
    import ast

    from sweep_core.fanin.metrics.common import _BARE, _special

    body = "{" + f",{pad}".join(f"'{k}':{pad}{v}" for k, v in items) + "}"
    try:  # the slow path every such line took before: ast over the bare-nan/inf rewrite
        raw = ast.literal_eval(_BARE.sub(lambda m: f'"__{m.group(1).lower()}__"', body))
        want = {k: _special(v) for k, v in raw.items()}
    except (ValueError, SyntaxError):
        want = None
    try:
        got = parse_metric_dict(body)
    except ValueError:
        got = None

    def same(d: dict | None) -> object:
        return None if d is None else [(k, repr(v), type(v)) for k, v in d.items()]

    assert same(got) == same(want)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.lists(
        st.sampled_from(["ok step", "", "  ", "NCCL op Timeout", "watchdog", "Watchdog x", "\r\n", "x" * 50]),
        max_size=60,
    )
)
def test_hang_evidence_equals_the_plain_scan(lines: list[str]) -> None:
    tail = "\n".join(lines)
    rows = [ln for ln in tail[-8192:].splitlines()[-40:] if ln.strip()]
    want_last = rows[-1].strip()[:200] if rows else ""
    want_near = [ln.strip()[:200] for ln in rows if CFG.hang_any.search(ln)][-3:]
    assert hang_evidence(tail, CFG) == (want_last, want_near)


# --- hostile input (issue 9, items 4, 10, 13) ---------------------------------------------------

ODD_RL = {
    "nan step": 'WANDB_MIRROR {"trainer/global_step": NaN, "reward/mean": 0.5}',
    "1e400 step": 'WANDB_MIRROR {"trainer/global_step": 1e400, "reward/mean": 0.5}',
    "Infinity step": 'WANDB_MIRROR {"trainer/global_step": Infinity, "reward/mean": 0.5}',
    "5000-digit int": 'WANDB_MIRROR {"trainer/global_step": ' + "9" * 5000 + "}",
    "deep JSON list": 'WANDB_MIRROR {"a":' + "[" * 100_000 + "}",
    "deep py list": "WANDB_MIRROR {'a': " + "[" * 100_000 + "}",
    "5000-digit step line": "Training Step Progress: " + "9" * 5000 + "/100",
}


@pytest.mark.parametrize("name", ODD_RL)
def test_rl_odd_text_gives_unknown_step_with_a_reason_not_an_exception(name: str) -> None:
    ex = extract_rl(ODD_RL[name], [], CFG)
    assert ex.values["step"] is None
    assert ex.problems
    json.dumps(ex.values, allow_nan=False)  # nothing non-finite in the columns but the metric floats


@pytest.mark.parametrize(
    "text",
    [
        "  Total optimization steps = " + "9" * 400,
        "Total optimization steps = " + "9" * 5000,
        "{'loss': " + "9" * 5000 + "}",
    ],
    ids=["400-digit total", "5000-digit total", "5000-digit loss"],
)
def test_sft_absurd_numbers_are_unknown(text: str) -> None:
    ex = extract_sft(text, CFG)
    assert ex.values["total"] is None and ex.values["loss"] is None
    assert ex.problems


def test_datagen_result_count_is_the_number_after_result_json_not_the_fraction_before() -> None:
    line = "chunk=12 tasks_done=60/100 result.json=58 avg_turns=7.81 exceptions=4/60"
    for cfg in (CFG, metrics_config({})):
        ex = extract_datagen(line, cfg, None)
        assert ex.values["results"] == 58
        assert ex.values["exc_pct"] == pytest.approx(100 * 4 / 60)


def test_datagen_result_count_never_takes_the_total_of_a_fraction() -> None:
    ex = extract_datagen("tasks 60/100 result.json written", CFG, None)
    assert ex.values["results"] is None  # "?" with the reason, never 100
    assert any("result.json count" in p for p in ex.problems)


ADVERSARIAL = {
    "rl": "Training Step Progress: " + "9" * 16384,
    "sft": "9" * 16384 + " [",
    "datagen": "9" * 16384 + " result.jsox result.json",
    "eval": "9" * 16384 + " trialz trials",
}


@pytest.mark.parametrize("bucket", ADVERSARIAL)
def test_default_patterns_are_linear_on_long_digit_runs(bucket: str) -> None:
    import time

    text = ADVERSARIAL[bucket]
    fn = {
        "rl": lambda: extract_rl(text, [], CFG),
        "sft": lambda: extract_sft(text, CFG),
        "datagen": lambda: extract_datagen(text, CFG, None),
        "eval": lambda: extract_eval(text, CFG),
    }[bucket]
    t0 = time.perf_counter()
    fn()
    assert time.perf_counter() - t0 < 0.1  # was 1.6-1.8 s per pattern (quadratic backtracking)


# ---- never a wrong step (issue: read the logs people actually write) -------------------------------


def test_sft_dataset_save_bar_right_after_launch_is_not_the_step() -> None:
    ex = extract_sft(log("sft_launch_save_bar.out"), CFG)
    assert ex.values["step"] is None and ex.values["total"] == 97  # never "50000 of 97"
    assert any("Saving the dataset" in p for p in ex.problems)


def test_sft_eval_bar_mid_training_is_not_the_step() -> None:
    ex = extract_sft(log("sft_eval_bar.out"), CFG)
    assert ex.values["step"] == 50 and ex.values["total"] == 6000  # not the eval bar's 3 of 3


def test_sft_eval_bar_without_banner_is_ambiguous_not_a_number() -> None:
    text = log("sft_eval_bar.out").split("  Total optimization steps = 6,000\n", 1)[1]
    ex = extract_sft(text, CFG)
    assert ex.values["step"] is None and any("different totals" in p for p in ex.problems)


def test_step_above_the_total_is_unknown_with_the_reason() -> None:
    ex = extract_sft("  Total optimization steps = 100\n 100%|█| 120/120 [00:10<00:00, 1it/s]\n", CFG)
    assert ex.values["step"] is None and any("120" in p for p in ex.problems)
    tail = 'Training Step Progress: 101/100\nWANDB_MIRROR {"trainer/global_step": 101, "trainer/max_steps": 100}\n'
    rl = extract_rl(tail, [], CFG)
    assert rl.values["step"] is None and any("above the total 100" in p for p in rl.problems)


def test_rl_bar_with_another_total_than_max_steps_is_not_the_step() -> None:
    tail = 'Training Step Progress: 7/9\nWANDB_MIRROR {"trainer/global_step": 40, "trainer/max_steps": 100, "reward/mean": 0.5}\n'
    ex = extract_rl(tail, [], CFG)
    assert ex.values["step"] is None and ex.values["max_steps"] == 100
    assert any("total 9" in p for p in ex.problems)


def test_unknown_metric_names_give_a_reason_naming_what_was_seen() -> None:
    ex = extract_rl('Training Step Progress: 3/10\nWANDB_MIRROR {"my/reward": 0.5, "gn": 1.0}\n', [], CFG)
    assert ex.values["reward"] is None
    assert any("no reward" in p and "my/reward" in p for p in ex.problems)


# ---- log profiles (include/sweep.yaml metrics.profiles; fixtures cite the printing code) -----------

PROFILED = {  # fixture: (bucket, profile, the values the Step/metric columns show)
    "verl.out": (
        "rl",
        "verl",
        {"step": 12, "max_steps": 300, "reward": 0.43, "entropy": 0.5031, "tis": 1.0012, "lr": None},
    ),
    "openrlhf.out": (
        "rl",
        "openrlhf",
        {"step": 7, "max_steps": None, "reward": 0.3125, "grad_norm": 0.731, "lr": 5e-07},
    ),
    "trl.out": (
        "rl",
        "trl",
        {"step": 14, "max_steps": 1868, "reward": 0.25, "grad_norm": 0.3711, "entropy": 0.4412, "lr": 9.9e-07},
    ),
    "megatron.out": ("sft", "megatron", {"step": 5428, "total": 250000, "loss": 2.341002, "lr": 2.999e-04}),
    "mmengine.out": ("sft", "mmengine", {"step": 580, "total": 2046, "loss": 0.6011, "lr": 1.9986e-05}),
    "lightning.out": ("sft", "lightning", {"step": 450, "total": 1000, "loss": 2.571}),  # total: epoch 0's bar
    # the exact global_step/max_steps of the last dict, not the Val bar 25/25 nor the half-written bar after it
    "ms-swift.out": (
        "sft",
        "ms-swift",
        {"step": 205, "total": 1000, "loss": 0.98765432, "grad_norm": 1.2345, "lr": 9.524e-05},
    ),
    "ms-swift-grpo.out": (
        "rl",
        "ms-swift-rl",
        {"step": 30, "max_steps": 1200, "reward": 0.4688, "entropy": 0.5031, "lr": 1e-06},
    ),
    "llamafactory-ppo.out": ("rl", "llamafactory", {"step": 13, "max_steps": 1250, "reward": 0.2344, "lr": 1e-05}),
    # the last whole pformat dict (step 12; step 13's is cut off), the step of the last Step N: header
    "skyrl.out": (
        "rl",
        "skyrl",
        {"step": 13, "max_steps": 30, "reward": 0.4375, "grad_norm": 0.3011, "entropy": 0.4987, "tis": 1.0009},
    ),
}


@pytest.mark.parametrize("name", PROFILED)
def test_profiles_read_each_framework_as_it_prints(name: str) -> None:
    from sweep_core.fanin.metrics.select import extract_training

    bucket, profile, want = PROFILED[name]
    text = (FIXTURES / "logs" / "profiles" / name).read_text()
    ex = extract_training(bucket, "job", text, [], CFG)
    assert ex.values["log_profile"] == profile
    assert {k: ex.values[k] for k in want} == pytest.approx(want)
    check_extracted(bucket, [text], ex.values, ex.problems)
    for key, value in ex.values.items():  # every unknown says why (past_max_steps: None = not past; lr: shown as —)
        if value is None and key not in ("past_max_steps", "lr"):
            assert any(key.split("_")[0] in p or "step" in p for p in ex.problems), (key, ex.problems)


def test_nan_grad_norms_are_read_as_nan() -> None:
    from sweep_core.fanin.metrics.select import extract_training

    for name, bucket in (
        ("verl.out", "rl"),
        ("megatron.out", "sft"),
        ("mmengine.out", "sft"),
        ("ms-swift-grpo.out", "rl"),
    ):
        ex = extract_training(bucket, "j", (FIXTURES / "logs" / "profiles" / name).read_text(), [], CFG)
        assert math.isnan(ex.values["grad_norm"]), name


def test_runbook_format_stays_the_default_and_a_pin_forces_a_profile() -> None:
    from sweep_core.fanin.metrics.select import extract_training

    ex = extract_training("rl", "rl__a2", log("rl_healthy.out"), [], CFG)
    assert "log_profile" not in ex.values and ex.values["step"] == 45
    pinned = metrics_config({**CFG_RAW, "pins": [{"match": "^verl_", "profile": "verl"}]})
    text = (FIXTURES / "logs" / "profiles" / "verl.out").read_text() + "\nTraining Step Progress: 1/2\n"
    assert "log_profile" not in extract_training("rl", "other", text, [], pinned).values  # the default's line
    assert extract_training("rl", "verl_run", text, [], pinned).values["log_profile"] == "verl"
    with pytest.raises(MetricsConfigError, match="no profile 'nope'"):
        metrics_config({**CFG_RAW, "pins": [{"match": "x", "profile": "nope"}]})


def test_a_log_in_no_known_format_says_so() -> None:
    from sweep_core.fanin.metrics.select import extract_training

    ex = extract_training("rl", "j", "loading model\nstarting\n", [], CFG)
    assert ex.values["step"] is None and any("no known log format" in p for p in ex.problems)


def test_llamafactory_sft_is_the_hf_trainer_format_the_default_reads() -> None:
    from sweep_core.fanin.metrics.select import extract_training

    text = (FIXTURES / "logs" / "profiles" / "llamafactory-sft.out").read_text()
    ex = extract_training("sft", "job", text, [], CFG)
    assert "log_profile" not in ex.values and ex.problems == []
    # the eval bar 2/3 at the end is not the step: the banner's total (4,875) tells the training bar
    assert ex.values == {"step": 610, "total": 4875, "loss": 1.0388, "grad_norm": 0.9123, "lr": 4.8e-05}


def test_a_profile_signature_goes_before_a_bare_loss_dict_but_not_before_the_banner() -> None:
    from sweep_core.fanin.metrics.select import extract_training

    swift = (FIXTURES / "logs" / "profiles" / "ms-swift.out").read_text()
    assert extract_training("sft", "j", swift, [], CFG).values["log_profile"] == "ms-swift"
    banner = "  Total optimization steps = 1,000\n" + swift
    ex = extract_training("sft", "j", banner, [], CFG)
    assert "log_profile" not in ex.values and ex.values["total"] == 1000
    bare = "{'loss': 0.5, 'grad_norm': 1.0, 'epoch': 0.1}\n"  # HF Trainer with its banner scrolled out
    ex = extract_training("sft", "j", bare, [], CFG)
    assert ex.values["log_profile"] == "general" and ex.values["loss"] == 0.5  # read by shape (issue 40)
    assert not any("no known log format" in p for p in ex.problems)


def test_skyrl_multi_line_dicts_are_read_whole_with_nan_inf_and_numpy_scalars() -> None:
    from sweep_core.fanin.metrics.select import extract_training

    text = (FIXTURES / "logs" / "profiles" / "skyrl.out").read_text()
    ex = extract_training("rl", "job", text, [], CFG)
    # step 11's dict (nan grad norm, inf IS ratio, a np.float32 in sci notation) and step 12's; the
    # cut-off step 13 is no point, said as such; the tail's first, headless dict is none either
    assert [p["reward"] for p in ex.series] == [0.4219, 0.4375]
    assert math.isnan(ex.series[0]["grad_norm"]) and ex.series[0]["tis"] == math.inf
    assert ex.problems == ["skyrl metric dict not closed within 400 lines (cut off)"]
    # one line per dict (dict_lines: 1) reads none of them, saying so
    one = metrics_config({**CFG_RAW, "profiles": [{**CFG_RAW["profiles"][2], "dict_lines": 1}]})
    assert one.profiles[0].name == "skyrl"
    ex1 = extract_training("rl", "job", text, [], one)
    assert ex1.values["reward"] is None and any("no skyrl metric line" in p for p in ex1.problems)


def test_skyrl_step_lines_without_their_dict_are_passed_over() -> None:
    """The incremental read brings back the Step N: lines of older bytes without their dicts."""
    from sweep_core.fanin.metrics.select import extract_training

    text = (FIXTURES / "logs" / "profiles" / "skyrl.out").read_text()
    head = "".join(
        f"(skyrl_entrypoint pid=2291) 2025-06-12 | INFO | skyrl.train.utils.tracking:log:189 - Step {n}: \n"
        for n in (8, 9)
    )
    ex = extract_training("rl", "job", head + text, [], CFG)
    assert ex.values["reward"] == 0.4375 and len(ex.series) == 2
    assert ex.problems == ["skyrl metric dict not closed within 400 lines (cut off)"]


def test_skyrl_eval_only_dict_gives_unknown_reward_naming_what_it_holds() -> None:
    from sweep_core.fanin.metrics.select import extract_training

    text = (
        "skyrl.train.utils.tracking:log:189 - Step 0: \n"
        "{'eval/all/avg_score': '0.2500',\n 'eval/all/pass_at_1': '0.2500'}\n"
        "Training Batches Processed:   0%|          | 0/30 [00:00<?, ?it/s]"
    )
    ex = extract_training("rl", "job", text, [], CFG)
    assert ex.values["step"] == 0 and ex.values["max_steps"] == 30 and ex.values["reward"] is None
    assert any("no reward in the last skyrl metric line" in p and "eval/all/avg_score" in p for p in ex.problems)


def test_numpy_and_torch_scalars_in_a_python_dict_read_as_their_numbers() -> None:
    d = parse_metric_dict("{'a': np.float32(2.5e-05), 'b': tensor(1.5e+03), 'c': np.float64(nan), 'd': 'x'}")
    assert d["a"] == 2.5e-05 and d["b"] == 1500.0 and math.isnan(d["c"]) and d["d"] == "x"
