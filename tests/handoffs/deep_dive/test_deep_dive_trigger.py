"""The sweep hands every rl_new_untested job (action deep-dive) of a trusted, current-window
cluster to sweep_rl_deep_dive, as {cluster, job_id, name}; the DAG's trigger task is named."""

from __future__ import annotations

import datetime as dt

from sweep_core.handoffs.dispatch.triggers import Handoff, plan_handoffs, with_work
from sweep_core.records.models import ClusterSnapshot, ClusterStatus, Job
from sweep_core.records.vocab import Action, Bucket, Severity
from sweep_core.rules.context import job_flag

NOW = dt.datetime(2026, 12, 3, 18, 50, tzinfo=dt.UTC)


def _snap(cluster: str, status: ClusterStatus, window_end: dt.datetime) -> ClusterSnapshot:
    job = Job(cluster, "68", "rl__a2_debug", "RUNNING", "squeue", bucket=Bucket.RL)
    return ClusterSnapshot(
        cluster,
        "slurm",
        status,
        running=[job],
        finished=[],
        remote_now=NOW.timestamp(),
        window_end=window_end.isoformat(),
    )


def _deep(*snaps: ClusterSnapshot) -> dict | None:
    flags = [
        job_flag("rl_new_untested", Severity.WARN, s.running[0], "untested setting (debug)", Action.DEEP_DIVE)  # type: ignore[index]
        for s in snaps
    ]
    flags.append(job_flag("rl_new_untested", Severity.INFO, snaps[0].running[0], "deep-dive on record"))  # type: ignore[index]
    return plan_handoffs(list(snaps), flags, dry_run=True, run_log="x.md", trackers=False, hf_chain=False)[
        Handoff.DEEP_DIVE.value
    ]


def test_every_deep_dive_flag_on_a_trusted_current_cluster_is_handed_off() -> None:
    conf = _deep(
        _snap("leo", ClusterStatus.OK, NOW),
        _snap("jup", ClusterStatus.UNREACHABLE, NOW),
        _snap("old", ClusterStatus.OK, NOW - dt.timedelta(hours=2)),
    )
    assert conf == {
        "dry_run": True,
        "run_log": "x.md",
        "jobs": [{"cluster": "leo", "job_id": "68", "name": "rl__a2_debug"}],
    }
    assert _deep(_snap("jup", ClusterStatus.UNREACHABLE, NOW)) is None
    assert Handoff.DEEP_DIVE in with_work({"deep_dive": conf})


def test_the_sweep_dag_names_the_trigger_of_the_deep_dive() -> None:
    from sweep_operators.task_ids import HANDOFF_TRIGGERS, DagId, branch_choice

    assert (
        HANDOFF_TRIGGERS[Handoff.DEEP_DIVE]
        == ("trigger_deep_dive", DagId.DEEP_DIVE)
        == (
            "trigger_deep_dive",
            "sweep_rl_deep_dive",
        )
    )
    assert branch_choice([Handoff.DEEP_DIVE]) == ["trigger_deep_dive"]
