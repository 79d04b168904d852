"""The schema of sweep.yaml's ``db_clean:``: Airflow's own ``airflow db clean`` on a schedule, run by
the deployment (a compose service, a Kubernetes CronJob, the bundled deployment's loop), never by a
DAG: in Airflow 3 a task has no metadata-DB access. Consumer: sweep_core.admin.db_clean.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sweep_core.config.schema_base import CronOrNull, StrictModel, Tup

DB_CLEAN_TABLES: tuple[str, ...] = ("xcom", "task_instance", "task_instance_history", "dag_run", "log", "job")


class DbCleanSection(StrictModel):
    """sweep.yaml ``db_clean:``: how long the Airflow metadata DB keeps DAG runs, their task
    instances, XComs, audit log and job rows."""

    schedule: CronOrNull = Field(
        "17 3 * * *",
        description="5-field cron (UTC) of the clean-up: the compose service and the bundled deployment's "
        "loop follow it, a Kubernetes CronJob takes it as its `schedule`; null = never",
    )
    retention_days: Annotated[int, Field(gt=0)] = Field(
        30, description="rows older than this many days are deleted, for every DAG (`--clean-before-timestamp`)"
    )
    watch_retention_days: Annotated[int, Field(gt=0)] = Field(
        1,
        description="the watch's own rows (`--dag-ids monitor_cron_watch`, 288 runs a day and most of the "
        "XCom bytes) are deleted after this many days; what it found lives on in the ledger and the histories",
    )
    tables: Tup[str] = Field(
        DB_CLEAN_TABLES,
        min_length=1,
        description="the metadata tables cleaned (`--tables`); a dag_run's task instances and XComs go with it",
    )
    skip_archive: bool = Field(
        True,
        description="`--skip-archive`: deleted rows are not copied to `_airflow_deleted__*` tables first (those "
        "stay in the same database: an archive keeps every byte the clean-up is there to free)",
    )
