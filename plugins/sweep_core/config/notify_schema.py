"""The schema of sweep.yaml's ``history:`` (the Parquet record of every sweep: where, how long) and
``notify:`` (the digest channels, their severities, the cooldown, kill-approval recipients, the
overrun alert) and ``openmetrics:`` (the Sweeps page's Prometheus endpoint). Consumers:
sweep_core.history, sweep_core.alerts, sweep_operators.notify_tasks, sweep_operators.sweeps_page.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from sweep_core.config.schema_base import CrossFieldErrors, StrictModel, Tup

NonEmpty = Annotated[str, Field(min_length=1)]
Positive = Annotated[int, Field(gt=0)]
SeverityName = Literal["critical", "warn", "info"]


class HistorySection(StrictModel):
    """sweep.yaml ``history:``: one Parquet file per sweep (jobs, clusters, flags)."""

    location: str | None = Field(
        None,
        description="an Airflow ObjectStoragePath (`s3://bucket/sweeps`, `gs://…`, `file:///srv/sweeps`) "
        "or a local directory; null = `<run_log_dir>/history`; `SWEEP_HISTORY` overrides",
    )
    conn_id: str | None = Field(None, description="the Connection an `s3://`/`gs://` location is opened with")
    retention_days: Positive = Field(90, description="a sweep's file older than this (by window end) is deleted")


class OpenMetricsSection(StrictModel):
    """sweep.yaml ``openmetrics:``: the Sweeps page's ``/sweeps/metrics`` endpoint (docs/alerts.md)."""

    job_series_limit: Annotated[int, Field(ge=0)] = Field(
        200,
        description="RUNNING jobs given per-job series (labels cluster, bucket, job_id, name), the stalest first; "
        "the rest are counted in `sweep_job_series_omitted`",
    )
    token_variable: str | None = Field(
        "sweep_metrics_token",
        description="the Airflow Variable holding a scraper's bearer token (`SWEEP_METRICS_TOKEN` overrides); "
        "null or unset: only the UI's login",
    )
    history_files: Positive = Field(
        48, description="newest sweeps of each history read per scrape to find each cluster's last success"
    )


class Channel(StrictModel):
    """One place a digest goes: a Slack webhook or an e-mail list, and which severities it hears."""

    name: NonEmpty = Field(description="how the task log and the tests name the channel")
    kind: Literal["slack", "email"] = Field(description="`slack` (webhook notifier) or `email` (SMTP notifier)")
    conn_id: NonEmpty = Field(description="slack: a Slack Incoming Webhook Connection; email: an SMTP Connection")
    severities: Tup[SeverityName] = Field(("critical", "warn"), min_length=1, description="flags it is told about")
    to: Tup[NonEmpty] = Field((), description="email: the recipients")
    handoffs: bool = Field(True, description="told about hand-offs triggered or waiting (kill approvals)")

    @model_validator(mode="after")
    def _recipients(self) -> Channel:
        if self.kind == "email" and not self.to:
            raise CrossFieldErrors([("to", "an email channel needs at least one recipient")])
        return self


class NotifySection(StrictModel):
    """sweep.yaml ``notify:``: the per-sweep digest, the kill-approval and the overrun alerts."""

    channels: Tup[Channel] = Field((), description="`{name, kind, conn_id, severities, to, handoffs}`; none = off")
    cooldown_hours: Annotated[float, Field(gt=0)] = Field(
        24.0, description="a flag (or cluster problem) still open this long after it was told is told again"
    )
    max_items: Positive = Field(30, description="lines per section of a digest; the rest is 'N more'")
    page_url: str | None = Field(
        None,
        description="the Sweeps page linked from each digest, with the page of each flagged job (at most 5); null = no link",
    )
    approvers: dict[str, Tup[NonEmpty]] = Field(
        {}, description="kill approvals (sweep_cancel): cluster -> e-mail addresses; `*` = every other cluster"
    )
    approver_users: dict[str, Tup[NonEmpty]] = Field(
        {},
        description="who may ANSWER an approval (cancel, relaunch, snapshots, hygiene): cluster -> Airflow "
        "user NAMES (the login, under the simple auth manager and FAB alike); `*` = every other cluster; "
        "{} = anyone allowed to answer it in Airflow. The user who triggered the run never may",
    )
    approval_conn_id: str | None = Field(None, description="the SMTP Connection approval mails go through")
    approval_slack_conn_id: str | None = Field(None, description="a Slack webhook told of each approval asked")
    overrun_intervals: Annotated[int, Field(ge=0)] = Field(
        1,
        description="a sweep still running this many schedule intervals after it was queued raises an alert "
        "(a Deadline Alert, told to the channels that hear critical, else logged); 0 = off",
    )
    failed_sweeps: Positive | None = Field(
        2,
        description="a sweep run that fails after this many failed runs in a row (itself included) is told to "
        "the channels that hear critical, and again every this many more; null = off",
    )
