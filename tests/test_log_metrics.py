"""Metric extractors on realistic log fixtures (tests/fixtures/logs/); bad lines never crash."""

from __future__ import annotations

import math

import pytest
from helpers import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep_core.log_metrics import (
    MetricsConfigError,
    chunk_counts,
    expand_array_tasks,
    extract_datagen,
    extract_eval,
    extract_rl,
    extract_sft,
    hang_evidence,
    metrics_config,
    parse_metric_dict,
)
from sweep_core.sweep_config import load_sweep_config

ROOT = FIXTURES.parents[1]
CFG = metrics_config(load_sweep_config(ROOT / "include" / "sweep.yaml").extra["metrics"])


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
    assert ex.values == {"step": 227, "total": 1875, "loss": 0.5987, "grad_norm": 1.521}


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
def test_extractors_never_raise_on_arbitrary_text(text: str) -> None:
    for fn in (
        lambda t: extract_rl(t, [t], CFG),
        lambda t: extract_sft(t, CFG),
        lambda t: extract_datagen(t, CFG, None),
        lambda t: extract_eval(t, CFG),
    ):
        fn(text)
        fn("WANDB_MIRROR " + text)
        fn("{'loss': " + text)


def test_parse_metric_dict_rejects_non_dicts() -> None:
    with pytest.raises(ValueError):
        parse_metric_dict("[1, 2]")
    assert parse_metric_dict('x {"a": 1} y') == {"a": 1}
