"""The sweep window: consecutive scheduled runs tile time; backfill reports its own window."""

from __future__ import annotations

import datetime as dt

import pytest

from sweep_core.timing.window import resolve_window

UTC = dt.UTC


def test_data_interval_is_the_window() -> None:
    s, e = dt.datetime(2026, 3, 1, 9, tzinfo=UTC), dt.datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert resolve_window(s, e) == (s, e)


def test_lookback_counts_back_from_the_trigger_time() -> None:
    s, e = dt.datetime(2026, 3, 1, 9, tzinfo=UTC), dt.datetime(2026, 3, 1, 12, tzinfo=UTC)
    trig = dt.datetime(2026, 3, 1, 12, 40, tzinfo=UTC)
    assert resolve_window(s, e, 1, trig) == (trig - dt.timedelta(hours=1), trig)
    assert resolve_window(s, e, "", trig) == (s, e)
    assert resolve_window(s, e, None, trig) == (s, e)


def test_zero_length_interval_falls_back_to_default_lookback() -> None:
    e = dt.datetime(2026, 3, 1, 12, tzinfo=UTC)
    s2, e2 = resolve_window(e, e)
    assert e2 == e and e - s2 == dt.timedelta(hours=3)


@pytest.mark.parametrize("bad", ["abc", -1, 0, 10_000])
def test_bad_lookback_is_a_clear_error(bad: object) -> None:
    e = dt.datetime(2026, 3, 1, 12, tzinfo=UTC)
    with pytest.raises(ValueError, match="lookback_hours"):
        resolve_window(None, e, bad)


def test_naive_times_are_utc() -> None:
    s, e = resolve_window("2026-03-01T09:00:00", "2026-03-01T12:00:00")
    assert s.tzinfo is not None and s.hour == 9 and e.hour == 12


def test_airflow_pendulum_times_stay_aware_in_arithmetic() -> None:
    # Airflow hands the data interval as pendulum DateTimes; pendulum drops a stdlib tzinfo in
    # `start - timedelta`, which then could not be compared with an aware time (a real sweep failed so)
    import pendulum

    start, end = resolve_window(
        pendulum.datetime(2026, 12, 3, 17, 3, tz="UTC").astimezone(dt.UTC),
        pendulum.datetime(2026, 12, 3, 17, 4, tz="UTC"),
    )
    assert type(start) is dt.datetime and (start - dt.timedelta(hours=24)).tzinfo is not None
    assert max(start - dt.timedelta(hours=1), dt.datetime(2026, 12, 3, tzinfo=dt.UTC)) == dt.datetime(2026, 12, 3, 16, 3, tzinfo=dt.UTC)  # fmt: skip
    _, back = resolve_window(None, None, 2, pendulum.datetime(2026, 12, 3, 17, 4, tz="UTC").astimezone(dt.UTC))
    assert (back - dt.timedelta(hours=1)).tzinfo is not None
