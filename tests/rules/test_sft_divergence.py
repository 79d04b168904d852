"""sft_divergence: a NaN/inf loss or grad norm in an SFT log is a failure to diagnose (even after a
finite line), a spike of the last loss/grad norm over the earlier median is flagged, a healthy log
or too short a history is not; thresholds come from sweep.yaml."""

from __future__ import annotations

from rules.test_rules import CONFIG, ended, log, run, sweep

from sweep_core.pipeline.steps import run_fan_in
from sweep_core.records.models import ClusterSnapshot, ClusterStatus


def flags_of(flags) -> dict[str, str]:
    return {name: f.line() for (rule, name), f in flags.items() if rule == "sft_divergence"}


def test_a_nan_loss_is_a_failure_to_diagnose_even_when_a_finite_line_follows() -> None:
    result, flags = sweep([run("sft__b1_nan", log("sft_nan.out"), job_id="51")])
    assert flags_of(flags) == {
        "sft__b1_nan": "[sft_divergence] CRITICAL leo SFT 51 sft__b1_nan: grad_norm inf, loss nan in the log"
        " tail: divergence, a failure to diagnose → diagnose"
    }
    assert "[sft_divergence]" in result.rendered.tables["SFT"]


def test_a_loss_and_grad_norm_spike_is_flagged_and_an_ended_run_is_not_handed_off() -> None:
    _, flags = sweep([run("sft__b1_spike", log("sft_spike.out"), job_id="52")])
    assert flags_of(flags) == {
        "sft__b1_spike": "[sft_divergence] WARN leo SFT 52 sft__b1_spike: loss spike 2.873 > 3 x median 0.4049 of"
        " the earlier ones; grad_norm spike 41.27 > 5 x median 1.043 of the earlier ones → investigate"
    }
    _, flags = sweep(finished=[ended("sft__b1_spike", "COMPLETED", log("sft_spike.out"), job_id="53")])
    f = flags[("sft_divergence", "sft__b1_spike")]
    assert f.message.endswith("(already ended)") and f.action == ""


def test_a_healthy_log_or_a_short_history_raises_nothing() -> None:
    _, flags = sweep([run("sft__b1_ok", log("sft_healthy.out"))])
    assert flags_of(flags) == {}
    short = "\n".join(log("sft_spike.out").splitlines()[-4:])  # one earlier loss: not enough to call a spike
    _, flags = sweep([run("sft__b1_short", short)])
    assert flags_of(flags) == {}


def test_the_thresholds_come_from_sweep_yaml() -> None:
    rules = CONFIG.rules.model_copy(
        update={"sft_divergence": CONFIG.rules.sft_divergence.model_copy(update={"loss_spike_factor": 10.0,
                                                                                 "grad_norm_spike_factor": 50.0})}
    )  # fmt: skip
    config = CONFIG.model_copy(update={"rules": rules})
    snap = ClusterSnapshot("leo", "slurm", ClusterStatus.OK, remote_now=0.0, running=[run("sft__b1_spike", log("sft_spike.out"))],
                           finished=[], pending=[])  # fmt: skip
    result = run_fan_in([snap], config)
    assert not [f for f in result.flags if f.rule == "sft_divergence"]
