"""The serving LUT: the file users edit, the range learned from the history's healthy runs of the
same setting, and the verdict's signal when GPU utilisation is far below it while the log advances."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep_core.config.deep_dive_schema import DeepDiveSection
from sweep_core.gpu.lut import expected_range, learn_ranges, load_lut_file, lut_source, setting_of
from sweep_core.handoffs.deep_dive.inputs import DeepDiveInput, GpuUtil
from sweep_core.handoffs.deep_dive.plan import KILL, NO_KILL, decide

ROOT = Path(__file__).resolve().parents[2]
CFG = DeepDiveSection()
PAT = CFG.setting_pattern
NAME = "rl__qwen3_8b_tp2_8n_a3"


def _row(name: str, util: float | None, job_id: str, flags: str = "", state: str = "RUNNING") -> dict:
    return {"record": "job", "bucket": "RL", "state": state, "cluster": "leonardo", "job_id": job_id,
            "name": name, "job_flags": flags, "gpu_mean_util": util}  # fmt: skip


def _history() -> list[dict]:
    rows = []
    for jid, utils in (("1", [70, 72, 90]), ("2", [60, 64, 66]), ("3", [80, 82, 84])):
        rows += [_row(f"rl__qwen3_8b_tp2_8n_run{jid}", u, jid) for u in utils]
    rows.append(_row("rl__qwen3_8b_tp2_8n_bad", 5.0, "4", flags="gpu_idle"))  # flagged: not healthy
    rows.append(_row("rl__qwen3_8b_tp2_8n_x", None, "5"))  # no reading
    rows.append(_row("rl__qwen3_8b_tp2_8n_done", 1.0, "6", state="COMPLETED"))
    rows += [_row("rl__llama3_70b_tp8_16n", 50.0, "7"), _row("rl__llama3_70b_tp8_16n", 55.0, "8")]
    return rows


def test_the_setting_is_model_parallelism_geometry() -> None:
    assert setting_of(NAME, PAT) == "model=qwen3_8b parallelism=tp2 geometry=8n"
    assert setting_of("rl__Qwen2.5-7b-dp4-4n", PAT) == "model=Qwen2.5-7b parallelism=dp4 geometry=4n"
    assert setting_of("rl__smoke_test", PAT) is None


def test_healthy_runs_of_a_setting_give_its_range() -> None:
    learned = learn_ranges(_history(), PAT, min_runs=3)
    # run medians 72, 64, 82; the flagged, unread and finished runs do not count
    assert learned == {"model=qwen3_8b parallelism=tp2 geometry=8n": (64.0, 82.0, 3)}
    assert "model=llama3_70b parallelism=tp8 geometry=16n" not in learned  # 2 runs < 3
    exp, why = expected_range(NAME, (), learned, PAT, 3)
    assert exp is not None and (exp.util_min, exp.util_max) == (64.0, 82.0) and why == ""
    assert exp.source == "learned from 3 healthy runs of model=qwen3_8b parallelism=tp2 geometry=8n"


def test_no_range_is_said_why() -> None:
    learned = learn_ranges(_history(), PAT, min_runs=3)
    assert "fewer than 3 healthy runs" in expected_range("rl__llama3_70b_tp8_16n_b", (), learned, PAT, 3)[1]
    assert "history is not read" in lut_source((), None, PAT, 3)(NAME)[1]
    assert "setting is not read" in expected_range("rl__smoke", (), learned, PAT, 3)[1]


def test_the_file_users_edit_overrides_what_was_learned(tmp_path: Path) -> None:
    f = tmp_path / "lut.yaml"
    f.write_text('rows:\n  - {match: "qwen3_8b.*_8n", util_min: 40, util_max: 95, note: "run 1234"}\n')
    rows = load_lut_file(f)
    exp, _ = lut_source(rows, _history(), PAT, 3)(NAME)
    assert exp is not None and (exp.util_min, exp.util_max) == (40, 95) and "run 1234" in exp.source
    assert load_lut_file(tmp_path / "none.yaml") == ()
    assert load_lut_file(ROOT / "include" / "serving_lut.yaml") == ()  # shipped empty, documented
    (tmp_path / "bad.yaml").write_text("rows:\n  - {match: x, util_min: 90, util_max: 10}\n")
    with pytest.raises(ValueError, match="bad.yaml"):
        load_lut_file(tmp_path / "bad.yaml")


def _input(util: float | None, log_age_s: float = 60.0, **kw: object) -> DeepDiveInput:
    gpus = [GpuUtil("n0", i, util, 1.0, 2.0) for i in range(8)]
    series = [{"step": float(i), "reward": 0.3} for i in range(1, 5)]
    inp = DeepDiveInput("leonardo", "9", NAME, state="RUNNING", series=series, log_age_s=log_age_s, gpus=gpus,
                        signatures=[], rollouts=["The answer is 4 because 2 + 2 = 4."] * 6, starvation_log="")  # fmt: skip
    learned = lut_source((), _history(), PAT, 3)(NAME)[0]
    assert learned is not None
    inp.expected = (learned.util_min, learned.util_max, learned.source)
    for k, v in kw.items():
        setattr(inp, k, v)
    return inp


def test_far_below_the_range_while_the_log_advances_is_a_weak_signal() -> None:
    v = decide(_input(20.0), CFG)  # < 0.5 x 64
    assert v.verdict == NO_KILL and v.weight == 1  # weak: one more weak signal makes a KILL
    line = "weak signal: GPU util 20 % mean, far below the serving LUT's 64-82 % (learned from 3 healthy runs"
    assert any(e.startswith(line) for e in v.evidence)
    two = decide(_input(20.0, rollouts=["The answer is 4."] * 3 + ["", "", ""]), CFG)  # half empty: weak
    assert two.verdict == KILL and two.basis == "two weak signals (gpu-below-lut, empty-rollouts)"


def test_below_but_not_far_or_with_a_silent_log_is_no_signal() -> None:
    assert decide(_input(40.0), CFG).weight == 0  # below 64, not below 32
    assert decide(_input(20.0, log_age_s=7200.0), CFG).weight == 0  # a stall: liveness, not this signal
    inside = decide(_input(70.0), CFG)
    assert any("inside the serving LUT's 64-82 %" in e for e in inside.evidence)


def test_no_reading_or_no_range_is_unknown_never_healthy() -> None:
    v = decide(_input(None, gpu_note="exec refused"), CFG)
    assert any(u.startswith("GPU utilisation unknown (exec refused") for u in v.unknown)
    norange = decide(_input(70.0, expected=None, expected_note="fewer than 3 healthy runs of it"), CFG)
    assert "expected GPU util unknown: fewer than 3 healthy runs of it" in norange.unknown
    assert not any("inside" in e for e in norange.evidence)
