"""The schema of the ops.md front matter (include/ops/<cluster>/ops.md): every key, its type, its
default and its meaning (docs/configuration.md's field table is generated from these descriptions). The
loader and the checks that need the file's place live in sweep_core.config.ops.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, GetJsonSchemaHandler, TypeAdapter, field_validator, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from sweep_core.config.relaunch_schema import RelaunchCommand
from sweep_core.config.schema_base import BucketName, CrossFieldErrors, StrictModel, Tup
from sweep_core.config.steps_schema import EvalCanary
from sweep_core.safe.names import UPLOAD_JOB_DERIVED, UPLOAD_PLACEHOLDERS, check_argv_template

NonEmpty = Annotated[str, Field(min_length=1)]


class LoginNode(StrictModel):
    """One login node, tried in ops.md order; a bare string is the host (and the name)."""

    name: NonEmpty = Field(description="what the report calls it; defaults to the host")
    host: NonEmpty = Field(description="hostname or address")
    port: int = Field(22, gt=0, lt=65536, description="sshd port")
    connection_id: str = Field("", description="overrides the cluster's connection (own host key, own user)")

    @model_validator(mode="before")
    @classmethod
    def _host_only(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"name": data, "host": data}
        if isinstance(data, dict) and not data.get("name") and isinstance(data.get("host"), str):
            return {**data, "name": data["host"]}
        return data

    @classmethod
    def __get_pydantic_json_schema__(cls, core: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """For editors: a bare host string, or the mapping (its ``name`` optional: the host)."""
        ref = handler(core)
        mapping = handler.resolve_ref_schema(ref)
        obj = {**mapping, "required": ["host"]}
        mapping.clear()
        mapping["anyOf"] = [{"type": "string", "minLength": 1, "description": "the host (and the name)"}, obj]
        return ref


class QuotaConfig(StrictModel):
    """The binding storage constraint of a cluster and how the sweep reads it."""

    kind: Literal["inodes", "bytes", "none"] = Field("none", description="inodes (file count) or bytes")
    command: str = Field("", description="e.g. `jutil project dataquota -p <project>`, `lfs quota -u <user> /scratch`")
    dormant: bool = Field(False, description="not checked (e.g. the cluster is down)")
    soft_limit: int | None = Field(None, gt=0, description="where the command prints none (df -i): at/over -> red")
    warn_fraction: float = Field(0.9, gt=0, le=1, description="NEAR from this fraction of the soft limit")


def _date(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    if value is None or isinstance(value, dt.date):
        return value
    raise ValueError(f"must be a date YYYY-MM-DD, got {value!r}")


class UploadCommand(StrictModel):
    """ops.md ``upload_commands``: this cluster's upload job for one cleanup flavor (e.g. through its
    upload tunnel), instead of (or where sweep.yaml names none) the flavor's ``upload``."""

    flavor: Annotated[str, Field(min_length=1)] = Field(description="a cleanup flavor, e.g. sft-job-cleanup")
    argv: Tup[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1, description="starts with sbatch; templates as cleanup.flavors.*.upload"
    )

    @field_validator("argv")
    @classmethod
    def _templates(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        check_argv_template(value, UPLOAD_PLACEHOLDERS, UPLOAD_JOB_DERIVED, "argv", strict=False)
        return value


class OpsCommon(StrictModel):
    """The keys every cluster's front matter may carry, whatever its scheduler."""

    name: str | None = Field(None, description="the cluster; must equal its directory name (optional)")
    scheduler: Literal["slurm", "iris"] = Field(description="`slurm` or `iris`")
    status: Literal["active", "skipped", "dropped"] = Field(
        description="`active`, `skipped` (with `skip_until`), or `dropped` (never contacted)"
    )
    skip_until: Annotated[dt.date | None, BeforeValidator(_date)] = Field(
        None, description="`YYYY-MM-DD`: a skipped cluster is swept again from this date by itself"
    )
    user: str = Field("", description="the account whose jobs are swept (`squeue -u`, `sacct -u`; iris `/<user>/`)")
    rl_concurrency_cap: int | None = Field(None, ge=0, description="standing constraint: RL jobs at once, reported")
    gpu_mem_ceiling: float | None = Field(
        None, gt=0, le=1, description="standing constraint: GPU memory fraction; a probed GPU above it is flagged"
    )
    quota: QuotaConfig = Field(
        QuotaConfig(),
        description="`{kind: inodes|bytes|none, command, dormant, soft_limit, warn_fraction}`: the binding "
        "constraint, the command the sweep runs (jutil / cindata / lfs quota / df -i), a soft limit where "
        "the command prints none",
    )
    cadence_minutes: dict[BucketName, Annotated[int, Field(gt=0)]] = Field(
        {}, description="per-bucket overrides of the stale thresholds in sweep.yaml"
    )
    relaunch_commands: Tup[RelaunchCommand] = Field(
        (),
        description="`{match, argv}`: relaunch by scancel (iris: `iris job stop`) + this argv instead of "
        "`scontrol requeue` (templates `{job_id}` `{name}` `{array_job}` `{task}`, `{exclude}`: the bad nodes "
        "found, iris `{controller}`); the only relaunch of an iris job; the new id in its output is linked "
        "in the ledger",
    )

    @model_validator(mode="after")
    def _consistent(self) -> OpsCommon:
        errors = self._problems()
        if errors:
            raise CrossFieldErrors(errors)
        return self

    def _problems(self) -> list[tuple[str, str]]:
        """``(key, message)`` for each cross-field rule broken; a scheduler's model adds its own."""
        if self.status == "skipped" and self.skip_until is None:
            return [("skip_until", "is required when status is skipped")]
        return []


_SLURM_SIZE = r"^\d{1,9}(\.\d{1,6})?[KMGTP]$"


class WholeNode(StrictModel):
    """What one node of a partition really has, where Slurm's accounting does not say it."""

    gpus: int = Field(ge=0, le=64, description="GPUs of one node (0: a CPU-only partition)")
    memory: str = Field(
        "",
        pattern=rf"{_SLURM_SIZE}|^$",
        description='one node\'s memory as a Slurm size (`120G`); "" = not documented: memory % is ? with the reason',
    )


class _SlurmKeys(StrictModel):
    """The keys only a Slurm cluster reads (its login nodes, its POSIX trees, its batch jobs)."""

    connection_id: str = Field("", description="the Airflow SSH Connection for this cluster (slurm: required)")
    login_nodes: Tup[LoginNode] = Field(
        (), description="ordered list of `{name, host, port?, connection_id?}`; tried in order (slurm: at least one)"
    )
    log_roots: Tup[NonEmpty] = Field((), description="where the job logs live")
    artifact_roots: Tup[NonEmpty] = Field((), description="where artifacts live; they bound every later delete")
    log_pattern: str = Field(
        "", description="absolute sbatch `-o` pattern (`%j %x %A %a %u`) that finds a finished job's log"
    )
    gpu_probe: Literal["srun-overlap", "accounting", "none"] = Field(
        "none",
        description="slurm: how the report sweep's gather and the RL deep-dive read GPU utilisation of RUNNING "
        "RL/SFT/Eval jobs: `srun-overlap` (`srun --jobid --overlap nvidia-smi` in the gather's session; never on "
        "the 5-minute watch), `accounting` (ONE `sstat` for the candidates: the gres/gpuutil and gres/gpumem the "
        "site's accounting records; the watch too), `none`",
    )
    ray_log_dir: str = Field(
        "",
        description="slurm: the dir where the job's `ray start --temp-dir` puts its Ray worker logs (`%j %x %u`; "
        "relative = below its log's dir, e.g. `ray-%j/session_latest/logs`), listed once at depth 1 by the RL "
        "deep-dive for hang lines; \"\" = off: Ray's default is each node's `/tmp/ray`, unreadable from the login node",
    )
    metric_streams: Tup[NonEmpty] = Field(
        (),
        description="slurm: dirs of the RL/SFT jobs' metric streams (`%j %x %u %A %a`; relative = below its log's "
        "dir, e.g. `tb/%x`), each listed at depth 1 per sweep: `events.out.tfevents.*`, `metrics.csv`, `*.jsonl`, "
        "`trainer_state.json` (or the newest `checkpoint-N/`'s), read from a cursor; () = console only",
    )
    faulthandler_signal: Literal["", "USR1", "USR2"] = Field(
        "",
        description="slurm: the signal the job launcher registers with `faulthandler.register` in every python "
        "process: the RL deep-dive sends it to a silent job's python processes that catch it and quotes their "
        'stacks (ptrace blocked: no py-spy); "" = off: unregistered, SIGUSR1 terminates the process',
    )
    whole_nodes: dict[str, WholeNode] = Field(
        {},
        description="slurm, where GPUs are not a gres and RealMemory is misreported (TACC: whole-node allocation): "
        "per partition `{gpus, memory}` of one node; an ended job's GPU-hours = gpus × NNodes × Elapsed and its "
        "memory % against memory × NNodes (never ReqMem); a partition not named: ? with the reason. {} = "
        "accounting's AllocTRES gres/gpu and ReqMem are trusted",
    )
    gpu_probe_max: int = Field(
        20, ge=0, description="slurm: GPU probes per report sweep at most (the suspects first; the watch: none)"
    )
    gpu_probe_timeout_s: int = Field(20, gt=0, description="slurm: seconds one GPU probe may take (then unknown)")
    repo_path: str = Field("", description="the cluster's clone (tree hygiene: `git status`, read-only)")
    local_clone: str = Field(
        "",
        description="slurm: the LOCAL clone (on the Airflow worker) of the repo at `repo_path`: the hygiene hand-off "
        "commits the cluster's triaged files there (never pushed, never on the cluster), then offers a fast-forward "
        '`git pull` on the cluster through approval; "" = hygiene OFF (the tree is reported only)',
    )
    login_python: str = Field(
        "python3",
        description="slurm: the login nodes' python3, which reads every log of a sweep in ONE process; "
        '`""` = none there: a batched shell path runs (the cluster\'s note says so)',
    )
    eval_results_dir: str = Field(
        "",
        description="where an eval job writes `results_*.json` (`%j` = job id), for the tracker harvest; an agentic "
        "(Harbor) eval's job `result.json` is read under `<this dir>/<the row's run tag>/`",
    )
    upload_commands: Tup[UploadCommand] = Field(
        (), description="`{flavor, argv}`: this cluster's upload job for a cleanup flavor (overrides sweep.yaml's)"
    )
    eval_canary: EvalCanary | None = Field(
        None,
        description="`{run, argv}`: the eval listener's canary check (traces on the hub + registered), run in the "
        "gather's session; null = no listener canaried here; a field left empty = OFF, said",
    )


class _IrisKeys(StrictModel):
    """The keys only an iris cluster reads (its controller, its client, its pod count)."""

    controller_url: str = Field("", description="iris: the controller's URL for the client poll (tunnel/port-forward)")
    iris_cluster: str = Field("", description="iris: the CLI's `--cluster=` (needed if no controller_url)")
    iris_python: str = Field("", description="iris: a python that imports the iris client")
    iris_binary: str = Field("", description="iris: the iris CLI, the fallback of iris_python")
    iris_home: str = Field("", description="iris: HOME for the client (its config and credentials)")
    iris_timeout_s: int = Field(60, gt=0, description="iris: seconds one controller poll may take")
    iris_log_bytes: int = Field(
        262144,
        gt=0,
        description="iris: bytes of a waiting job's log since the window start (newest kept) read for metrics "
        "(RUNNING jobs, and jobs that ended in the window, are read on from their cursor)",
    )
    kubeconfig: str = Field(
        "", description="iris: the kubeconfig FILE of the pod count, named explicitly (`~` = the worker's HOME)"
    )
    kube_context: str = Field(
        "",
        description='iris: its context; `""` = that file\'s current-context, read from it and named (never the '
        "process default kubeconfig)",
    )
    kube_namespace: str = Field("iris", description="iris: the namespace of the job pods")
    kube_conn_id: str = Field(
        "",
        description="iris: the pod count's cluster as an Airflow `kubernetes` Connection (its extra: `kube_config` "
        "inline, `cluster_context`), instead of kubeconfig + kube_context (never both)",
    )
    rollout_url: str = Field(
        "",
        description="iris: where a job's rollout/trace files are reachable (an ObjectStoragePath URL: s3://, gs://, "
        'file://; `{name}` `{job_id}`), read by the RL deep-dive (depth-1 listing); "" = rollouts unknown',
    )
    gpu_exec: bool = Field(
        False,
        description="iris: the RL deep-dive reads GPU utilisation by `nvidia-smi` exec'd in each Running pod of the "
        "job (KubernetesHook; needs RBAC `create` on `pods/exec`, else unknown with the 403's reason); false = "
        "GPU utilisation unknown, said so",
    )


class SlurmOps(_SlurmKeys, OpsCommon):
    """The front matter of a ``scheduler: slurm`` cluster (an iris key is an unknown key here)."""

    scheduler: Literal["slurm"] = Field(description="`slurm` or `iris`")

    def _problems(self) -> list[tuple[str, str]]:
        errors = super()._problems()
        if self.log_pattern and not self.log_pattern.startswith("/"):
            errors.append(("log_pattern", f"must be an absolute path pattern, got {self.log_pattern!r}"))
        if self.status != "dropped":
            errors += [
                (k, "is required for a slurm cluster") for k in ("connection_id", "user") if not getattr(self, k)
            ]
            if not self.login_nodes:
                errors.append(("login_nodes", "needs at least one login node for a slurm cluster"))
        return errors


class IrisOps(_IrisKeys, OpsCommon):
    """The front matter of a ``scheduler: iris`` cluster (a Slurm key is an unknown key here)."""

    scheduler: Literal["iris"] = Field(description="`slurm` or `iris`")

    def _problems(self) -> list[tuple[str, str]]:
        """Malformed iris fields; the ones a user fills in (controller, client) are checked per
        cluster at gather time (sweep_core.iris.setup): unset there is UNCONFIGURED, not an error."""
        errors = super()._problems()
        if self.status == "dropped":
            return errors
        if not self.user:
            errors.append(("user", "is required for an iris cluster (jobs are /<user>/<name>)"))
        if self.kube_conn_id and (self.kubeconfig or self.kube_context):
            both = " and ".join(k for k in ("kubeconfig", "kube_context") if getattr(self, k))
            errors.append(
                (
                    "kube_conn_id",
                    f"kube_conn_id and {both} are set together: the pods' cluster comes from ONE place, "
                    "the Connection (kube_config + cluster_context in its extra) or the file (kubeconfig + kube_context)",
                )
            )
        elif self.kube_context and not self.kubeconfig:
            errors.append(
                ("kube_context", "needs kubeconfig (the file it is a context of): never the process default kubeconfig")
            )
        return errors


# What validates an ops.md front matter: the model its ``scheduler`` names.
FrontMatter = Annotated[SlurmOps | IrisOps, Field(discriminator="scheduler")]
FRONT_MATTER: TypeAdapter[SlurmOps | IrisOps] = TypeAdapter(FrontMatter)

# The keys only one scheduler reads, by scheduler.
SCHEDULER_KEYS: dict[str, frozenset[str]] = {
    "slurm": frozenset(_SlurmKeys.model_fields),
    "iris": frozenset(_IrisKeys.model_fields),
}


def scheduler_of(key: str) -> str:
    """The scheduler a front-matter key belongs to: ``slurm``, ``iris``, or ``both``."""
    return next((s for s, keys in SCHEDULER_KEYS.items() if key in keys), "both")


class OpsFrontMatter(_IrisKeys, _SlurmKeys, OpsCommon):
    """Every key of either scheduler, as the sweep reads a cluster (the other scheduler's keys at
    their defaults). Not a validator: an ops.md is validated by ``FRONT_MATTER``."""
