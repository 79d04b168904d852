"""An act script's waits (checkpoint grace, confirm polls) are checked against the SSH command
timeout at load: a relaunch grace of 3,600 s under a 300 s reader would keep acting on the cluster
long after the sweep stopped reading it."""

from __future__ import annotations

import pytest

from sweep_core.config.sweep import SweepConfigError, parse_sweep_config

BUCKETS = "buckets: [{name: RL, patterns: ['^rl__']}, {name: Catch-all}]\n"


def _error(text: str) -> str:
    with pytest.raises(SweepConfigError) as err:
        parse_sweep_config(BUCKETS + text, "include/sweep.yaml")
    return str(err.value)


def test_a_grace_longer_than_the_command_timeout_names_both_keys() -> None:
    msg = _error("cancel: {relaunch: {series: [{match: '^rl__', checkpoint_signal: USR1, grace_s: 3600}]}}\n")
    assert "cancel.relaunch.series[0].grace_s: 3600 s + cancel.relaunch.confirm_timeout_s 30 s" in msg
    assert "at most 280 s (gather.command_timeout_s (300) minus 20 s)" in msg


def test_confirm_waits_are_checked_against_a_short_command_timeout() -> None:
    msg = _error("gather: {command_timeout_s: 40}\ncancel: {confirm_timeout_s: 30}\n")
    assert "cancel.confirm_timeout_s: 30 s must be at most 20 s" in msg
    assert "cancel.relaunch.confirm_timeout_s: 30 s must be at most 20 s" in msg


def test_waits_inside_the_bound_load() -> None:
    cfg = parse_sweep_config(
        BUCKETS + "cancel: {relaunch: {series: [{match: '^rl__', grace_s: 120}], confirm_timeout_s: 60}}\n", "x"
    )
    assert cfg.cancel.relaunch.series[0].grace_s == 120
