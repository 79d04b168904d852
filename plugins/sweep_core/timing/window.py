"""The sweep's time window: what sacct -S/-E cover (the DAG run's data interval)."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

DEFAULT_LOOKBACK_HOURS = 3.0
# A window that ended more than this before the gather read the cluster is a PAST window (a
# backfill, a late re-run): squeue and log ages tell about now, not about that window.
# $SWEEP_PAST_WINDOW_GRACE_S overrides it (the tests' short windows).
PAST_WINDOW_GRACE_S = 15 * 60
# A job RUNNING at a past window's end: its log is not read (today it tells about now).
PAST_RUNNING_LOG_NOTE = "log not read: a past window (its log today tells about now, not about that window)"
PAST_WINDOW_NOTE = "past window: liveness cannot be judged for a past window (no stall marks, no cancel hand-off)"


def now_iso() -> str:
    """Now in UTC to the second, ISO 8601: the stamp an act, a claim or a stored check carries."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _aware(value: Any, what: str) -> dt.datetime:
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if not isinstance(value, dt.datetime):
        raise ValueError(f"{what} must be a datetime, got {value!r}")
    u = (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
    # a plain datetime: pendulum's (Airflow's) DateTime drops a stdlib tzinfo in arithmetic
    # (`start - timedelta` came back naive), and a naive time cannot be compared with an aware one
    return dt.datetime(u.year, u.month, u.day, u.hour, u.minute, u.second, u.microsecond, tzinfo=dt.UTC)


def resolve_window(
    start: Any, end: Any, lookback_hours: Any = None, run_after: Any = None
) -> tuple[dt.datetime, dt.datetime]:
    """[start, end) in UTC: the data interval, so a backfilled run reports ITS window.

    ``lookback_hours`` (a UI param; "", "None" count as unset) means "the last N hours before
    this run was triggered": [run_after - N h, run_after). A zero-length interval falls back to
    the default lookback before its end.
    """
    if end is None:
        end = run_after if run_after is not None else dt.datetime.now(dt.UTC)
    end_dt = _aware(end, "data_interval_end").astimezone(dt.UTC)
    hours: float | None = None
    if lookback_hours not in (None, "", "None", "none", "null"):
        try:
            hours = float(lookback_hours)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"lookback_hours must be a number of hours, got {lookback_hours!r}") from exc
        if not 0 < hours <= 24 * 31:
            raise ValueError(f"lookback_hours must be in (0, 744], got {hours}")
    if hours is not None:
        if run_after is not None:
            end_dt = _aware(run_after, "run_after").astimezone(dt.UTC)
        return end_dt - dt.timedelta(hours=hours), end_dt
    start_dt = _aware(start, "data_interval_start").astimezone(dt.UTC) if start is not None else None
    if start_dt is None or start_dt >= end_dt:
        return end_dt - dt.timedelta(hours=DEFAULT_LOOKBACK_HOURS), end_dt
    return start_dt, end_dt


def epoch_of_time(value: Any) -> float | None:
    """Epoch seconds of ISO text or a datetime (naive = UTC); None when it is not a time."""
    if value in (None, ""):
        return None
    try:
        return _aware(value, "time").timestamp()
    except ValueError:
        return None


def past_window_grace_s() -> int:
    """PAST_WINDOW_GRACE_S, or $SWEEP_PAST_WINDOW_GRACE_S when that is a whole number of seconds."""
    raw = os.environ.get("SWEEP_PAST_WINDOW_GRACE_S", "").strip()
    return int(raw) if raw.isdigit() else PAST_WINDOW_GRACE_S


def is_past_window(window_end: Any, now: float | None) -> bool:
    """True when ``window_end`` (ISO text or datetime) ended more than past_window_grace_s() before
    ``now`` (the cluster's clock, epoch seconds); False when either is not known or not a time."""
    end = epoch_of_time(window_end)
    return now is not None and end is not None and now - end > past_window_grace_s()
