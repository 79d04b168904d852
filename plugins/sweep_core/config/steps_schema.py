"""The schema of the runbook's configurable command steps: ops.md ``eval_canary`` (the TACC eval
listener's canary: its traces on the hub and registered before the listener is relied on) and
sweep.yaml ``daytona:`` (the Daytona snapshot count against the org's HARD cap; at the cap the
STALE snapshots are offered for cleanup through approval, the cap is never raised). The DB
registration after an SFT upload is ``cleanup.flavors.<flavor>.db_register`` (handoffs_schema).

Each command is an argv (no shell), run over the cluster's SSH path with every value shlex-quoted;
its output is read by sweep_core.health.eval_canary / sweep_core.handoffs.snapshots.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from sweep_core.config.schema_base import Regex, StrictModel, Tup
from sweep_core.safe.names import check_argv_template

NonEmpty = Annotated[str, Field(min_length=1)]

CANARY_PLACEHOLDERS = ("run",)
SNAPSHOT_PLACEHOLDERS = ("snapshot",)


class EvalCanary(StrictModel):
    """ops.md ``eval_canary``: the check that the eval listener's canary run has its traces on the
    hub and registered in the DB (runbook: sanity-check it before relying on the listener)."""

    run: str = Field("", description="the canary run (eval job name) whose traces must be on the hub + registered")
    argv: Tup[NonEmpty] = Field(
        (),
        description="read-only check run on the login node in the gather's session (template `{run}`); prints ONE "
        'JSON object `{"run", "hub": true|false, "registered": true|false, "detail"?}`; () = OFF, said',
    )

    @field_validator("argv")
    @classmethod
    def _templates(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        check_argv_template(value, CANARY_PLACEHOLDERS, (), "argv", strict=False)  # {run} is config
        return value

    def unset(self) -> list[str]:
        """The fields left empty on purpose (the runbook names no value): the canary stays OFF, said."""
        return [k for k in ("run", "argv") if not getattr(self, k)]


class DaytonaSection(StrictModel):
    """sweep.yaml ``daytona:``: the org's snapshot count against its HARD cap, read every sweep on
    one cluster's login node; at the cap its STALE snapshots are offered for deletion through a
    human's approval (never the cap raised)."""

    cluster: str = Field("", description="the SLURM cluster whose login node runs the Daytona CLI ('' = OFF, said)")
    list_command: Tup[NonEmpty] = Field(
        (),
        description="argv that lists the org's snapshots as JSON (Daytona's Snapshot fields: name, state, "
        "createdAt, lastUsedAt; a list or `{items: [...]}`), e.g. `[daytona, snapshot, list, --format, json]`; "
        "() = OFF, said",
    )
    delete_command: Tup[NonEmpty] = Field(
        (),
        description="argv that deletes ONE snapshot, `{snapshot}` its own element, run only after a human "
        "approved that snapshot, e.g. `[daytona, snapshot, delete, '{snapshot}']`; () = listed, never cleaned",
    )
    cap: int | None = Field(None, gt=0, description="the org's HARD snapshot cap (never raised); null = OFF, said")
    stale_days: int = Field(14, gt=0, description="a snapshot not used (else not created) for this long is STALE")
    keep: Tup[Regex] = Field((), description="regexes of snapshot names never offered for cleanup")
    max_offer: int = Field(20, gt=0, description="at most this many STALE snapshots offered per sweep, oldest first")

    @field_validator("delete_command")
    @classmethod
    def _delete(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        check_argv_template(value, SNAPSHOT_PLACEHOLDERS, SNAPSHOT_PLACEHOLDERS, "delete_command", strict=False)
        if value and "{snapshot}" not in value:
            raise ValueError("delete_command must hold '{snapshot}' as its own element (one snapshot per command)")
        return value

    def unset(self) -> list[str]:
        """The fields a sweep needs before it reads the count (delete_command is offered separately)."""
        missing = [k for k in ("cluster", "list_command") if not getattr(self, k)]
        return missing + (["cap"] if self.cap is None else [])
