"""The schema of sweep.yaml ``consolidate:`` (datagen-job-cleanup's first half: "consolidate +
advance the tracker"): per cleanup flavor the sbatch command that builds the consolidated dataset,
how often a FAILED one is retried, and the datagen tracker whose row advances. No flavor = off.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from sweep_core.config.schema_base import StrictModel, Tup
from sweep_core.safe.names import CONSOLIDATE_JOB_DERIVED, CONSOLIDATE_PLACEHOLDERS, check_argv_template

NonEmpty = Annotated[str, Field(min_length=1)]


class ConsolidateCommand(StrictModel):
    """The consolidate job of one cleanup flavor (an ``all_chunks`` flavor: a datagen array)."""

    argv: Tup[NonEmpty] = Field(
        min_length=1,
        description="sbatch argv, every value shlex-quoted; templates {name} {job_id} (the array id) {cluster} "
        "{root} (the artifact root holding the chunks) {org} (cleanup.hub_org) {job_name}",
    )
    job_name: NonEmpty = Field("consolidate__{name}", description="the job's -J (template {name} {job_id})")
    max_retries: int = Field(2, ge=0, le=10, description="a FAILED consolidate is submitted again at most this often")

    @field_validator("argv")
    @classmethod
    def _sbatch(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if value[0] != "sbatch":
            raise ValueError("must start with sbatch (consolidate runs as a batch job, never on the login node)")
        if "--parsable" not in value:
            raise ValueError("must pass --parsable (the job id is read from sbatch's output)")
        check_argv_template(value, CONSOLIDATE_PLACEHOLDERS, CONSOLIDATE_JOB_DERIVED, "argv", strict=False)
        return value


class ConsolidateSection(StrictModel):
    """sweep.yaml ``consolidate:``."""

    flavors: dict[str, ConsolidateCommand] = Field(
        {}, description="cleanup flavor -> its consolidate command; a flavor not named here is not consolidated"
    )
    tracker: str = Field(
        "", description="the datagen tracker markdown, relative to `trackers.repo`; '' = no row to advance"
    )
    lookback_days: Annotated[int, Field(gt=0)] = Field(60, description="sacct -S reach for chunks and consolidate jobs")
    tail_bytes: Annotated[int, Field(gt=0)] = Field(16384, description="log tail of a FAILED consolidate job read")

    @field_validator("tracker")
    @classmethod
    def _relative(cls, value: str) -> str:
        if value.startswith("/") or ".." in value.split("/"):
            raise ValueError("must be relative to the tracker repo")
        return value
