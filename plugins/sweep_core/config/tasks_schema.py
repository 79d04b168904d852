"""The schema of sweep.yaml ``tasks:``: Airflow's own reliability settings for every task of every
DAG. Each task's ``execution_timeout`` is sized by sweep_core.config.task_limits from what it waits for
(the SSH and iris timeouts of ``gather:``, the approval bound, the verify wait) plus ``margin_s``;
only read-only steps retry, and only on transport errors (sweep_core.timing.transport).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sweep_core.config.schema_base import StrictModel

Positive = Annotated[int, Field(gt=0)]


class TasksSection(StrictModel):
    """sweep.yaml ``tasks:``: execution timeouts and the read-only steps' retries."""

    margin_s: Positive = Field(
        300, description="added to each task's sized wait (start-up, XCom, local work) for its execution_timeout"
    )
    local_timeout_s: Positive = Field(
        1800,
        description="execution_timeout of a task that waits on no cluster (bucket, render, records, branches, "
        "triggers, the ledger claims)",
    )
    retries: Annotated[int, Field(ge=0)] = Field(
        2,
        description="retries of a read-only step (gathers, probes, verify, history, notify) after a transport "
        "error (SSH, connection, timeout, an iris controller that does not answer); never for an act, never "
        "for a config or parse error; 0 = none",
    )
    retry_delay_s: Positive = Field(30, description="the first retry's delay; each next one doubles (exponential)")
    max_retry_delay_s: Positive = Field(900, description="the longest delay between two tries")
