"""The schema of sweep.yaml's hand-off sections: ``cleanup:`` (what may be deleted once the hub
holds it), ``trackers:`` (the eval-grid harvest), ``cancel:`` (scancel after approval) and
``hf_chain:`` (the HF-only SFT chain). Their consumers in sweep_core.handoffs apply the guards.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from sweep_core.config.relaunch_schema import BreakerConfig, RelaunchConfig, StandingPermission
from sweep_core.config.schema_base import StrictModel, Tup
from sweep_core.safe.names import UPLOAD_JOB_DERIVED, UPLOAD_PLACEHOLDERS, check_argv_template

NonEmpty = Annotated[str, Field(min_length=1)]
Positive = Annotated[int, Field(gt=0)]


class HubRepo(StrictModel):
    """A hub repo that must hold the job's artifact before anything is deleted."""

    repo: NonEmpty = Field(description="template: {org} {name} {job_id} {cluster}")
    type: Literal["model", "dataset"] = "model"
    expected: Tup[NonEmpty] = Field(min_length=1, description="globs; each must match a file of the repo")


class Flavor(StrictModel):
    """One cleanup skill: its hub evidence and the artifact subtrees it deletes."""

    hub: Tup[HubRepo]
    delete: Tup[str] = Field((), description="subdirs of the job's artifact dir")
    all_chunks: bool = Field(False, description="datagen: every array chunk must be COMPLETED in sacct")
    upload: Tup[str] = Field(
        (),
        description="argv of the upload job when the hub lacks the artifact (starts with sbatch; templates "
        "{name} {job_id} {cluster} {root} {org} {hub_repo} {artifact_dir} {step}); () = none",
    )

    db_register: Tup[str] = Field(
        (),
        description="argv of the DB registration once the hub holds the upload (a short command on the login node, "
        "run once per completed upload, claimed in the ledger; never for an HF-only series; templates as upload); "
        "() = none",
    )

    @field_validator("upload", "db_register")
    @classmethod
    def _templates(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        check_argv_template(value, UPLOAD_PLACEHOLDERS, UPLOAD_JOB_DERIVED, str(info.field_name), strict=False)
        return value


_MODEL = HubRepo(repo="{org}/{name}", type="model", expected=("config.json", "*.safetensors"))
# rl-standard-job-cleanup (the runbook): "model + metric CSVs only, no trace dataset"
_MODEL_METRICS = HubRepo(repo="{org}/{name}", type="model", expected=("config.json", "*.safetensors", "**/*.csv"))
_TRACES = HubRepo(repo="{org}/{name}-traces", type="dataset", expected=("**/*.parquet",))

# The cleanup skills the completion_cleanup rule hands off to (its action "cleanup:<skill>").
DEFAULT_FLAVORS: dict[str, Flavor] = {
    "rl-agentic-job-cleanup": Flavor(hub=(_MODEL, _TRACES), delete=("trace_jobs", "tasks", "exports")),
    "rl-standard-job-cleanup": Flavor(hub=(_MODEL_METRICS,), delete=("checkpoints", "exports")),
    "sft-job-cleanup": Flavor(hub=(_MODEL,), delete=("checkpoints", "exports")),
    "datagen-job-cleanup": Flavor(
        hub=(HubRepo(repo="{org}/{name}", type="dataset", expected=("**/*.parquet",)),),
        delete=("chunks", "tasks"),
        all_chunks=True,
    ),
    "eval-agentic-cleanup": Flavor(hub=(_TRACES,), delete=("trace_jobs",)),
}


class CleanupSection(StrictModel):
    """sweep.yaml ``cleanup:`` (spec §4 completion -> cleanup)."""

    hub_org: str = Field("", description="the HF org (or user) the uploads go to; set per deployment")
    artifact_dir: str = Field(
        "{root}/{name}", description="a job's dir under each artifact root: {root} {name} {job_id}"
    )
    verify_timeout_s: Positive = Field(600, description="how long verify waits for the detached rm to finish")
    verify_poll_s: Positive = 5
    flavors: dict[str, Flavor] = Field(DEFAULT_FLAVORS, description="flavors not named here keep their defaults")
    upload_retries: Annotated[int, Field(ge=0)] = Field(
        2, description="a failed upload is submitted again at most this often"
    )
    upload_log: NonEmpty = Field(
        "{artifact_dir}/upload-%j.out",
        description="the upload job's --output (templates as upload; %j = its job id): its traceback is read there",
    )
    upload_tail_bytes: Positive = Field(16384, description="bytes of a failed upload's log read for its traceback")
    register_retries: Annotated[int, Field(ge=0)] = Field(
        1, description="a DB registration that failed (its command answered non-zero) is run again at most this often"
    )
    register_timeout_s: Positive = Field(120, description="seconds one DB registration command may run")
    backlog_hub_asks: Annotated[int, Field(ge=0)] = Field(
        20,
        description="each sweep re-judges the blocked cleanups, oldest first, asking the hub at most this often; "
        "the rest wait for the next sweep (said in the run log)",
    )

    @field_validator("flavors", mode="after")
    @classmethod
    def _over_defaults(cls, value: dict[str, Flavor]) -> dict[str, Flavor]:
        return {**DEFAULT_FLAVORS, **value}


class TrackersSection(StrictModel):
    """sweep.yaml ``trackers:`` (the harvest of pending eval-grid rows; repo null = off)."""

    repo: str | None = Field(None, description="the LOCAL ground-truth clone; SWEEP_TRACKER_REPO overrides")
    globs: Tup[NonEmpty] = Field(("**/grid.md", "**/SCORES.md"), min_length=1, description="relative to repo")
    default_cluster: str = Field("", description="the cluster of a job id written without a `cluster:` prefix")
    commit: bool = True
    max_results_bytes: Positive = 4 * 1024 * 1024


MAX_APPROVAL_MINUTES = 720  # sweep_cancel's max_active_runs=1: later hand-offs wait behind an approval


class CancelConfig(StrictModel):
    """sweep.yaml ``cancel:`` (scancel of a flagged job after a human's approval)."""

    approval_timeout_minutes: float = Field(
        60.0,
        gt=0,
        le=MAX_APPROVAL_MINUTES,
        description="no answer by then = reject; at most 12 h: sweep_cancel runs one at a time, so a waiting "
        "approval holds every later hand-off",
    )
    confirm_timeout_s: Positive = Field(30, description="how long the scancel script waits for sacct to say CANCELLED")
    relaunch: RelaunchConfig = Field(RelaunchConfig(), description="Cancel and relaunch: which failures, how often")
    standing: Tup[StandingPermission] = Field((), description="acts that proceed without a human; default none")
    breaker: BreakerConfig = Field(BreakerConfig(), description="suspends standing acts when many jobs flag at once")


class ChainSeriesSpec(StrictModel):
    """One series of the HF-only SFT chain; argv templates take {cell} {hub_repo} {sft_job} {artifact_dir}."""

    name: NonEmpty
    cluster: NonEmpty
    match: str = Field("", description="regex over SFT job names; group `cell` names the cell ('' = series OFF)")
    hub_repo: str = Field("", description="template: {org} {cell} ('' = series OFF)")
    upload: Tup[str] = Field((), description="argv of the upload job (starts with sbatch; none = series OFF)")
    eval: Tup[str] = Field((), description="argv of the eval job (starts with sbatch; none = series OFF)")
    tracker: NonEmpty = Field(description="tracker markdown, relative to the tracker repo")
    db_registration: bool = Field(False, description="true: the series goes through sft-job-cleanup instead")
    repo_type: Literal["model", "dataset"] = "model"
    expected: Tup[NonEmpty] = Field(("config.json", "*.safetensors"), min_length=1)
    upload_name: NonEmpty = Field("hf_upload__{cell}", description="job name of the upload job")
    eval_name: NonEmpty = "eval-{cell}"
    eval_job_column: NonEmpty = "eval job"
    lookback_days: Positive = 30
    artifact_dir: str = Field("", description="template {cell} {sft_job}: the SFT output the upload reads")
    leg_retries: int = Field(
        2, ge=0, le=10, description="a failed upload or eval leg is resubmitted this often, then ESCALATED"
    )

    def unset(self) -> list[str]:
        """The fields left empty on purpose (the runbook names no value): the series stays OFF, said."""
        return [k for k in ("match", "hub_repo", "upload", "eval") if not getattr(self, k)]


class FoundSeriesSpec(StrictModel):
    """How the chain uploads an SFT completion whose launch YAML says ``enable_db_registration: false``
    and that no ``series`` names (spec §4: "any enable_db_registration: false series"): its cell is
    the job's name; it goes as far as the upload (leg 1). Its eval and tracker row are added by naming
    its series in ``series`` (match, eval, tracker), which then takes its cells over."""

    hub_repo: NonEmpty = Field("{org}/{cell}", description="template: {org} {cell} (the job's name)")
    upload: Tup[str] = Field(
        (), description="argv of the upload job (sft-cleanup-hf-only; starts with sbatch; none = said OFF, waits)"
    )
    upload_name: NonEmpty = Field("hf_upload__{cell}", description="job name of the upload job")
    repo_type: Literal["model", "dataset"] = "model"
    expected: Tup[NonEmpty] = Field(("config.json", "*.safetensors"), min_length=1)
    artifact_dir: str = Field("", description="template {cell} {sft_job}: the SFT output the upload reads")
    lookback_days: Positive = 30
    leg_retries: int = Field(2, ge=0, le=10, description="a failed upload is resubmitted this often, then ESCALATED")


class HfChainSection(StrictModel):
    """sweep.yaml ``hf_chain:``."""

    series: Tup[ChainSeriesSpec] = ()
    found: FoundSeriesSpec = Field(
        FoundSeriesSpec(),
        description="the upload of an enable_db_registration: false completion no series names (leg 1 only)",
    )

    @model_validator(mode="after")
    def _own_job_names(self) -> HfChainSection:
        """Two series on one cluster must not name their upload or eval jobs alike: the chain adopts
        a job by its name (never submits twice), so one series would adopt the other's jobs."""
        for field in ("upload_name", "eval_name"):
            seen: dict[tuple[str, str], str] = {}
            for s in self.series:
                key = (s.cluster, getattr(s, field))
                if key in seen:
                    raise ValueError(
                        f"series {seen[key]!r} and {s.name!r} on cluster {s.cluster!r} share {field} {key[1]!r}: "
                        f"one would adopt the other's jobs; give each its own (e.g. '{s.name}-{key[1]}', and the "
                        "same -J in its argv)"
                    )
                seen[key] = s.name
            for s in self.series:
                if "{cell}" not in getattr(s, field):
                    raise ValueError(f"series {s.name!r}: {field} {getattr(s, field)!r} has no {{cell}}")
        return self
