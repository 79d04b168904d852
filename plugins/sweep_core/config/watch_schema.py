"""The schema of sweep.yaml's ``watch:``: the light sweep every few minutes beside the report sweep
(sweep_core.timing.cadence; the DAG ``monitor_cron_watch``). Consumers: dags/monitor_cron_watch.py,
sweep_operators.sweep_tasks.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from sweep_core.config.schema_base import CronOrNull, StrictModel, Tup
from sweep_core.timing.cadence import WATCH_HANDOFFS, WATCH_RULES


class WatchSection(StrictModel):
    """sweep.yaml ``watch:``: gather, the fast rules, the digest and the act hand-offs, every few minutes."""

    schedule: CronOrNull = Field(
        "*/5 * * * *",
        description="5-field cron of the watch's data intervals; null = off (the DAG is parsed but never scheduled)",
    )
    rules: Tup[str] = Field(
        WATCH_RULES,
        min_length=1,
        description="the flag rules a watch run runs (names of rules/registry.py RULES, run in its order; "
        "an unknown name fails the watch DAG's import); the report sweep runs every rule",
    )
    history_days: Annotated[int, Field(gt=0)] = Field(
        1,
        description="a watch run's history file (flag and cluster rows, under `<history>/watch/`) is kept this "
        "long; the digest's streaks live on in the report sweeps' history",
    )
    handoffs: Tup[Literal["cancel", "deep_dive"]] = Field(
        WATCH_HANDOFFS,
        description="the act hand-offs a watch run gives (the others are the report sweep's): `cancel`, and "
        "`deep_dive` to have a new RL run deep-dived (and its KILL verdict's kill-approval asked) within minutes, "
        "with `rl_new_untested` in `rules`",
    )

    failing_minutes: Annotated[int, Field(ge=0)] | None = Field(
        15,
        description="the watch failing this many minutes in a row (from its first failed run's window start to "
        "the latest failed run's window end: 15 = three 5-minute runs) is told to the channels that hear "
        "critical, once per streak; its own streak, apart from the report sweep's `notify.failed_sweeps`; "
        "a successful watch run ends it; null = off",
    )
    failing_repeat_minutes: Annotated[int, Field(gt=0)] = Field(
        60, description="a watch that keeps failing is told again once this many minutes have passed since it was told"
    )
