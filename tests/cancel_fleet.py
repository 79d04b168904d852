"""Flagged jobs for sweep_cancel's pure tests (the brakes, fresh judgement, the breaker alert): a
fleet of silent RL jobs on clusters ``a`` and ``b``, their evidence, and a standing permission."""

from __future__ import annotations

import datetime as dt

from sweep_core.config.handoffs_schema import CancelConfig
from sweep_core.handoffs.cancel.fresh import Evidence
from sweep_core.handoffs.cancel.plan import CancelDecision, CancelRequest

NOW = dt.datetime(2026, 12, 4, 12, 0, tzinfo=dt.UTC)
T = int(NOW.timestamp())


def cancel_cfg(**kw) -> CancelConfig:
    return CancelConfig.model_validate(kw)


def stale_flag(cluster: str, job_id: str, name: str) -> str:
    return f"[liveness_stale] CRITICAL {cluster} RL {job_id} {name}: no output for 185 min → kill-approval"


def wedged_decision(cluster: str, job_id: str, name: str) -> CancelDecision:
    req = CancelRequest(cluster, job_id, name, "kill-approval", stale_flag(cluster, job_id, name), rule="liveness_stale",
                        severity="critical")  # the sweep's record, as authority.authorize sets it  # fmt: skip
    return CancelDecision(
        req, "cancel", state="RUNNING", elapsed="5:00:00", nodes="2", nodelist="gpu[1-2]", by_hand=False
    )  # the sweep's own request


def silent_evidence(
    job_id: str, name: str, *, silent: int = 7800, step: int | None = 500, size: int = 4000
) -> Evidence:
    return Evidence(job_id, name, T, "RUNNING", "1", "0", "gpu[1-2]", T - silent, step,
                    f"Training Step Progress: {step}/1000\n", size=size, log_path=f"/logs/{name}.out")  # fmt: skip


STANDING = {"action": "relaunch", "rule": "liveness_stale", "clusters": ["a", "b"], "name": "rl__.*",
            "min_silent_hours": 2, "max_per_run": 500, "max_per_day": 500}  # fmt: skip


def fleet(per_cluster: int) -> tuple[list[CancelDecision], dict]:
    decisions, evidence = [], {}
    for cluster in ("a", "b"):
        for i in range(per_cluster):
            job_id, name = f"{100 + i}", f"rl__{cluster}{i}"
            decisions.append(wedged_decision(cluster, job_id, name))
            evidence[(cluster, job_id)] = silent_evidence(job_id, name)
    return decisions, evidence
