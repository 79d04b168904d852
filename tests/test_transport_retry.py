"""A read-only step is retried by Airflow only after a transport error; a config or parse error
fails at once (AirflowFailException: no retry)."""

from __future__ import annotations

import json

import pytest


def _step(exc: BaseException):
    from sweep_operators.reliability import transport_only

    @transport_only
    def step(**_: object) -> None:
        raise exc

    return step


@pytest.mark.parametrize(
    "exc",
    [TimeoutError("read timed out"), ConnectionRefusedError("refused"), OSError("x")],
    ids=["timeout", "refused", "plain-oserror"],
)
def test_classification_of_plain_errors(exc) -> None:
    from sweep_core.timing.transport import is_transport_error

    assert is_transport_error(exc) is (type(exc) is not OSError)


def test_a_transport_error_is_raised_for_airflow_to_retry() -> None:
    from sweep_core.slurm.failover import NodeUnreachable
    from sweep_operators.iris_hook import IrisUnavailable

    for exc in (NodeUnreachable("connect failed"), IrisUnavailable("controller down"), TimeoutError("t")):
        with pytest.raises(type(exc)):
            _step(exc)()
    # a delivery failure raised from a transport error (notify's channel down) is retried too
    from airflow.sdk.exceptions import AirflowException

    try:
        try:
            raise ConnectionResetError("reset")
        except ConnectionResetError as cause:
            raise AirflowException("digest not delivered") from cause
    except AirflowException as wrapped:
        with pytest.raises(AirflowException) as got:
            _step(wrapped)()
    assert type(got.value) is AirflowException


def test_a_config_or_parse_error_fails_at_once() -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from sweep_core.config.sweep import SweepConfigError

    parse = json.JSONDecodeError("bad", "{", 0)
    config = SweepConfigError("include/sweep.yaml: gather.command_timeout_s: must be > 0")
    for exc in (parse, config, KeyError("snapshots")):
        with pytest.raises(AirflowFailException, match="not retried"):
            _step(exc)()
    # a config error raised while a connection was being made is still a config error
    try:
        try:
            raise TimeoutError("t")
        except TimeoutError:
            raise config from None
    except SweepConfigError as exc:
        with pytest.raises(AirflowFailException):
            _step(exc)()


def test_skips_pass_unchanged() -> None:
    from airflow.sdk.exceptions import AirflowSkipException

    with pytest.raises(AirflowSkipException):
        _step(AirflowSkipException("nothing to do"))()
